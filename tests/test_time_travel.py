"""Time travel: VERSION AS OF and TIMESTAMP AS OF in both catalogs, and the read options on paths.

Timestamps are given as the session time zone's wall-clock text, in UTC and in two other zones, and must land on the
same version; one before the first commit or after the latest is refused naming the range (as delta-spark does).
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from pyspark.sql import SparkSession

import strata


def location(spark: SparkSession, table: str) -> Path:
    row = spark.sql(f"DESCRIBE TABLE EXTENDED {table}").where("col_name = 'Location'").collect()[0]
    return Path(str(row[1]).removeprefix("file:"))


def commit_millis(path: Path) -> list[int]:
    """Each version's commit time as Strata reads it: the commit file's modification time (no in-commit timestamps)."""
    files = sorted((path / "_delta_log").glob("*.json"))
    return [f.stat().st_mtime_ns // 1_000_000 for f in files]


def wall_clock(millis: int, zone: str) -> str:
    return dt.datetime.fromtimestamp(millis / 1000, ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M:%S.%f")


@pytest.fixture(params=["strata", "session"])
def table(request: pytest.FixtureRequest, spark: SparkSession) -> Iterator[str]:
    """A table with versions 0 (created) to 3 (three inserts of one row each)."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.tt")
    name = "strata.tt.t" if request.param == "strata" else "default.tt_t"
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(f"CREATE TABLE {name} (id BIGINT) USING strata")
    for i in (1, 2, 3):
        spark.sql(f"INSERT INTO {name} VALUES ({i})")
    yield name
    spark.sql(f"DROP TABLE IF EXISTS {name}")


def ids(spark: SparkSession, sql: str) -> list[int]:
    return sorted(r.id for r in spark.sql(sql).collect())


def test_version_as_of(spark: SparkSession, table: str) -> None:
    assert ids(spark, f"SELECT * FROM {table} VERSION AS OF 0") == []
    assert ids(spark, f"SELECT * FROM {table} VERSION AS OF 2") == [1, 2]
    assert ids(spark, f"SELECT * FROM {table}") == [1, 2, 3]
    with pytest.raises(strata.StrataError, match=r"Version 9 of .* does not exist; the latest version is 3"):
        with strata.errors.translate():
            spark.sql(f"SELECT * FROM {table} VERSION AS OF 9").collect()


@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Asia/Kolkata"])
def test_timestamp_as_of_in_the_session_time_zone(spark: SparkSession, table: str, zone: str) -> None:
    path = location(spark, table)
    stamps = commit_millis(path)
    assert len(stamps) == 4 and stamps == sorted(set(stamps)), stamps
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        for version, expected in ((1, [1]), (2, [1, 2]), (3, [1, 2, 3])):
            at = wall_clock(stamps[version], zone)
            assert ids(spark, f"SELECT * FROM {table} TIMESTAMP AS OF '{at}'") == expected, (version, at)
            df = spark.read.format("strata").option("timestampAsOf", at).load(str(path))
            assert sorted(r.id for r in df.collect()) == expected
        # Just before version 2's commit: still version 1.
        assert ids(spark, f"SELECT * FROM {table} TIMESTAMP AS OF '{wall_clock(stamps[2] - 1, zone)}'") == [1]
        early = wall_clock(stamps[0] - 86_400_000, zone)
        with pytest.raises(strata.StrataError, match=r"committed at or before .*: the table's commits go from "
                                                     r"version 0 at .* to version 3 at "):
            with strata.errors.translate():
                spark.sql(f"SELECT * FROM {table} TIMESTAMP AS OF '{early}'").collect()
        late = wall_clock(stamps[3] + 3_600_000, zone)
        with pytest.raises(strata.StrataError, match=r"is after the latest commit .*version 3 at "):
            with strata.errors.translate():
                spark.sql(f"SELECT * FROM {table} TIMESTAMP AS OF '{late}'").collect()
        with pytest.raises(strata.StrataError, match=r"is after the latest commit"):
            with strata.errors.translate():
                spark.read.format("strata").option("timestampAsOf", late).load(str(path)).collect()
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)
