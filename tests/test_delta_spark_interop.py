"""Tables Strata writes are read by delta-spark, and tables delta-spark writes are read by Strata.

delta-spark runs in the run's peer application (tests/delta_spark_peer.py; tests/peers/delta_spark_job.py's `interop`
scenarios) with its jars from Maven Central (fetched by `make peer-jars` into build/peers).
"""
from __future__ import annotations

import datetime
import decimal
import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import strata
from delta_spark_peer import Peer
from table_reads import strata_json

def run_delta_spark(peer: Peer, mode: str, path: Path) -> dict[str, Any]:
    """One of the peer's `interop` scenarios on the table at `path`."""
    return peer.call("interop", mode=mode, path=str(path))


def test_delta_spark_reads_what_strata_wrote(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    path = tmp_path / "strata_table"
    rows = [
        (i, ["a/b", "k=v", "100%", "with space", "ünï ✓", None, "", "x:y"][i % 8],
         datetime.date(2023, 12, 1 + i % 28), datetime.datetime(2023, 12, 1, i % 24, 5, 7, 250000),
         decimal.Decimal(i) / 4, i % 3 == 0)
        for i in range(48)
    ]
    schema = "id long, p string, d date, ts timestamp, amt decimal(12,3), flag boolean"
    spark.createDataFrame(rows, schema).write.format("strata").partitionBy("p").save(str(path))
    for k in range(11):  # version 10 gets a checkpoint
        spark.createDataFrame(rows[k:k + 2], schema).write.format("strata").mode("append").save(str(path))
    spark.createDataFrame(rows[3:40], schema).write.format("strata").mode("overwrite").save(str(path))
    spark.createDataFrame(rows[0:5], schema).write.format("strata").mode("append").save(str(path))
    assert (path / "_delta_log" / "00000000000000000010.checkpoint.parquet").exists()

    theirs = run_delta_spark(peer, "read", path)
    assert theirs["version"] == 13
    assert theirs["rows"] == strata_json(spark, path, columns=theirs["columns"])
    assert len(theirs["rows"]) == 42


@pytest.fixture(scope="module")
def delta_written(peer: Peer, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    path = tmp_path_factory.mktemp("delta_spark") / "delta_table"
    return path, run_delta_spark(peer, "write", path)


def test_strata_reads_what_delta_spark_wrote(spark: SparkSession, delta_written: tuple[Path, dict[str, Any]]) -> None:
    path, theirs = delta_written
    assert (path / "_delta_log" / "00000000000000000010.checkpoint.parquet").exists()
    assert theirs["version"] == 13
    assert strata_json(spark, path, columns=theirs["columns"]) == theirs["rows"]
    assert len(theirs["rows"]) == 29


@pytest.mark.parametrize("version,expected", [(0, 40), (11, 40 + 3 * 11), (12, 25)])
def test_strata_time_travel_on_delta_spark_table(spark: SparkSession, delta_written: tuple[Path, dict[str, Any]],
                                                 version: int, expected: int) -> None:
    path, _ = delta_written
    df = spark.read.format("strata").option("versionAsOf", version).load(str(path))
    assert df.count() == expected


def test_check_constraints_hold_across_strata_and_delta_spark(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    """A constraint Strata declares is enforced by delta-spark, and one delta-spark adds is enforced by Strata."""
    path = tmp_path / "constrained"
    spark.sql(f"CREATE TABLE strata.`{path}` (id BIGINT, CONSTRAINT pos CHECK (id > 0)) USING strata")
    spark.sql(f"INSERT INTO strata.`{path}` VALUES (1), (2)")

    theirs = run_delta_spark(peer, "constraints", path)
    assert "pos" in theirs["violation_error"] and "id > 0" in theirs["violation_error"], theirs["violation_error"]
    assert sorted(json.loads(r)["id"] for r in theirs["rows"]) == [1, 2, 3]
    assert theirs["version"] == 3  # create, insert, delta-spark's append, delta-spark's ADD CONSTRAINT

    with pytest.raises(strata.ConstraintViolationError, match=r"^CHECK constraint small \(id < 100\) violated"):
        strata.write(spark.createDataFrame([(500,)], "id long"), path)
    with pytest.raises(strata.ConstraintViolationError, match=r"^CHECK constraint pos \(id > 0\) violated"):
        with strata.errors.translate():
            spark.sql(f"INSERT INTO strata.`{path}` VALUES (-7)")
    strata.write(spark.createDataFrame([(4,)], "id long"), path)
    assert sorted(r.id for r in spark.read.format("strata").load(str(path)).collect()) == [1, 2, 3, 4]


def test_delta_spark_reads_and_writes_a_table_created_at_protocol_3_7(spark: SparkSession, peer: Peer,
                                                                     tmp_path: Path) -> None:
    """TBLPROPERTIES ('delta.minReaderVersion'='3', 'delta.minWriterVersion'='7') gives a protocol delta-spark takes."""
    path = tmp_path / "features"
    spark.sql(f"CREATE TABLE strata.`{path}` (id BIGINT) USING strata "
              "TBLPROPERTIES ('delta.minReaderVersion'='3', 'delta.minWriterVersion'='7')")
    spark.sql(f"INSERT INTO strata.`{path}` VALUES (1), (2)")
    theirs = run_delta_spark(peer, "append_id", path)
    assert theirs["protocol"] == [3, 7]
    assert sorted(json.loads(r)["id"] for r in theirs["rows"]) == [1, 2, 100]
    spark.sql(f"INSERT INTO strata.`{path}` VALUES (3)")
    assert sorted(r.id for r in spark.read.format("strata").load(str(path)).collect()) == [1, 2, 3, 100]
