"""Exact partition values: the log holds the protocol's forms of the written values, whatever the session time zone.

Every test runs in sessions with spark.sql.session.timeZone UTC, America/New_York (DST) and Asia/Kolkata (+05:30),
except the comparison with delta-spark 4.4.0 (one peer application for the module) on zone-less timestamp values,
which runs in America/Los_Angeles.
"""
from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import strata
from delta_spark_peer import Peer, start_peer

peer = pytest.fixture(scope="module")(start_peer)
UTC = dt.timezone.utc
ZONES = ["UTC", "America/New_York", "Asia/Kolkata"]
# Both are 01:30 local time in New York on 2024-11-03 (EDT, then EST): a session-zone rendering cannot tell them apart.
FALL_BACK = [dt.datetime(2024, 11, 3, 5, 30, tzinfo=UTC), dt.datetime(2024, 11, 3, 6, 30, tzinfo=UTC)]

Row = tuple[Any, ...]


@pytest.fixture(params=ZONES)
def zone(request: pytest.FixtureRequest, spark: SparkSession) -> Iterator[str]:
    """Sets the session time zone for one test, restoring UTC afterwards."""
    name: str = request.param
    spark.conf.set("spark.sql.session.timeZone", name)
    try:
        yield name
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


@pytest.fixture
def table(spark: SparkSession, request: pytest.FixtureRequest) -> Iterator[str]:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.pv")
    name = "strata.pv.t_" + "".join(c if c.isalnum() else "_" for c in request.node.name)
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    yield name
    spark.sql(f"DROP TABLE IF EXISTS {name}")


def location(spark: SparkSession, table: str) -> str:
    row = spark.sql(f"DESCRIBE TABLE EXTENDED {table}").where("col_name = 'Location'").collect()[0]
    return str(row[1]).removeprefix("file:")


def live_partition_values(path: str) -> list[dict[str, str | None]]:
    """The partition values of the live files, straight from the log's JSON commits (no checkpoints here)."""
    live: dict[str, dict[str, str | None]] = {}
    for commit in sorted((Path(path) / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                live[action["add"]["path"]] = action["add"]["partitionValues"]
            elif "remove" in action:
                live.pop(action["remove"]["path"], None)
    return sorted(live.values(), key=lambda v: json.dumps(v, sort_keys=True))


def version(spark: SparkSession, table: str) -> int:
    return strata.Table.for_path(spark, location(spark, table)).version()


def sorted_rows(rows: list[Row]) -> list[Row]:
    """Rows in id order (the id comes first)."""
    return sorted(rows, key=lambda r: int(r[0]))


# Finding 4: overwrite(condition) must refuse rows the condition does not match, as replaceWhere does on V1.
def test_overwrite_by_filter_refuses_rows_outside_the_condition(spark: SparkSession, zone: str, table: str) -> None:
    spark.sql(f"CREATE TABLE {table} (id BIGINT, p STRING) USING strata PARTITIONED BY (p)")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'q'), (2, 'r')")
    before = version(spark, table)
    bad = spark.createDataFrame([(10, "q"), (11, "z")], "id long, p string")
    with pytest.raises(Exception, match=r"Written rows must match replaceWhere '\(p = 'q'\)'; a row does not: p = z"):
        bad.writeTo(table).overwrite(F.col("p") == "q")
    assert version(spark, table) == before
    assert sorted_rows([tuple(r) for r in spark.table(table).collect()]) == [(1, "q"), (2, "r")]
    # Rows that match are written and replace the partition.
    spark.createDataFrame([(10, "q")], "id long, p string").writeTo(table).overwrite(F.col("p") == "q")
    assert sorted_rows([tuple(r) for r in spark.table(table).collect()]) == [(2, "r"), (10, "q")]


PARTITIONED_DDL = ("(id BIGINT, d DATE, ts TIMESTAMP, ntz TIMESTAMP_NTZ, s STRING, i INT, amt DECIMAL(10,2), "
                   "b BOOLEAN) USING strata PARTITIONED BY (d, ts, ntz, s, i, amt, b)")
STATIC_SPEC = ("d = DATE'1969-07-20', ts = TIMESTAMP'2024-03-10 02:30:00.123456Z', "
               "ntz = TIMESTAMP_NTZ'2024-11-03 01:30:00', s = 'o\\'k', i = -3, amt = 12.50, b = true")
TARGET = (dt.date(1969, 7, 20), dt.datetime(2024, 3, 10, 2, 30, 0, 123456), dt.datetime(2024, 11, 3, 1, 30),
          "o'k", -3, Decimal("12.50"), True)
OTHER = (dt.date(1969, 7, 21), dt.datetime(2024, 3, 10, 2, 30, 0, 123456), dt.datetime(2024, 11, 3, 1, 30),
         "o'k", -3, Decimal("12.50"), True)


# Finding 5: static partition values of every type reach the write exactly (not as Spark's internal numbers).
def test_insert_overwrite_static_partition_of_every_type(spark: SparkSession, zone: str, table: str) -> None:
    spark.sql(f"CREATE TABLE {table} {PARTITIONED_DDL}")
    for i, day in ((1, "1969-07-20"), (2, "1969-07-21")):
        spark.sql(f"INSERT INTO {table} SELECT {i}, DATE'{day}', TIMESTAMP'2024-03-10 02:30:00.123456Z', "
                  "TIMESTAMP_NTZ'2024-11-03 01:30:00', 'o\\'k', -3, 12.50, true")
    spark.sql(f"INSERT OVERWRITE {table} PARTITION ({STATIC_SPEC}) SELECT 3")
    got = [tuple(r) for r in spark.table(table).select("id", "d", "ts", "ntz", "s", "i", "amt", "b").collect()]
    assert sorted_rows(got) == sorted_rows([(2, *OTHER), (3, *TARGET)])


# Findings 5 and 6: a DataFrame overwrite by a condition on a timestamp in the DST fall-back hour replaces exactly
# the partition of that instant.
def test_overwrite_by_timestamp_condition_in_fall_back_hour(spark: SparkSession, zone: str, table: str) -> None:
    spark.sql(f"CREATE TABLE {table} (id BIGINT, ts TIMESTAMP) USING strata PARTITIONED BY (ts)")
    spark.createDataFrame([(1, FALL_BACK[0]), (2, FALL_BACK[1])], "id long, ts timestamp").writeTo(table).append()
    new = spark.createDataFrame([(3, FALL_BACK[1])], "id long, ts timestamp")
    new.writeTo(table).overwrite(F.col("ts") == F.lit(FALL_BACK[1]))
    got = [tuple(r) for r in spark.table(table).collect()]
    assert sorted_rows(got) == [(1, FALL_BACK[0].replace(tzinfo=None)), (3, FALL_BACK[1].replace(tzinfo=None))]


def fall_back_rows(spark: SparkSession) -> Any:
    rows = [(i, t, t.date(), t.replace(tzinfo=None)) for i, t in enumerate(FALL_BACK)]
    return spark.createDataFrame(rows, "id long, ts timestamp, d date, ntz timestamp_ntz")


EXPECTED_LOG_VALUES = [
    {"ts": "2024-11-03T05:30:00.000000Z", "d": "2024-11-03", "ntz": "2024-11-03 05:30:00"},
    {"ts": "2024-11-03T06:30:00.000000Z", "d": "2024-11-03", "ntz": "2024-11-03 06:30:00"},
]


def check_fall_back_table(spark: SparkSession, path: str) -> None:
    assert live_partition_values(path) == EXPECTED_LOG_VALUES
    expected = [(i, t.replace(tzinfo=None)) for i, t in enumerate(FALL_BACK)]
    got = [tuple(r) for r in spark.read.format("strata").load(path).select("id", "ts").collect()]
    assert sorted_rows(got) == expected
    arrow = DeltaTable(path).to_pyarrow_table(columns=["id", "ts"]).to_pylist()
    assert sorted_rows([(r["id"], r["ts"].astimezone(UTC).replace(tzinfo=None)) for r in arrow]) == expected


# Finding 6: partition values come from the written instants, never from a session-zone rendering.
def test_fall_back_hour_timestamps_v1_path(spark: SparkSession, zone: str, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    fall_back_rows(spark).write.format("strata").partitionBy("ts", "d", "ntz").save(path)
    check_fall_back_table(spark, path)


def test_fall_back_hour_timestamps_v2_path(spark: SparkSession, zone: str, table: str) -> None:
    spark.sql(f"CREATE TABLE {table} (id BIGINT, ts TIMESTAMP, d DATE, ntz TIMESTAMP_NTZ) USING strata "
              "PARTITIONED BY (ts, d, ntz)")
    fall_back_rows(spark).writeTo(table).append()
    check_fall_back_table(spark, location(spark, table))


# Finding 7: dynamic partition overwrite compares values, not spellings: delta-rs writes '2024-03-01 10:11:12.000000'.
# That zone-less text is a local time of the reading session (as delta-spark reads it, defect 8), so the partition
# Strata's write replaces is the instant the text names in the session zone.
def test_dynamic_overwrite_replaces_partition_delta_rs_wrote(spark: SparkSession, zone: str, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    stamps = [dt.datetime(2024, 3, 1, 10, 11, 12, tzinfo=UTC), dt.datetime(2024, 11, 3, 5, 30, 0, 250000, tzinfo=UTC)]
    schema = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", tz="UTC"))])
    old = pa.Table.from_pylist([{"id": 1, "ts": stamps[0]}, {"id": 2, "ts": stamps[1]}], schema=schema)
    write_deltalake(path, old, partition_by=["ts"])
    spellings = {v["ts"] for v in live_partition_values(path)}
    assert all("T" not in (s or "") for s in spellings), spellings  # delta-rs's zone-less form, as the test needs

    def in_session(t: dt.datetime) -> dt.datetime:
        """The instant the zone-less text of `t` (delta-rs renders it in UTC) names in the session zone."""
        return t.replace(tzinfo=ZoneInfo(zone)).astimezone(UTC)

    new = spark.createDataFrame([(3, in_session(stamps[0]))], "id long, ts timestamp")
    new.write.format("strata").mode("overwrite").option("partitionOverwriteMode", "dynamic").save(path)
    expected = [(2, in_session(stamps[1])), (3, in_session(stamps[0]))]
    got = [tuple(r) for r in spark.read.format("strata").load(path).select("id", "ts").collect()]
    assert sorted_rows(got) == [(i, t.replace(tzinfo=None)) for i, t in expected]
    # delta-rs reads the zone-less value it wrote as UTC: it agrees with Strata and delta-spark in a UTC session only.
    arrow = DeltaTable(path).to_pyarrow_table(columns=["id", "ts"]).to_pylist()
    assert sorted_rows([(r["id"], r["ts"].astimezone(UTC).replace(tzinfo=None)) for r in arrow]) == [
        (2, stamps[1].replace(tzinfo=None)), (3, in_session(stamps[0]).replace(tzinfo=None))]


LA = "America/Los_Angeles"
# Instants around both 2024 DST changes in Los Angeles: 01:30 PST and 03:30 PDT on 2024-03-10; 01:30 PDT and 01:30
# PST on 2024-11-03, which the zone-less text cannot tell apart (delta-spark reads both as the first); and a summer one.
LEGACY_ROWS = ("(1, TIMESTAMP'2024-03-10 09:30:00Z'), (2, TIMESTAMP'2024-03-10 10:30:00Z'), "
               "(3, TIMESTAMP'2024-11-03 08:30:00Z'), (4, TIMESTAMP'2024-11-03 09:30:00Z'), "
               "(5, TIMESTAMP'2024-07-01 12:00:00Z')")
LEGACY_FILTERS = ["ts = TIMESTAMP'2024-03-10 01:30:00'", "ts = TIMESTAMP'2024-11-03 01:30:00'",
                  "ts > TIMESTAMP'2024-03-10 02:00:00' AND ts < TIMESTAMP'2024-08-01 00:00:00'",
                  "ts = TIMESTAMP'2024-03-10 09:30:00Z'", "ts IS NULL OR ts < TIMESTAMP'2024-03-10 02:00:00'"]


# Defect 8: delta-spark with utcTimestampPartitionValues=false (older delta-spark by default) writes a timestamp
# partition value as the session-zone rendering, without a zone; delta-spark reads it back in the session zone.
def test_zone_less_timestamp_partitions_read_as_delta_spark_reads_them(spark: SparkSession, peer: Peer,
                                                                       tmp_path: Path) -> None:
    path = tmp_path / "legacy"
    peer.call("sql", time_zone=LA, statements=[
        "SET spark.databricks.delta.write.utcTimestampPartitionValues = false",
        f"CREATE TABLE delta.`{path}` (id BIGINT, ts TIMESTAMP) USING delta PARTITIONED BY (ts)",
        f"INSERT INTO delta.`{path}` VALUES {LEGACY_ROWS}",
        "SET spark.databricks.delta.write.utcTimestampPartitionValues = true"])
    assert sorted(str(v["ts"]) for v in live_partition_values(str(path))) == [
        "2024-03-10 01:30:00", "2024-03-10 03:30:00", "2024-07-01 05:00:00", "2024-11-03 01:30:00",
        "2024-11-03 01:30:00"]  # the zone-less form the test is about
    spark.conf.set("spark.sql.session.timeZone", LA)
    try:
        theirs_all = peer.read(path, time_zone=LA)[0]
        assert sorted(spark.read.format("strata").load(str(path)).toJSON().collect()) == theirs_all
        for condition in LEGACY_FILTERS:
            query = f"SELECT id, ts, CAST(ts AS STRING) AS text, unix_micros(ts) AS micros FROM {{}} WHERE {condition}"
            theirs = peer.call("query", time_zone=LA, sql=query.format(f"delta.`{path}`"))["rows"]
            assert theirs, condition  # every filter selects something: the comparison is not vacuous
            assert sorted(spark.sql(query.format(f"strata.`{path}`")).toJSON().collect()) == theirs, condition
        # Strata's own append spells the instant unambiguously, and both engines still read the table alike.
        spark.createDataFrame([(6, dt.datetime(2024, 3, 10, 9, 30, tzinfo=UTC))], "id long, ts timestamp") \
            .write.format("strata").mode("append").save(str(path))
        assert "2024-03-10T09:30:00.000000Z" in {v["ts"] for v in live_partition_values(str(path))}
        mine = sorted(spark.read.format("strata").load(str(path)).toJSON().collect())
        assert mine == peer.read(path, time_zone=LA)[0]
        assert sum('"2024-03-10T01:30:00.000-08:00"' in r for r in mine) == 2  # ids 1 and 6: one instant
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
