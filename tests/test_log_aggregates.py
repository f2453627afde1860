"""Aggregates answered from the log (issue 23): count(*), count / min / max of columns, grouped by partition columns,
with partition filters, answered from the add actions' statistics when every file has exact ones, else read from the
data. Every query's result with the push-down must equal its result without (`spark.strata.read.aggregatePushdown.
enabled=false`), through path reads (V1, the session extension's rule) and catalog reads (V2, the scan builder), and
EXPLAIN must name the answer (`StrataLogAggregate`) exactly where it is safe.

The corpus: tables written by Strata (nulls, NaN, null partition values, strings longer than the 32 characters
statistics keep, decimal, date and timestamp columns; one with deletion vectors from a DELETE), by delta-spark (the
`peer` fixture: with deletion vectors, without statistics, with statistics on the first 2 columns only, and zone-less
timestamp partition values read in a non-UTC session) and by delta-rs (`deltalake`). The tables are built once for
the module; each query runs through V1 and V2, and again without the push-down when the log answered it."""
from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake
from pyspark.sql import SparkSession

from delta_spark_peer import Peer

CONF = "spark.strata.read.aggregatePushdown.enabled"
MARK = "StrataLogAggregate"
LA = "America/Los_Angeles"

COLS = ("id BIGINT, i INT, sh SMALLINT, dec DECIMAL(10,2), big DECIMAL(38,10), dt DATE, ts TIMESTAMP, b BOOLEAN, "
        "s STRING, d DOUBLE")
LONG_A = "x" * 32 + "-a-longer-than-the-statistics-keep"
LONG_B = "x" * 32 + "-b-longer-than-the-statistics-keep"
ROWS = [
    # (id, i, sh, dec, big, dt, ts, b, s, d, p, q)
    "(1, 10, 1, 1.50, 12345678901234567890.0123456789, DATE'2024-01-01', TIMESTAMP'2024-01-01 10:00:00.123456', "
    "true, 'short', 1.5, 'a', 1)",
    "(2, NULL, 2, -3.25, NULL, DATE'2023-12-31', NULL, false, NULL, CAST('NaN' AS DOUBLE), 'a', 1)",
    f"(3, 7, NULL, NULL, 1.0, NULL, TIMESTAMP'2024-06-01 00:00:00.999999', NULL, '{LONG_A}', -0.0, NULL, 2)",
    f"(4, NULL, 5, 99999999.99, -1.5, DATE'1999-02-03', TIMESTAMP'1999-01-01 00:00:00', true, '{LONG_B}', NULL, "
    "'b', NULL)",
    "(5, NULL, -7, 0.01, 2.5, DATE'2100-12-31', TIMESTAMP'2100-01-01 00:00:00.000001', false, 'zz', 2.5, 'b', NULL)",
    "(6, -4, 3, 5.00, 3.0, DATE'2024-02-29', TIMESTAMP'2024-02-29 12:00:00', true, 'm', -1.0, 'a', 1)",
    "(7, 100, 4, -0.50, 4.0, DATE'2024-03-01', TIMESTAMP'2024-03-01 00:00:00', false, 'n', 3.0, 'c', 3)",
]
# Three appends (files per partition), so that most partitions hold more than one file.
# One task per insert: files of several rows, so that the DELETE below leaves deletion vectors.
INSERT = "INSERT INTO {{t}} SELECT /*+ REPARTITION(1) */ * FROM VALUES {rows}"
INSERTS = [INSERT.format(rows=", ".join(ROWS[0:3])), INSERT.format(rows=", ".join(ROWS[3:5])),
           INSERT.format(rows=", ".join(ROWS[5:7] + [ROWS[0].replace("(1,", "(8,")]))]
DDL = "CREATE TABLE {t} (" + COLS + ", p STRING, q INT) USING {using} PARTITIONED BY (p, q)"
DV = " TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
DELETE = "DELETE FROM {t} WHERE id IN (2, 6)"  # rows of files that keep others: deletion vectors

# Exact from the log wherever the statistics are (integral, decimal(10,2), date, boolean, partition columns).
SAFE = {
    "count": "SELECT count(*) FROM {t}",
    "columns": "SELECT count(*), count(id), count(i), count(s), count(d), count(ts), min(id), max(id), min(i), "
               "max(i), min(sh), max(sh), min(dec), max(dec), min(dt), max(dt) FROM {t}",
    "data bounds": "SELECT min(id), max(i), min(dec), max(dt) FROM {t}",
    "grouped": "SELECT p, q, count(*), count(p), count(q), min(id), max(i), count(i) FROM {t} GROUP BY p, q",
    "grouped filtered": "SELECT p, count(*), min(q), max(q), max(dec) FROM {t} WHERE q IS NOT NULL GROUP BY p",
    "partition columns": "SELECT count(*), count(p), min(p), max(p), min(q), max(q) FROM {t} "
                         "WHERE p IS NULL OR p <> 'b'",
    "expression": "SELECT count(*) + 1 AS n, max(id) - min(id) AS spread FROM {t} WHERE q = 1",
    "no partition": "SELECT count(*), min(id), max(p) FROM {t} WHERE p = 'none'",
    "no group": "SELECT q, count(*) FROM {t} WHERE p = 'none' GROUP BY q",
    # Inside a larger plan the answer is executed as an RDD, not collected on the driver.
    "in a union": "SELECT count(*) AS n FROM {t} UNION ALL SELECT max(id) FROM {t} WHERE p = 'a'",
}
# Never from the log: truncated strings, floating point, millisecond timestamps, decimals beyond 15 digits, data
# filters, DISTINCT.
UNSAFE = {
    "strings": "SELECT min(s), max(s) FROM {t}",
    "doubles": "SELECT min(d), max(d) FROM {t}",
    "timestamps": "SELECT min(ts), max(ts) FROM {t}",
    "wide decimal": "SELECT min(big), max(big) FROM {t}",
    "data filter": "SELECT count(*) FROM {t} WHERE id > 2",
    "distinct": "SELECT count(DISTINCT i) FROM {t}",
    "booleans": "SELECT min(b), max(b) FROM {t}",  # exact if given, but neither Strata nor delta-spark writes them
}


def comparable(v: Any) -> Any:
    return "NaN" if isinstance(v, float) and math.isnan(v) else v


def sorted_rows(spark: SparkSession, sql: str) -> list[tuple[Any, ...]]:
    return sorted((tuple(comparable(v) for v in r) for r in spark.sql(sql).collect()), key=repr)


def plan(spark: SparkSession, sql: str) -> str:
    text: str = spark.sql("EXPLAIN " + sql).collect()[0][0]
    return text


def compare(spark: SparkSession, path: Path, queries: dict[str, str]) -> dict[str, bool]:
    """Runs each query through V1 and V2 with the push-down and V2 without, asserts the three agree and that both
    reads agree on whether the log answered; returns, per query, whether it did."""
    view = f"agg_v1_{abs(hash(str(path)))}"
    spark.read.format("strata").load(str(path)).createOrReplaceTempView(view)
    catalog = f"strata.`{path}`"
    pushed: dict[str, bool] = {}
    for name, q in queries.items():
        v1, v2 = q.format(t=view), q.format(t=catalog)
        on_v1, on_v2 = sorted_rows(spark, v1), sorted_rows(spark, v2)
        by_v1, by_v2 = MARK in plan(spark, v1), MARK in plan(spark, v2)
        off = on_v2  # a query the log did not answer ran the same plan as without the push-down
        if by_v1 or by_v2:
            spark.conf.set(CONF, "false")
            try:
                off = sorted_rows(spark, v2)
                assert MARK not in plan(spark, v1) and MARK not in plan(spark, v2), name
            finally:
                spark.conf.unset(CONF)
        assert on_v1 == off, f"{path.name} {name} (path read): {on_v1} != {off}"
        assert on_v2 == off, f"{path.name} {name} (catalog read): {on_v2} != {off}"
        assert by_v1 == by_v2, f"{path.name} {name}: pushed on one read only (V1 {by_v1}, V2 {by_v2})"
        pushed[name] = by_v1
    spark.catalog.dropTempView(view)
    return pushed


@pytest.fixture(scope="module")
def tables(spark: SparkSession, peer: Peer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    base = tmp_path_factory.mktemp("log_aggregates")
    paths = {name: base / name for name in ("strata", "strata_dv", "empty", "delta_dv", "delta_nostats",
                                            "delta_two_cols", "delta_tz", "deltars", "deltars_nostats")}

    def strata(name: str, statements: list[str]) -> None:
        for sql in statements:
            spark.sql(sql.format(t=f"strata.`{paths[name]}`", using="strata"))

    def delta(name: str, statements: list[str]) -> list[str]:
        return [sql.format(t=f"delta.`{paths[name]}`", using="delta") for sql in statements]

    strata("strata", [DDL] + INSERTS)
    strata("strata_dv", [DDL + DV] + INSERTS + [DELETE])
    strata("empty", [DDL])
    peer.call("sql", statements=delta("delta_dv", [DDL + DV] + INSERTS + [DELETE])
              + ["SET spark.databricks.delta.stats.collect = false"] + delta("delta_nostats", [DDL] + INSERTS)
              + ["SET spark.databricks.delta.stats.collect = true"]
              + delta("delta_two_cols", [DDL + " TBLPROPERTIES ('delta.dataSkippingNumIndexedCols' = '2')"] + INSERTS))
    # Zone-less timestamp partition values (the writer's local time), written and read in Los Angeles.
    peer.call("sql", time_zone=LA, statements=[
        "SET spark.databricks.delta.write.utcTimestampPartitionValues = false"] + delta("delta_tz", [
            "CREATE TABLE {t} (id BIGINT, dt DATE, tp TIMESTAMP) USING delta PARTITIONED BY (tp)",
            "INSERT INTO {t} VALUES (1, DATE'2024-03-10', TIMESTAMP'2024-03-10 01:30:00'), "
            "(2, DATE'2024-03-09', TIMESTAMP'2024-03-10 03:30:00'), (3, NULL, NULL)",
            "INSERT INTO {t} VALUES (4, DATE'2024-11-03', TIMESTAMP'2024-11-03 00:30:00')"])
        + ["SET spark.databricks.delta.write.utcTimestampPartitionValues = true"])
    arrow = pa.table({
        "id": pa.array([1, 2, 3, 4, None], pa.int64()),
        "i": pa.array([10, None, 7, -4, 5], pa.int32()),
        "dec": pa.array([decimal.Decimal("1.50"), None, decimal.Decimal("-3.25"), decimal.Decimal("99999999.99"),
                         decimal.Decimal("0.01")], pa.decimal128(10, 2)),
        "big": pa.array([decimal.Decimal("12345678901234567890.0123456789"), None, decimal.Decimal("1"),
                         decimal.Decimal("2.5"), None], pa.decimal128(38, 10)),
        "dt": pa.array([dt.date(2024, 1, 1), None, dt.date(1999, 2, 3), dt.date(2100, 12, 31), dt.date(2024, 2, 29)]),
        "s": pa.array(["short", LONG_A, None, LONG_B, "zz"]),
        "d": pa.array([1.5, float("nan"), None, -0.0, 2.5]),
        "p": pa.array(["a", "a", None, "b", "b"]),
    })
    for name, config in (("deltars", {}), ("deltars_nostats", {"delta.dataSkippingNumIndexedCols": "0"})):
        for part in (arrow.slice(0, 3), arrow.slice(3)):
            write_deltalake(str(paths[name]), part, mode="append", partition_by=["p"],
                            configuration=config)
    yield paths


def test_strata_table_answers_exactly_from_the_log(spark: SparkSession, tables: dict[str, Path]) -> None:
    pushed = compare(spark, tables["strata"], {**SAFE, **UNSAFE})
    assert [q for q in SAFE if not pushed[q]] == [], "every safe aggregate of a table with statistics is answered"
    assert [q for q in UNSAFE if pushed[q]] == [], "no unsafe aggregate is answered from the log"


def test_empty_table(spark: SparkSession, tables: dict[str, Path]) -> None:
    pushed = compare(spark, tables["empty"], {k: SAFE[k] for k in ("count", "columns", "grouped")})
    assert all(pushed.values()), pushed
    assert sorted_rows(spark, f"SELECT count(*), min(id), max(p) FROM strata.`{tables['empty']}`") == [(0, None, None)]


def test_deletion_vectors_count_rows_but_not_bounds(spark: SparkSession, tables: dict[str, Path]) -> None:
    for name in ("strata_dv", "delta_dv"):
        vectors = [line for f in sorted((tables[name] / "_delta_log").glob("*.json"))
                   for line in f.read_text(encoding="utf-8").splitlines() if '"deletionVector":{' in line]
        assert vectors, f"{name}: the DELETE wrote deletion vectors"
        pushed = compare(spark, tables[name], {**SAFE, "strings": UNSAFE["strings"]})
        # count(*) = numRecords - the vector's cardinality; bounds of a file with a vector are wide (tightBounds false)
        assert pushed["count"] and pushed["partition columns"] and pushed["no partition"], (name, pushed)
        assert not pushed["data bounds"] and not pushed["columns"] and not pushed["strings"], (name, pushed)


def test_tables_without_statistics_are_read(spark: SparkSession, tables: dict[str, Path]) -> None:
    pushed = compare(spark, tables["delta_nostats"], {k: SAFE[k] for k in ("count", "grouped", "partition columns")})
    assert not any(pushed.values()), pushed  # no numRecords: nothing is known of any file
    pushed = compare(spark, tables["deltars_nostats"], {k: SAFE[k] for k in ("count", "data bounds")})
    assert pushed["count"] and not pushed["data bounds"], pushed  # numRecords, but no column statistics


def test_statistics_on_some_columns_only(spark: SparkSession, tables: dict[str, Path]) -> None:
    pushed = compare(spark, tables["delta_two_cols"], {
        "indexed": "SELECT count(*), min(id), max(i), count(i) FROM {t}",
        "not indexed": "SELECT min(id), max(dec) FROM {t}",
        "grouped": SAFE["grouped"], "timestamps": UNSAFE["timestamps"]})
    assert pushed == {"indexed": True, "not indexed": False, "grouped": True, "timestamps": False}


def test_delta_spark_and_delta_rs_statistics(spark: SparkSession, tables: dict[str, Path]) -> None:
    pushed = compare(spark, tables["deltars"], {
        "count": SAFE["count"], "bounds": "SELECT min(id), max(id), min(i), max(i), count(s), min(dt), max(dt) FROM {t}",
        "decimal": "SELECT min(dec), max(dec) FROM {t}", "grouped": "SELECT p, count(*), max(i) FROM {t} GROUP BY p",
        "strings": UNSAFE["strings"], "doubles": UNSAFE["doubles"], "wide decimal": UNSAFE["wide decimal"]})
    assert pushed == {"count": True, "bounds": True, "decimal": True, "grouped": True, "strings": False,
                      "doubles": False, "wide decimal": False}


def test_timestamp_partitions_in_a_non_utc_session(spark: SparkSession, tables: dict[str, Path]) -> None:
    spark.conf.set("spark.sql.session.timeZone", LA)
    try:
        queries = {"grouped": "SELECT tp, count(*), min(id), max(dt) FROM {t} GROUP BY tp",
                   "bounds": "SELECT min(tp), max(tp), count(tp), min(dt) FROM {t}",
                   "filtered": "SELECT count(*) FROM {t} WHERE tp >= TIMESTAMP'2024-03-10 03:00:00'"}
        assert all(compare(spark, tables["delta_tz"], queries).values())
        assert all(compare(spark, tables["strata"], {k: SAFE[k] for k in ("columns", "grouped")}).values())
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


def test_the_setting_and_read_options_are_checked(spark: SparkSession, tables: dict[str, Path]) -> None:
    # An aggregate answered from the log still refuses a misspelt read option, as a scan does.
    with pytest.raises(Exception, match=r"Unknown option 'versionAsOff'"):
        spark.read.option("versionAsOff", "1").table(f"strata.`{tables['strata']}`").count()
    spark.conf.set(CONF, "maybe")
    try:
        with pytest.raises(Exception, match=r"STRATA_INVALID_CONF_VALUE.*aggregatePushdown.*true or false"):
            spark.sql(f"SELECT count(*) FROM strata.`{tables['strata']}`").collect()
    finally:
        spark.conf.unset(CONF)
