"""Strata's streaming source end to end: readStream.format("strata") / readStream.table(...) with Trigger.AvailableNow.

A Strata table streamed into another Strata table run after run from one checkpoint (appends flow, OPTIMIZE flows
nothing, a DELETE stops the stream until skipChangeCommits); delta-spark's streaming source reading a Strata table
and Strata's source reading a table delta-spark's sink wrote (the delta-spark peer, one application for the module);
a partition column in the middle of the schema in an America/Los_Angeles session, with startingTimestamp in that
zone; options refused when the query starts.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from delta_spark_peer import Peer
from table_reads import strata_json
from test_streaming_sink import commits, query_id, table_version



def strata_rows(spark: SparkSession, table: Path) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.read.format("strata").load(str(table)).collect())


def added_files(table: Path, version: int) -> int:
    return sum(1 for a in commits(table)[version] if "add" in a)


def operation(table: Path, version: int) -> str:
    return str(next(a["commitInfo"]["operation"] for a in commits(table)[version] if "commitInfo" in a))


def stream_a_to_b(spark: SparkSession, a: Path, b: Path, checkpoint: Path, **options: str) -> StreamingQuery:
    """One Trigger.AvailableNow run of the Strata stream of `a` into the Strata table `b`."""
    q = (spark.readStream.format("strata").options(**options).load(str(a))
         .writeStream.format("strata").option("checkpointLocation", str(checkpoint))
         .trigger(availableNow=True).start(str(b)))
    q.awaitTermination()
    return q


def batches(q: StreamingQuery) -> list[dict[str, Any]]:
    """The progress of each micro-batch this run executed."""
    return [p for p in q.recentProgress if p["numInputRows"] > 0 or p["sources"][0]["endOffset"] != p["sources"][0][
        "startOffset"]]


def assert_one_txn_per_batch(b: Path, checkpoint: Path) -> None:
    app_id = query_id(checkpoint)
    for v, actions in enumerate(commits(b)):
        assert [(a["txn"]["appId"], a["txn"]["version"]) for a in actions if "txn" in a] == [(app_id, v)], v


def test_strata_to_strata_appends_optimize_delete_skip(spark: SparkSession, tmp_path: Path) -> None:
    a, b, cp = tmp_path / "a", tmp_path / "b", tmp_path / "cp"

    def append(first: int, end: int, files: int, p: str = "cast(id % 3 AS STRING)") -> None:
        (spark.range(first, end, 1, files).selectExpr("id", "concat('v', id) AS s", f"{p} AS p")
         .write.format("strata").partitionBy("p").mode("append").save(str(a)))

    append(0, 10, 1)
    append(10, 20, 2)
    stream_a_to_b(spark, a, b, cp)
    assert strata_rows(spark, b) == strata_rows(spark, a) and len(strata_rows(spark, b)) == 20
    # Two more commits, one with three files of a new partition: they flow next run (two files per micro-batch).
    append(20, 29, 3, p="'new'")
    append(30, 35, 1)
    new_files = added_files(a, 2) + added_files(a, 3)
    assert added_files(a, 2) == 3
    before = table_version(b)
    q = stream_a_to_b(spark, a, b, cp, maxFilesPerTrigger="2")
    assert strata_rows(spark, b) == strata_rows(spark, a) and len(strata_rows(spark, b)) == 34
    ran = batches(q)
    assert [int(p["sources"][0]["metrics"]["numFiles"]) for p in ran] == [2] * (new_files // 2) + [1] * (new_files % 2)
    assert sum(p["numInputRows"] for p in ran) == 14
    assert table_version(b) == before + len(ran)
    assert_one_txn_per_batch(b, cp)
    # OPTIMIZE on A (one commit per partition): dataChange=false commits stream nothing.
    spark.sql(f"CALL strata.system.optimize(table => '{a}')").collect()
    optimized = table_version(a)
    assert optimized > 4 and {operation(a, v) for v in range(4, optimized + 1)} == {"OPTIMIZE"}
    b_rows, b_version = strata_rows(spark, b), table_version(b)
    q = stream_a_to_b(spark, a, b, cp)
    assert sum(p["numInputRows"] for p in q.recentProgress) == 0
    assert strata_rows(spark, b) == b_rows
    # (The run may still commit an empty micro-batch to B: its offset moved past the OPTIMIZE commits.)
    assert all("add" not in action for c in commits(b)[b_version + 1:] for action in c)
    # DELETE on A stops the stream, naming the version and the way out; B unchanged.
    spark.sql(f"DELETE FROM strata.`{a}` WHERE id = 3")
    deleted = optimized + 1
    assert operation(a, deleted) == "DELETE"
    b_version = table_version(b)
    with pytest.raises(Exception) as failed:
        stream_a_to_b(spark, a, b, cp)
    message = str(failed.value)
    assert f"Version {deleted} of strata.`{a}`" in message and "removed or rewrote rows (DELETE)" in message, message
    assert "skipChangeCommits=true" in message, message
    assert table_version(b) == b_version and strata_rows(spark, b) == b_rows
    # The same query with skipChangeCommits: the DELETE is skipped whole (id 3 stays in B), later appends flow.
    append(40, 43, 1)
    q = stream_a_to_b(spark, a, b, cp, skipChangeCommits="true")
    got = strata_rows(spark, b)
    assert got == sorted(strata_rows(spark, a) + [(3, "v3", "0")]) and len(got) == 37
    (last,) = batches(q)
    assert last["numInputRows"] == 3
    metrics = last["sources"][0]["metrics"]
    assert metrics["numChangeCommitsSkipped"] == "1", metrics
    assert metrics["numFiles"] == str(added_files(a, deleted + 1)), metrics
    assert metrics["tableVersion"] == metrics["latestTableVersion"] == str(deleted + 1), metrics
    assert_one_txn_per_batch(b, cp)


def test_delta_spark_streams_a_strata_table(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    a, d, cp = tmp_path / "a", tmp_path / "d", tmp_path / "cp"
    for first in (0, 10, 20):
        (spark.range(first, first + 10, 1, 2).selectExpr("id", "concat('v', id) AS s", "CAST(id % 2 AS STRING) AS p")
         .write.format("strata").partitionBy("p").mode("append").save(str(a)))
    source = {"format": "delta", "path": a}
    sink = {"format": "delta", "path": d}
    batches_run, rows = peer.stream(source, sink, cp)
    assert batches_run == [30] and rows == strata_json(spark, a) and len(rows) == 30
    # One more Strata commit: the same delta-spark query (checkpoint) takes only its rows.
    spark.range(30, 35).selectExpr("id", "concat('v', id) AS s", "'new' AS p").coalesce(1) \
        .write.format("strata").mode("append").save(str(a))
    batches_run, rows = peer.stream(source, sink, cp)
    assert batches_run == [5] and rows == strata_json(spark, a) and len(rows) == 35


def write_json_inputs(input_dir: Path, files: int, rows_per_file: int) -> None:
    """JSON files with mtimes in file order: a file source with maxFilesPerTrigger=1 reads file i in batch i."""
    input_dir.mkdir(parents=True)
    for i in range(files):
        path = input_dir / f"{i:02d}.json"
        path.write_text("".join(json.dumps({"id": i * 100 + j, "d": f"2024-0{i + 1}-1{j}", "s": f"f{i}"}) + "\n"
                                for j in range(rows_per_file)))
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))


def test_strata_streams_a_table_delta_spark_streamed(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    inputs, d = tmp_path / "in", tmp_path / "d"
    write_json_inputs(inputs, 3, 4)
    source = {"format": "json", "path": inputs, "schema": "id long, d date, s string",
              "options": {"maxFilesPerTrigger": "1"}}
    batches_run, peer_rows = peer.stream(source, {"format": "delta", "path": d}, tmp_path / "peer-cp")
    assert batches_run == [4, 4, 4] and table_version(d) == 2
    # Strata's source into a Strata table: every row of D.
    t = tmp_path / "t"
    stream_a_to_b(spark, d, t, tmp_path / "cp")
    assert strata_json(spark, t) == peer_rows and len(peer_rows) == 12
    # From version 1: the rows of the batches delta-spark committed as versions 1 and 2 only.
    q = (spark.readStream.format("strata").option("startingVersion", 1).load(str(d))
         .writeStream.format("memory").queryName("from_delta_v1").trigger(availableNow=True).start())
    q.awaitTermination()
    got = sorted(spark.table("from_delta_v1").toJSON().collect())
    first = sorted(spark.read.format("strata").option("versionAsOf", 0).load(str(d)).toJSON().collect())
    assert {json.loads(r)["s"] for r in first} == {"f0"}
    assert got == sorted(set(peer_rows) - set(first)) and len(got) == 8


LA = "America/Los_Angeles"


@pytest.fixture
def los_angeles(spark: SparkSession) -> Iterator[None]:
    spark.conf.set("spark.sql.session.timeZone", LA)
    try:
        yield
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


def memory_stream(df: DataFrame, name: str) -> DataFrame:
    """df (a streaming DataFrame) run to the end into the memory table `name`."""
    df.writeStream.format("memory").queryName(name).trigger(availableNow=True).start().awaitTermination()
    return df.sparkSession.table(name)


def test_partition_column_mid_schema_in_los_angeles(spark: SparkSession, los_angeles: None) -> None:
    """A timestamp partition column between data columns (the source reorders the files' columns), written and read in
    a Los Angeles session, DST days included; startingTimestamp in that zone picks the version committed then."""
    name = "strata.stream_src.la_events"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.stream_src")
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(f"CREATE TABLE {name} (id BIGINT, ts TIMESTAMP, s STRING) USING strata PARTITIONED BY (ts)")
    spark.sql(f"INSERT INTO {name} VALUES (1, TIMESTAMP'2024-03-10 01:30:00', 'a'), "
              "(2, TIMESTAMP'2024-03-10 03:30:00', 'b')")                        # around the spring-forward gap
    spark.sql(f"INSERT INTO {name} VALUES (3, TIMESTAMP'2024-11-03 01:30:00', 'c'), (4, NULL, 'd')")  # fall back
    spark.sql(f"INSERT INTO {name} VALUES (5, TIMESTAMP'1969-12-31 16:00:00.123456', 'e')")
    expected = [  # id, the instant in microseconds since the epoch, the time as LA shows it
        (1, 1710063000000000, "2024-03-10T01:30:00.000-08:00"),
        (2, 1710066600000000, "2024-03-10T03:30:00.000-07:00"),
        (3, 1730622600000000, "2024-11-03T01:30:00.000-07:00"),  # the first of the two 01:30s
        (4, None, None),
        (5, 123456, "1969-12-31T16:00:00.123-08:00")]

    def check(df: DataFrame, ids: list[int]) -> None:
        assert df.columns == ["id", "ts", "s"]
        got = sorted((r[0], r[1], json.loads(r[2]).get("ts"))
                     for r in df.selectExpr("id", "unix_micros(ts)", "to_json(struct(ts))").collect())
        assert got == [e for e in expected if e[0] in ids]

    batch = spark.table(name)
    check(batch, [1, 2, 3, 4, 5])
    streamed = memory_stream(spark.readStream.table(name), "la_all")
    check(streamed, [1, 2, 3, 4, 5])
    assert sorted(streamed.toJSON().collect()) == sorted(batch.toJSON().collect())
    # The commit time of version 2, as a local time in Los Angeles: the stream starts there (rows 3, 4 and 5).
    history = spark.sql(f"CALL strata.system.history('{name}')")
    local = {r[0]: r[1] for r in history.selectExpr("version", "date_format(timestamp, 'yyyy-MM-dd HH:mm:ss.SSS')")
             .collect()}
    assert sorted(local) == [0, 1, 2, 3] and local[1] < local[2]
    from_ts = memory_stream(spark.readStream.option("startingTimestamp", local[2]).table(name), "la_from_ts")
    check(from_ts, [3, 4, 5])
    spark.sql(f"DROP TABLE {name}")


def start_error(df: DataFrame, checkpoint: Path) -> str:
    """The error that stops the query when it starts."""
    with pytest.raises(Exception) as failed:
        (df.writeStream.format("noop").option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
         .start().awaitTermination())
    return str(failed.value)


def test_bad_options_and_schema_refused_when_the_query_starts(spark: SparkSession, tmp_path: Path) -> None:
    a = tmp_path / "a"
    spark.range(3).selectExpr("id", "CAST(id AS STRING) AS s").write.format("strata").save(str(a))
    spark.range(3, 5).selectExpr("id", "CAST(id AS STRING) AS s").write.format("strata").mode("append").save(str(a))

    def error(n: int, **options: str) -> str:
        return start_error(spark.readStream.format("strata").options(**options).load(str(a)), tmp_path / f"cp{n}")

    message = error(0, maxFilesPerTriger="1")
    assert "Unknown option 'maxFilesPerTriger'. Did you mean 'maxFilesPerTrigger'?" in message, message
    message = error(1, startingVersion="0", startingTimestamp="2024-01-01 00:00:00")
    assert "Options startingVersion and startingTimestamp cannot be used together" in message, message
    message = error(2, startingVersion="2")
    assert f"Option startingVersion is 2 but the latest version of strata.`{a}` is 1" in message, message
    message = error(3, ignoreChanges="true")
    assert "Option 'ignoreChanges' is not supported" in message and "skipChangeCommits=true" in message, message
    message = start_error(spark.readStream.schema("id long, s string, x int").format("strata").load(str(a)),
                          tmp_path / "cp4")
    assert "was given schema struct<id:bigint,s:string,x:int>, but the table's is struct<id:bigint,s:string>" \
        in message, message
    assert table_version(a) == 1
