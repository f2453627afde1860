"""CALL strata.system.vacuum against delta-spark 4.4.0 (one peer application for the module) and delta-rs.

Strata's dry run lists the same files as delta-spark's `VACUUM ... DRY RUN` on the same table state; after either
engine vacuums a table the other wrote (with deletion vectors), all three readers see the same rows; a version whose
files are gone is refused with an error naming the file. Partition values with characters that directory names
escape (a timestamp partition in an America/Los_Angeles session: `:` becomes `%3A`, encoded again in the log's URI
paths) must not make vacuum mistake a live file for an unreferenced one.
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder
from pyspark.sql import SparkSession

import strata
from delta_spark_peer import Peer
from table_reads import strata_json

ZONE = "America/Los_Angeles"
UNCHECKED = {"spark.strata.vacuum.retentionCheck.enabled": "false", "spark.strata.vacuum.orphanMinAgeHours": "0"}
# delta-spark's VACUUM lists with spark.sql.sources.parallelPartitionDiscovery.parallelism tasks (10,000 by default: minutes
# on 2 cores for a tiny table)
PEER_SETUP = ["SET spark.databricks.delta.retentionDurationCheck.enabled = false",
              "SET spark.sql.sources.parallelPartitionDiscovery.parallelism = 2"]


@pytest.fixture
def session(spark: SparkSession) -> Iterator[SparkSession]:
    """The shared session in America/Los_Angeles with the retention check and the orphan minimum age off."""
    spark.conf.set("spark.sql.session.timeZone", ZONE)
    for k, v in UNCHECKED.items():
        spark.conf.set(k, v)
    try:
        yield spark
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
        for k in UNCHECKED:
            spark.conf.unset(k)


def local(path: str) -> str:
    """A path as a plain local path (file:/x, file:///x and /x alike), without a trailing slash. Both engines print
    paths as Hadoop does (`Path.toString`: not URI-encoded, a directory named `ts=01%3A30` stays so)."""
    return (path[len("file://"):] if path.startswith("file:///") else path[len("file:"):] if path.startswith(
        "file:") else path).rstrip("/")


def vacuum(spark: SparkSession, path: Path, args: str = "") -> set[tuple[str, str]]:
    rows = spark.sql(f"CALL strata.system.vacuum(table => '{path}'{args})").collect()
    return {(local(r.path), r.kind) for r in rows}


def deltalake_ids(path: Path) -> list[int]:
    reader = QueryBuilder().register("t", DeltaTable(str(path))).execute("SELECT id FROM t")
    return sorted(pa.table(reader.read_all()).column("id").to_pylist())


def ids(rows: list[str]) -> list[int]:
    return sorted(json.loads(r)["id"] for r in rows)


def files_below(path: Path) -> set[str]:
    return {str(p) for p in path.rglob("*") if p.is_file() and "_delta_log" not in p.parts and p.suffix != ".crc"}


def age(path: Path, hours: float) -> None:
    """Every file and directory below `path` (not the log) `hours` old."""
    then = time.time() - hours * 3600
    for p in path.rglob("*"):
        if "_delta_log" not in p.parts:
            os.utime(p, (then, then))


def test_dry_run_lists_what_delta_spark_lists_and_every_reader_agrees_after(session: SparkSession, peer: Peer,
                                                                            tmp_path: Path) -> None:
    spark, path = session, tmp_path / "t"
    spark.sql(f"CREATE TABLE strata.`{path}` (id BIGINT, ts TIMESTAMP, p STRING) USING strata "
              "PARTITIONED BY (ts, p) TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    spark.sql(f"INSERT INTO strata.`{path}` SELECT id, TIMESTAMP'2024-03-10 01:30:00' + make_interval(0, 0, 0, 0, "
              "CAST(id % 2 AS INT)), IF(id < 10, 'a', 'b') FROM range(0, 20)")
    spark.sql(f"DELETE FROM strata.`{path}` WHERE id = 3")  # a vector
    spark.sql(f"DELETE FROM strata.`{path}` WHERE id = 5")  # the same file's vector replaced
    spark.sql(f"INSERT INTO strata.`{path}` SELECT 100, TIMESTAMP'2024-11-03 01:30:00', 'c'")
    spark.sql(f"DELETE FROM strata.`{path}` WHERE p = 'b'")  # whole files removed
    orphan = path / "p=orphan" / "part-00000-leftover.c000.snappy.parquet"
    orphan.parent.mkdir()
    orphan.write_bytes(b"not committed")
    (path / "empty-dir").mkdir()
    (path / "_tmp").mkdir()
    (path / "_tmp" / "hidden.parquet").write_bytes(b"x")
    age(path, 2)
    before = strata_json(spark, path)

    mine = vacuum(spark, path, ", retention_hours => 0, dry_run => true")
    peer.call("sql", statements=PEER_SETUP, time_zone=ZONE)
    theirs = peer.call("query", sql=f"VACUUM delta.`{path}` RETAIN 0 HOURS DRY RUN", time_zone=ZONE)["rows"]
    assert {p for p, _ in mine} == {local(json.loads(r)["path"]) for r in theirs}
    kinds = {k for _, k in mine}
    assert {"data", "deletion_vector", "directory"} <= kinds, mine
    assert str(orphan) in {p for p, _ in mine} and str(path / "_tmp" / "hidden.parquet") not in {p for p, _ in mine}

    listed = files_below(path)
    assert vacuum(spark, path, ", retention_hours => 0") == mine
    assert files_below(path) == listed - {p for p, k in mine if k != "directory"}
    after = strata_json(spark, path)
    assert after == before and 100 in ids(after) and 3 not in ids(after)
    assert peer.read(path, time_zone=ZONE) == [after]
    assert deltalake_ids(path) == ids(after)

    # the version before the first DELETE read a vector file and data files that are gone now
    with pytest.raises(strata.StrataError, match=r"Version 1 of .* can no longer be read: its file .* does not exist"):
        with strata.errors.translate():
            spark.read.format("strata").option("versionAsOf", 1).load(str(path)).collect()
    with pytest.raises(strata.StrataError, match=r"can no longer be read.*most likely by VACUUM"):
        with strata.errors.translate():
            spark.sql(f"SELECT * FROM strata.`{path}` VERSION AS OF 4").collect()


def test_each_engine_vacuums_a_table_the_other_wrote(session: SparkSession, peer: Peer, tmp_path: Path) -> None:
    spark, mine, theirs = session, tmp_path / "strata", tmp_path / "delta"
    spark.sql(f"CREATE TABLE strata.`{mine}` (id BIGINT, p STRING) USING strata PARTITIONED BY (p) "
              "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    spark.sql(f"INSERT INTO strata.`{mine}` SELECT id, IF(id % 2 = 0, 'even', 'odd') FROM range(0, 30)")
    spark.sql(f"DELETE FROM strata.`{mine}` WHERE id IN (4, 7)")
    spark.sql(f"UPDATE strata.`{mine}` SET id = id + 1000 WHERE id = 9")
    spark.sql(f"DELETE FROM strata.`{mine}` WHERE id = 10")
    before = strata_json(spark, mine)
    peer.call("sql", time_zone=ZONE, statements=PEER_SETUP + [
        f"VACUUM delta.`{mine}` RETAIN 0 HOURS",
        f"CREATE TABLE delta.`{theirs}` (id BIGINT, p STRING) USING delta PARTITIONED BY (p) "
        "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",
        f"INSERT INTO delta.`{theirs}` SELECT id, IF(id % 2 = 0, 'even', 'odd') FROM range(0, 30)",
        f"DELETE FROM delta.`{theirs}` WHERE id IN (4, 7)",
        f"UPDATE delta.`{theirs}` SET id = id + 1000 WHERE id = 9",
        f"DELETE FROM delta.`{theirs}` WHERE id = 10",
        f"INSERT OVERWRITE delta.`{theirs}` SELECT * FROM delta.`{theirs}` WHERE p = 'odd' OR id < 20",
    ])
    # delta-spark vacuumed the Strata table: Strata reads the same rows, and finds nothing left to delete
    assert strata_json(spark, mine) == before
    ops = [r.operation for r in spark.sql(f"CALL strata.system.history('{mine}', 2)").collect()]
    assert ops == ["VACUUM END", "VACUUM START"]
    assert vacuum(spark, mine, ", retention_hours => 0, dry_run => true") == set()

    # Strata vacuums the delta-spark table: vectors and rewritten files go, every reader agrees
    their_rows = strata_json(spark, theirs)
    gone = vacuum(spark, theirs, ", retention_hours => 0")
    assert {k for _, k in gone} == {"data", "deletion_vector"}, gone
    assert all(not Path(p).exists() for p, _ in gone)
    assert strata_json(spark, theirs) == their_rows
    assert peer.read(theirs, time_zone=ZONE) == [their_rows]
    assert deltalake_ids(theirs) == ids(their_rows)


def test_bad_input_and_the_retention_check(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "t"
    spark.range(3).write.format("strata").save(str(path))
    spark.range(5).write.format("strata").mode("overwrite").save(str(path))
    with pytest.raises(strata.StrataError, match=r"retention of 0 hours.*168 hours.*retentionCheck\.enabled=false"):
        with strata.errors.translate():
            spark.sql(f"CALL strata.system.vacuum('{path}', 0)").collect()
    with pytest.raises(Exception, match=r"argument retention_hours is -2\.0"):
        spark.sql(f"CALL strata.system.vacuum(table => '{path}', retention_hours => -2)").collect()
    assert spark.sql(f"CALL strata.system.vacuum('{path}', 168, true)").collect() == []
    assert len(list((path / "_delta_log").glob("*.json"))) == 2, "dry runs and refusals commit nothing"
