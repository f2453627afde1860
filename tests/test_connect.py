"""The documented user flow on Spark Connect sessions (tests/connect_script.py, each in its own process: a classic
and a Connect session do not mix in one Python process, and the pytest process holds a classic one)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent / "connect_script.py"


def test_connect_dependencies_are_installed() -> None:
    """pyspark[connect]'s extras are pinned in python/requirements-dev.txt; without them nothing below can run."""
    from pyspark.sql.connect.utils import check_dependencies

    check_dependencies("strata tests")


@pytest.mark.parametrize("mode", ["local", "server"])
def test_user_flow_on_spark_connect(tmp_path: Path, mode: str) -> None:
    env = dict(os.environ, TZ="UTC", PYSPARK_PYTHON=sys.executable)
    env.pop("SPARK_REMOTE", None)
    env.pop("SPARK_TESTING", None)
    proc = subprocess.run([sys.executable, str(SCRIPT), mode, str(tmp_path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-6000:]
    [line] = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    out = json.loads(line[len("RESULT "):])

    assert out["session"] == "pyspark.sql.connect.session.SparkSession"
    # create (v0), append (v1), dynamic overwrite of DE (v2), replaceWhere FR (v3), a repeat of app version 7 (none)
    assert out["v0"] == [[1, "FR"], [2, "DE"]] == out["read_api_v0"]
    assert out["v1"] == [[1, "FR"], [2, "DE"], [3, "FR"]] == out["at_between"]
    assert out["v2"] == [[1, "FR"], [3, "FR"], [20, "DE"]]
    assert out["latest"] == [[20, "DE"], [30, "FR"]] == out["after_errors"]
    log = tmp_path / "sales" / "_delta_log"
    assert sorted(p.name for p in log.glob("*.json")) == [f"{v:020d}.json" for v in range(5)]  # v4: the restore
    first = [json.loads(ln) for ln in (log / f"{0:020d}.json").read_text().splitlines()]
    assert [a["commitInfo"]["userMetadata"] for a in first if "commitInfo" in a] == ["initial load"]
    assert {"metaData"} <= {k for a in first for k in a}
    assert all(p.name.startswith("country=") for p in (tmp_path / "sales").iterdir() if p.name != "_delta_log")

    # The Table API's maintenance calls are SQL CALLs: no py4j.
    assert out["version"] == 3
    assert out["history"] == [[3, "WRITE"], [2, "WRITE"]]
    assert out["detail"][0] == 3 and out["detail"][2] == ["country"]
    # v3 holds one file per country; optimize has nothing to compact there (one-file partitions), so no commit.
    assert out["optimize"] == [0, 0, 0]
    assert out["vacuum_dry_run"] == [0]  # nothing is older than the 7-day retention
    assert out["restore"] == [4, 1, [[1, "FR"], [2, "DE"], [3, "FR"]]]
    assert out["checkpoint"] == 4 and out["cleanup_log"] == 0
    assert out["validation_error"] == {
        "type": "InvalidOptionError", "jvm_class": None, "condition": None, "sql_state": None,  # checked in Python
        "spark_condition": None, "spark_sql_state": None,
        "message": "replace_where must be used with mode 'overwrite' only; got \"mode 'append'\""}
    assert out["schema_error"]["type"] == "SchemaMismatchError"
    assert out["schema_error"]["message"].startswith("The data does not match the schema of ")
    assert out["schema_error"]["jvm_class"] == "io.strata.log.InvalidTableOperationException"
    assert out["constraint_error"]["type"] == "ConstraintViolationError"
    assert out["constraint_error"]["message"] == "Written rows must match replaceWhere 'country = 'FR''; a row does not."
    assert out["raw_option_error"]["type"] == "InvalidOptionError"
    assert out["raw_option_error"]["message"].startswith("Unknown option 'compresion'. Did you mean 'compression'?")
    assert out["missing_table_error"]["type"] == "TableNotFoundError"
    assert out["missing_table_error"]["jvm_class"] == "io.strata.log.TableNotFoundException"
    assert out["exists_error"]["type"] == "TableExistsError"
    assert out["check_error"]["type"] == "ConstraintViolationError"
    assert out["check_error"]["message"] == "CHECK constraint pos (id > 0) violated by row with values: id = -1"
    # Every one carries its condition and SQLSTATE; for the driver-side ones, Strata's exception is the error Spark
    # Connect sends, so the client's own exception (the cause) has them too. Row checks in tasks are only typed.
    conditions = {"schema_error": ("STRATA_SCHEMA_MISMATCH", "42K09", True),
                  "raw_option_error": ("STRATA_UNKNOWN_OPTION", "42616", True),
                  "missing_table_error": ("STRATA_TABLE_NOT_FOUND", "42P01", True),
                  "exists_error": ("STRATA_TABLE_ALREADY_EXISTS", "42P07", True),
                  "constraint_error": ("STRATA_REPLACE_WHERE_MISMATCH", "44000", False),
                  "check_error": ("STRATA_CHECK_CONSTRAINT_VIOLATION", "23001", False)}
    for key, (condition, sql_state, sent) in conditions.items():
        assert (out[key]["condition"], out[key]["sql_state"]) == (condition, sql_state), (key, out[key])
        if sent:
            assert (out[key]["spark_condition"], out[key]["spark_sql_state"]) == (condition, sql_state), (key, out[key])

    assert out["catalog_columns"] == ["id", "day"] and out["catalog_location_exists"]
