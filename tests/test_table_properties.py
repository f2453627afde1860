"""Table properties in the ``delta.`` namespace, as delta-spark treats them (CREATE / CTAS / ALTER TABLE, both catalogs).

Protocol properties (``delta.minReaderVersion``, ``delta.minWriterVersion``, ``delta.feature.<name>``) upgrade the
protocol in the same commit and are not stored; unknown keys and features Strata cannot write are refused by name,
and nothing is committed then. The protocol is checked in ``_delta_log`` itself and by delta-rs.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession

import strata


def log_actions(path: Path, version: int) -> list[dict[str, Any]]:
    text = (path / "_delta_log" / f"{version:020d}.json").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def protocol_of(path: Path, version: int) -> dict[str, Any] | None:
    found = [a["protocol"] for a in log_actions(path, version) if "protocol" in a]
    return found[0] if found else None


def configuration_of(path: Path, version: int) -> dict[str, str]:
    return next(a["metaData"]["configuration"] for a in log_actions(path, version) if "metaData" in a)


def versions(path: Path) -> list[int]:
    return sorted(int(p.name.split(".")[0]) for p in (path / "_delta_log").glob("*.json"))


def location(spark: SparkSession, table: str) -> Path:
    row = spark.sql(f"DESCRIBE TABLE EXTENDED {table}").where("col_name = 'Location'").collect()[0]
    return Path(str(row[1]).removeprefix("file:"))


@pytest.fixture(params=["strata", "session"])
def table(request: pytest.FixtureRequest, spark: SparkSession) -> Iterator[str]:
    """A table name, not yet created, in the strata catalog or in the session catalog (``USING strata``)."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.props")
    name = "strata.props.t" if request.param == "strata" else "default.props_t"
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    yield name
    spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_create_with_protocol_versions_writes_the_protocol_not_the_properties(spark: SparkSession, table: str) -> None:
    spark.sql(f"CREATE TABLE {table} (id BIGINT) USING strata TBLPROPERTIES ('delta.minReaderVersion'='3', "
              "'delta.minWriterVersion'='7', 'delta.appendOnly'='false', 'team'='ops')")
    path = location(spark, table)
    protocol = protocol_of(path, 0)
    assert protocol is not None
    assert (protocol["minReaderVersion"], protocol["minWriterVersion"]) == (3, 7)
    assert protocol["readerFeatures"] == [] and sorted(protocol["writerFeatures"]) == ["appendOnly", "invariants"]
    assert configuration_of(path, 0) == {"delta.appendOnly": "false", "team": "ops"}
    dt = DeltaTable(str(path))
    assert (dt.protocol().min_reader_version, dt.protocol().min_writer_version) == (3, 7)
    assert "delta.minReaderVersion" not in dt.metadata().configuration
    spark.sql(f"INSERT INTO {table} VALUES (1), (2)")
    assert sorted(r.id for r in spark.table(table).collect()) == [1, 2]
    assert DeltaTable(str(path)).to_pyarrow_table()["id"].to_pylist() in ([1, 2], [2, 1])


def test_alter_upgrades_in_the_metadata_commit_and_never_downgrades(spark: SparkSession, table: str) -> None:
    spark.sql(f"CREATE TABLE {table} (id BIGINT) USING strata")
    path = location(spark, table)
    assert protocol_of(path, 0) == {"minReaderVersion": 1, "minWriterVersion": 2}
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('delta.feature.checkConstraints'='supported', "
              "'delta.checkpointInterval'='5')")
    assert versions(path) == [0, 1]
    assert protocol_of(path, 1) == {"minReaderVersion": 1, "minWriterVersion": 7,
                                    "writerFeatures": ["appendOnly", "checkConstraints", "invariants"]}
    assert configuration_of(path, 1) == {"delta.checkpointInterval": "5"}
    # Asking for less than the table has: stored nowhere, no protocol action (delta-spark ignores it the same way).
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('delta.minWriterVersion'='2')")
    assert protocol_of(path, 2) is None
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('delta.minReaderVersion'='3')")
    assert (protocol_of(path, 3) or {}).get("minReaderVersion") == 3
    assert DeltaTable(str(path)).protocol().min_reader_version == 3
    assert "delta.minReaderVersion" not in configuration_of(path, 3)


@pytest.mark.parametrize(("props", "message"), [
    ("'delta.fooBar'='1'", r"Unknown table property 'delta.fooBar'"),
    ("'delta.checkpointIntervl'='5'", r"Did you mean 'delta.checkpointInterval'\?"),
    ("'delta.enableIcebergCompatV1'='true'", r"delta.enableIcebergCompatV1='true' .* needs Iceberg compatibility"),
    ("'delta.enableRowTracking'='true'", r"delta.enableRowTracking='true' .* row tracking"),
    ("'delta.enableTypeWidening'='maybe'", r"delta.enableTypeWidening .* invalid value 'maybe': it must be true or false"),
    ("'delta.universalFormat.enabledFormats'='iceberg'", r"delta.universalFormat.enabledFormats='iceberg' .* UniForm"),
    ("'delta.feature.rowTracking'='supported'", r"table feature rowTracking, which Strata cannot write"),
    ("'delta.feature.rowTracking'='supported'", r"table feature rowTracking, which Strata cannot write"),
    ("'delta.minWriterVersion'='8'", r"delta.minWriterVersion .* invalid value '8'"),
    ("'delta.appendOnly'='yes'", r"delta.appendOnly .* invalid value 'yes': it must be true or false"),
    ("'delta.logRetentionDuration'='1 month'", r"delta.logRetentionDuration .* invalid value '1 month'"),
])
def test_refused_properties_on_create_and_alter(spark: SparkSession, table: str, props: str, message: str) -> None:
    with pytest.raises(strata.StrataError, match=message):
        with strata.errors.translate():
            spark.sql(f"CREATE TABLE {table} (id BIGINT) USING strata TBLPROPERTIES ({props})")
    assert not spark.catalog.tableExists(table)
    spark.sql(f"CREATE TABLE {table} (id BIGINT) USING strata")
    path = location(spark, table)
    with pytest.raises(strata.StrataError, match=message):
        with strata.errors.translate():
            spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ({props})")
    assert versions(path) == [0], "nothing was committed"


def test_ctas_applies_the_same_rules(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "ctas"
    spark.sql(f"CREATE TABLE strata.`{path}` USING strata TBLPROPERTIES ('delta.feature.appendOnly'='supported', "
              "'delta.appendOnly'='true') AS SELECT id FROM range(3)")
    assert protocol_of(path, 0) == {"minReaderVersion": 1, "minWriterVersion": 7,
                                    "writerFeatures": ["appendOnly", "invariants"]}
    assert configuration_of(path, 0) == {"delta.appendOnly": "true"}
    bad = tmp_path / "bad"
    with pytest.raises(strata.StrataError, match=r"Unknown table property 'delta.apendOnly'"):
        with strata.errors.translate():
            spark.sql(f"CREATE TABLE strata.`{bad}` USING strata TBLPROPERTIES ('delta.apendOnly'='true') "
                      "AS SELECT id FROM range(3)")
    assert not (bad / "_delta_log").exists() or versions(bad) == []


def test_unset_of_a_protocol_property_is_refused(spark: SparkSession, table: str) -> None:
    spark.sql(f"CREATE TABLE {table} (id BIGINT) USING strata TBLPROPERTIES ('delta.minWriterVersion'='3')")
    assert protocol_of(location(spark, table), 0) == {"minReaderVersion": 1, "minWriterVersion": 3}
    with pytest.raises(strata.StrataError, match=r"Cannot unset delta.minWriterVersion"):
        with strata.errors.translate():
            spark.sql(f"ALTER TABLE {table} UNSET TBLPROPERTIES ('delta.minWriterVersion')")


def test_tables_of_others_with_unknown_delta_keys_stay_readable_and_writable(spark: SparkSession,
                                                                             tmp_path: Path) -> None:
    path = tmp_path / "foreign"
    spark.createDataFrame([(1,)], "id long").write.format("strata").save(str(path))
    # Another writer's metadata commit, with a key this Strata does not know.
    meta = next(a["metaData"] for a in log_actions(path, 0) if "metaData" in a)
    meta["configuration"] = {"delta.someFutureKey": "x"}
    (path / "_delta_log" / f"{1:020d}.json").write_text(
        json.dumps({"commitInfo": {"timestamp": 1, "operation": "SET TBLPROPERTIES"}}) + "\n"
        + json.dumps({"metaData": meta}) + "\n", encoding="utf-8")
    strata.write(spark.createDataFrame([(2,)], "id long"), path)
    assert sorted(r.id for r in spark.read.format("strata").load(str(path)).collect()) == [1, 2]
    assert configuration_of(path, 1) == {"delta.someFutureKey": "x"}
