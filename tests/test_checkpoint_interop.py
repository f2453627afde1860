"""Checkpoints at scale (issue 23): multi-part checkpoints and typed statistics (stats_parsed /
partitionValues_parsed), written by Strata and read by delta-spark and delta-rs, and written by delta-spark and read
by Strata (with data skipping on the typed statistics)."""
from __future__ import annotations

import datetime
import decimal
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from pyspark.sql import DataFrame, SparkSession

from delta_spark_peer import Peer
from table_reads import delta_rs_tuples, session_time_zone, strata_json, strata_tuples

ZONE = "America/Los_Angeles"
SCHEMA = "id long, ts timestamp, amt decimal(12,3), s string, nested struct<x: int, y: string>, p date"
COLUMNS = ["id", "ts", "amt", "s", "nested", "p"]


@pytest.fixture
def la_session(spark: SparkSession) -> Iterator[SparkSession]:
    """The Strata session in a non-UTC zone (timestamps and their statistics must not move)."""
    try:
        with session_time_zone(spark, ZONE):
            yield spark
    finally:
        spark.conf.unset("spark.databricks.delta.checkpoint.partSize")


def batch(spark: SparkSession, k: int) -> DataFrame:
    rows = [(k * 10 + i, datetime.datetime(2024, 3, 10, 1 + i, 30, 0, 123000), decimal.Decimal(k * 10 + i) / 8,
             f"s{k}-{i}" if i else None, (i, f"y{k}"), datetime.date(2024, 1, 1 + k % 3)) for i in range(4)]
    return spark.createDataFrame(rows, SCHEMA).coalesce(1)


def checkpoint_parts(path: Path, version: int) -> list[Path]:
    return sorted((path / "_delta_log").glob(f"{version:020d}.checkpoint*.parquet"))


def drop_commits_up_to(path: Path, version: int) -> None:
    """Readers can only get versions <= `version` from its checkpoint now."""
    for v in range(version + 1):
        (path / "_delta_log" / f"{v:020d}.json").unlink()


def commit_stats(path: Path, last: int) -> dict[str, dict[str, Any]]:
    """Each live file's JSON statistics from the commits 0..last (appends only)."""
    out: dict[str, dict[str, Any]] = {}
    for v in range(last + 1):
        for line in (path / "_delta_log" / f"{v:020d}.json").read_text(encoding="utf-8").splitlines():
            action = json.loads(line)
            if "add" in action:
                out[action["add"]["path"]] = json.loads(action["add"]["stats"])
    return out


def readers_agree_after_checkpoint_5(spark: SparkSession, peer: Peer, path: Path,
                                     expected_stats: dict[str, dict[str, Any]]) -> None:
    """Version 6 appended after the checkpoint of version 5, the commits up to it dropped: delta-spark and delta-rs
    read the table from that checkpoint as Strata does (rows, delta-spark's data skipping, delta-rs's statistics)."""
    batch(spark, 5).write.format("strata").mode("append").save(str(path))  # version 6, after the checkpoint
    drop_commits_up_to(path, 5)

    spark.conf.set("spark.sql.session.timeZone", "UTC")
    expected = strata_json(spark, path)
    assert len(expected) == 24
    assert peer.read(path)[0] == expected
    # data skipping in delta-spark over the typed statistics gives the same rows
    assert peer.call("query", sql=f"SELECT * FROM delta.`{path}` WHERE id = 31")["rows"] == \
        sorted(spark.read.format("strata").load(str(path)).where("id = 31").toJSON().collect())
    flat = [c for c in COLUMNS if c != "nested"]
    assert delta_rs_tuples(path, flat) == strata_tuples(spark, path, flat)
    assert sorted((i, n) for i, n in delta_rs_tuples(path, ["id", "nested"])) == sorted(
        (r.id, r.nested.asDict()) for r in spark.read.format("strata").load(str(path)).collect())
    table = DeltaTable(str(path))
    assert table.version() == 6
    # delta-rs sees the statistics of the typed column as the JSON commits had them
    actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    by_path = {a["path"]: a for a in actions}
    for file, stats in expected_stats.items():
        assert by_path[file]["num_records"] == stats["numRecords"]
        assert by_path[file]["min.id"] == stats["minValues"]["id"]
        assert by_path[file]["max.id"] == stats["maxValues"]["id"]
        assert by_path[file]["null_count.s"] == stats["nullCount"]["s"]


def test_delta_spark_and_delta_rs_read_strata_multi_part_struct_stats_checkpoints(
        la_session: SparkSession, peer: Peer, tmp_path: Path) -> None:
    spark = la_session
    path = tmp_path / "t"
    t = f"strata.`{path}`"
    spark.sql(f"CREATE TABLE {t} ({SCHEMA}) USING strata PARTITIONED BY (p) TBLPROPERTIES ("
              "'delta.checkpointInterval' = '5', 'delta.checkpoint.writeStatsAsStruct' = 'true', "
              "'delta.checkpoint.writeStatsAsJson' = 'false')")
    spark.conf.set("spark.databricks.delta.checkpoint.partSize", "2")  # delta-spark's conf, honoured by Strata
    for k in range(5):
        batch(spark, k).write.format("strata").mode("append").save(str(path))
    parts = checkpoint_parts(path, 5)
    # 5 files + protocol + metadata = 7 actions, at most 2 a part
    assert [p.name for p in parts] == [f"{5:020d}.checkpoint.{i:010d}.{4:010d}.parquet" for i in range(1, 5)]
    hint = json.loads((path / "_delta_log" / "_last_checkpoint").read_text(encoding="utf-8"))
    assert hint["version"] == 5 and hint["parts"] == 4 and hint["size"] == 7 and hint["numOfAddFiles"] == 5
    adds = [r["add"] for p in parts for r in pq.read_table(p).to_pylist() if r["add"] is not None]
    assert len(adds) == 5 and all(a["stats"] is None and a["stats_parsed"] is not None for a in adds)
    assert {str(a["partitionValues_parsed"]["p"]) for a in adds} == {a["partitionValues"][0][1] for a in adds}
    expected_stats = commit_stats(path, 5)
    readers_agree_after_checkpoint_5(spark, peer, path, expected_stats)


def test_delta_spark_and_delta_rs_read_struct_stats_checkpoints_strata_wrote_with_spark_jobs(
        la_session: SparkSession, peer: Peer, tmp_path: Path) -> None:
    """writeStatsAsStruct on the distributed path: appends above the threshold (forced to 0) commit without the file
    state, and the due checkpoint's parts, written by Spark tasks, carry stats_parsed / partitionValues_parsed only
    (writeStatsAsJson = false): delta-spark skips files with them, delta-rs reads them as the commits' JSON."""
    spark = la_session
    path = tmp_path / "t"
    spark.sql(f"CREATE TABLE strata.`{path}` ({SCHEMA}) USING strata PARTITIONED BY (p) TBLPROPERTIES ("
              "'delta.checkpointInterval' = '5', 'delta.checkpoint.writeStatsAsStruct' = 'true', "
              "'delta.checkpoint.writeStatsAsJson' = 'false')")
    jvm: Any = spark.sparkContext._jvm
    built = jvm.io.strata.log.Snapshot.fileStatesBuilt()
    try:
        spark.conf.set("spark.strata.state.distributedThreshold.files", "0")
        spark.conf.set("spark.databricks.delta.checkpoint.partSize", "3")
        for k in range(5):
            batch(spark, k).write.format("strata").mode("append").save(str(path))
        jvm.io.strata.state.DistributedCheckpoint.awaitBackground()
    finally:
        spark.conf.unset("spark.strata.state.distributedThreshold.files")
    assert jvm.io.strata.log.Snapshot.fileStatesBuilt() == built, "the appends or the checkpoint built a file state"
    parts = checkpoint_parts(path, 5)
    assert len(parts) >= 2 and [p.name for p in parts] == \
        [f"{5:020d}.checkpoint.{i:010d}.{len(parts):010d}.parquet" for i in range(1, len(parts) + 1)]
    adds = [r["add"] for p in parts for r in pq.read_table(p).to_pylist() if r["add"] is not None]
    expected_stats = commit_stats(path, 5)
    assert len(adds) == 5 and all(a["stats"] is None and a["stats_parsed"] is not None for a in adds)
    assert {str(a["partitionValues_parsed"]["p"]) for a in adds} == {a["partitionValues"][0][1] for a in adds}
    for a in adds:
        stats, parsed = expected_stats[a["path"]], a["stats_parsed"]
        assert parsed["numRecords"] == stats["numRecords"] and parsed["nullCount"]["s"] == stats["nullCount"]["s"]
        assert (parsed["minValues"]["id"], parsed["maxValues"]["id"]) == \
            (stats["minValues"]["id"], stats["maxValues"]["id"])
    readers_agree_after_checkpoint_5(spark, peer, path, expected_stats)


def files_read(df: DataFrame) -> int:
    """The number of data files the scan of `df` read (FileSourceScanExec's numFiles), running it without AQE."""
    spark = df.sparkSession
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        qe = df._jdf.queryExecution()
        plan = qe.executedPlan()
        plan.executeCollect()
        leaves = plan.collectLeaves()
        total = 0
        for i in range(leaves.size()):
            metric = leaves.apply(i).metrics().get("numFiles")
            if metric.isDefined():
                total += int(metric.get().value())
        return total
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")


def delta_spark_rows(k: int) -> str:
    """Batch k as SQL VALUES: ids 10k..10k+3, timestamps on March 10+k (local), partition by k % 3."""
    return ", ".join(
        f"({k * 10 + i}, TIMESTAMP'2024-03-1{k} 0{1 + i}:30:00.123', {k * 10 + i}.125, "
        f"{'NULL' if i == 0 else repr(f's{k}-{i}')}, named_struct('x', {i}, 'y', 'y{k}'), DATE'2024-01-0{1 + k % 3}')"
        for i in range(4))


def test_strata_reads_delta_spark_struct_only_checkpoints_and_skips_files_with_them(
        spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    path = tmp_path / "d"
    t = f"delta.`{path}`"
    statements = [
        f"CREATE TABLE {t} (id BIGINT, ts TIMESTAMP, amt DECIMAL(12,3), s STRING, nested STRUCT<x: INT, y: STRING>, "
        "p DATE) USING delta PARTITIONED BY (p) TBLPROPERTIES ('delta.checkpointInterval' = '6', "
        "'delta.checkpoint.writeStatsAsStruct' = 'true', 'delta.checkpoint.writeStatsAsJson' = 'false')",
        "SET spark.databricks.delta.checkpoint.partSize = 3",
        *(f"INSERT INTO {t} SELECT /*+ COALESCE(1) */ * FROM VALUES {delta_spark_rows(k)} AS v(id, ts, amt, s, nested, p)"
          for k in range(6)),
        "RESET spark.databricks.delta.checkpoint.partSize",
    ]
    peer.call("sql", statements=statements, time_zone=ZONE)
    parts = checkpoint_parts(path, 6)
    hint = json.loads((path / "_delta_log" / "_last_checkpoint").read_text(encoding="utf-8"))
    assert len(parts) > 1 and hint["parts"] == len(parts), (parts, hint)  # 6 files and more, 3 actions a part
    adds = [r["add"] for p in parts for r in pq.read_table(p).to_pylist() if r.get("add") is not None]
    assert len(adds) == 6 and all(a.get("stats") is None for a in adds) and all(a["stats_parsed"] for a in adds)
    # delta-spark's rows, read before its commits go (its cached log would still name them)
    expected = {zone: peer.read(path, time_zone=zone)[0] for zone in ("UTC", ZONE)}
    drop_commits_up_to(path, 6)

    for zone in ("UTC", ZONE):
        spark.conf.set("spark.sql.session.timeZone", zone)
        try:
            assert strata_json(spark, path) == expected[zone]
            df = spark.read.format("strata").load(str(path))
            assert files_read(df) == 6
            # each filter matches rows of one file only; its statistics come from stats_parsed alone
            assert [r.id for r in df.where("id = 41").collect()] == [41]
            assert files_read(df.where("id = 41")) == 1
            assert files_read(df.where("amt > 50.2")) == 1
            assert files_read(df.where("s = 's3-2'")) == 1
            # the literal is read in the session zone, the bounds are instants: March 15 starts after file 4 ends
            assert files_read(df.where("ts >= TIMESTAMP'2024-03-15 00:00:00'")) == 1
            assert sorted(r.id for r in df.where("ts >= TIMESTAMP'2024-03-15 00:00:00'").collect()) == [50, 51, 52, 53]
        finally:
            spark.conf.set("spark.sql.session.timeZone", "UTC")


def test_delta_spark_and_delta_rs_read_a_checkpoint_strata_wrote_with_spark_jobs(
        spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    """Above the distributed-state threshold (forced to 0) appends commit without the file state and the due
    checkpoint is written by Spark tasks, one multi-part part each (state.DistributedCheckpoint)."""
    path = tmp_path / "t"
    spark.sql(f"CREATE TABLE strata.`{path}` (id long, s string, p date) USING strata PARTITIONED BY (p) "
              "TBLPROPERTIES ('delta.checkpointInterval' = '4')")

    def append(k: int) -> None:
        rows = [(k * 10 + i, f"s{k}-{i}" if i else None, datetime.date(2024, 1, 1 + (k + i) % 3)) for i in range(3)]
        spark.createDataFrame(rows, "id long, s string, p date").write.format("strata").mode("append").save(str(path))

    append(0)  # version 1
    # version 2: a replaceWhere (driver path, as every overwrite) leaves a tombstone for the checkpoint
    spark.createDataFrame([(99, "r", datetime.date(2024, 1, 1))], "id long, s string, p date").write \
        .format("strata").mode("overwrite").option("replaceWhere", "p = DATE'2024-01-01'").save(str(path))
    try:
        with session_time_zone(spark, ZONE):
            spark.conf.set("spark.strata.state.distributedThreshold.files", "0")
            spark.conf.set("spark.databricks.delta.checkpoint.partSize", "3")
            append(1)
            append(2)  # version 4: due, checkpointed by Spark jobs after the commit
            jvm: Any = spark.sparkContext._jvm
            jvm.io.strata.state.DistributedCheckpoint.awaitBackground()
    finally:
        spark.conf.unset("spark.strata.state.distributedThreshold.files")
        spark.conf.unset("spark.databricks.delta.checkpoint.partSize")
    parts = checkpoint_parts(path, 4)
    assert len(parts) >= 2 and [p.name for p in parts] == \
        [f"{4:020d}.checkpoint.{i:010d}.{len(parts):010d}.parquet" for i in range(1, len(parts) + 1)]
    hint = json.loads((path / "_delta_log" / "_last_checkpoint").read_text(encoding="utf-8"))
    rows = [r for p in parts for r in pq.read_table(p).to_pylist()]
    adds = [r["add"] for r in rows if r["add"] is not None]
    assert hint["version"] == 4 and hint["parts"] == len(parts) and hint["numOfAddFiles"] == len(adds)
    assert hint["size"] == len(rows) and any(r["remove"] is not None for r in rows)
    append(3)  # version 5, after the checkpoint
    drop_commits_up_to(path, 4)
    expected = strata_json(spark, path)
    assert len(expected) == 12
    assert peer.read(path)[0] == expected
    assert delta_rs_tuples(path, ["id", "s", "p"]) == strata_tuples(spark, path, ["id", "s", "p"])
    assert DeltaTable(str(path)).version() == 5
