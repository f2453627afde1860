"""SQL and DataFrameWriterV2 writes on catalog tables (DataSource V2 path), against Spark's own Parquet tables.

Each statement runs on a table in the `strata` catalog, on a session-catalog table `USING strata` and on a
session-catalog Parquet table; the three must hold the same rows, and delta-rs must read the Strata tables
identically.
"""
from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import strata

Row = tuple[Any, ...]

# Partition column last: Spark's own Parquet tables always put partition columns at the end.
STATEMENTS = [
    "INSERT INTO {t} VALUES (1, 1.5, 'a'), (2, 2.5, 'b'), (3, NULL, 'a')",
    "INSERT INTO {t} SELECT id, id / 2, cast(id % 4 AS STRING) FROM range(40)",
    "INSERT OVERWRITE {t} PARTITION (p = 'a') SELECT 100, 7.0",
    "INSERT INTO {t} (p, id, v) VALUES ('z', 9, 0.5)",
    "INSERT OVERWRITE {t} SELECT id, 1.0, 'x' FROM range(3)",
    "INSERT INTO {t} SELECT id, 0.0, cast(id % 2 AS STRING) FROM range(6)",
]


def location(spark: SparkSession, table: str) -> str:
    row = spark.sql(f"DESCRIBE TABLE EXTENDED {table}").where("col_name = 'Location'").collect()[0]
    return str(row[1])


def rows(spark: SparkSession, table: str) -> list[Row]:
    return sorted(tuple(r) for r in spark.table(table).select("id", "p", "v").collect())


def delta_rs_rows(path: str) -> list[Row]:
    t = DeltaTable(path).to_pyarrow_table()
    return sorted(zip(t["id"].to_pylist(), t["p"].to_pylist(), t["v"].to_pylist()))


@pytest.fixture
def tables(spark: SparkSession) -> Iterator[tuple[str, str, str]]:
    ddl = "(id BIGINT, v DOUBLE, p STRING) USING {using} PARTITIONED BY (p)"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.sqlw")
    names = ("strata.sqlw.t", "default.sqlw_strata", "default.sqlw_parquet")
    for name, using in zip(names, ("strata", "strata", "parquet")):
        spark.sql(f"DROP TABLE IF EXISTS {name}")
        spark.sql(f"CREATE TABLE {name} " + ddl.format(using=using))
    yield names
    for name in names:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


@pytest.mark.parametrize("step", range(len(STATEMENTS)))
def test_statements_match_parquet_and_delta_rs(spark: SparkSession, tables: tuple[str, str, str], step: int) -> None:
    catalog_table, session_table, parquet_table = tables
    for statement in STATEMENTS[: step + 1]:
        for table in tables:
            spark.sql(statement.format(t=table))
    expected = rows(spark, parquet_table)
    assert rows(spark, catalog_table) == expected
    assert rows(spark, session_table) == expected
    assert delta_rs_rows(location(spark, catalog_table)) == expected
    assert delta_rs_rows(location(spark, session_table)) == expected


def test_dataframe_writer_v2(spark: SparkSession, tables: tuple[str, str, str]) -> None:
    data = spark.range(12).select("id", (F.col("id") * 1.0).alias("v"), (F.col("id") % 3).cast("string").alias("p"))
    expected = sorted((i, str(i % 3), i + 100.0 if i % 3 == 1 else float(i)) for i in range(12))
    for table in tables[:2]:  # DataFrameWriterV2 does not write Spark's V1 Parquet tables
        data.writeTo(table).append()
        data.where("p = '1'").select("id", (F.col("v") + 100).alias("v"), "p").writeTo(table).overwritePartitions()
        assert rows(spark, table) == expected
        assert delta_rs_rows(location(spark, table)) == expected
    # Every row an overwrite by condition writes must match it (others are refused: test_partition_values.py).
    replacement = data.where("p = '2'").select((F.col("id") + 1000).alias("id"), "v", "p")
    replacement.writeTo(tables[0]).overwrite(F.col("p") == "2")
    assert sorted(r[0] for r in spark.table(tables[0]).where("p = '2'").collect()) == [1002, 1005, 1008, 1011]
    assert [r for r in rows(spark, tables[0]) if r[1] != "2"] == [r for r in expected if r[1] != "2"]


def test_ctas_is_one_version_read_by_delta_rs(spark: SparkSession, tmp_path: Path) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.sqlw")
    spark.sql("DROP TABLE IF EXISTS strata.sqlw.ctas")
    spark.sql("CREATE TABLE strata.sqlw.ctas USING strata PARTITIONED BY (p) AS "
              "SELECT id, cast(id % 5 AS STRING) AS p FROM range(50)")
    path = location(spark, "strata.sqlw.ctas")
    table = DeltaTable(path)
    assert table.version() == 0
    assert table.metadata().partition_columns == ["p"]
    assert sorted(table.to_pyarrow_table()["id"].to_pylist()) == list(range(50))
    spark.sql("DROP TABLE strata.sqlw.ctas")


def test_dynamic_insert_overwrite_matches_parquet(spark: SparkSession, tables: tuple[str, str, str]) -> None:
    """With partitionOverwriteMode=dynamic, INSERT OVERWRITE replaces only the partitions the query writes."""
    for table in tables:
        spark.sql(f"INSERT INTO {table} SELECT id, id * 1.0, cast(id % 3 AS STRING) FROM range(9)")
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        for table in tables:
            spark.sql(f"INSERT OVERWRITE {table} PARTITION (p) SELECT 50 + id, 0.5, cast(id % 2 AS STRING) FROM range(4)")
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    expected = rows(spark, tables[2])
    assert {r[1] for r in expected} == {"0", "1", "2"} and len([r for r in expected if r[1] == "2"]) == 3
    for table in tables[:2]:
        assert rows(spark, table) == expected
        assert delta_rs_rows(location(spark, table)) == expected


@pytest.mark.parametrize("statement,fragment", [
    ("INSERT INTO {t} SELECT 1, 2.0", "not enough data columns"),
    ("INSERT INTO {t} SELECT 1, 2.0, 'a', 'extra'", "too many data columns"),
    ("INSERT INTO {t} BY NAME SELECT 1 AS id, 'a' AS p, 2.0 AS nope", "nope"),
    ("INSERT INTO {t} (id, p, w) VALUES (1, 'a', 2.0)", "w"),
])
def test_column_mismatches_fail_clearly_and_commit_nothing(spark: SparkSession, tables: tuple[str, str, str],
                                                           statement: str, fragment: str) -> None:
    for table in tables[:2]:
        versions = DeltaTable(location(spark, table)).version()
        with pytest.raises(Exception, match=fragment):
            spark.sql(statement.format(t=table))
        assert DeltaTable(location(spark, table)).version() == versions


# Every statement sleeps 1.5 s inside its Spark job, after planning (where it reads the table version): two of them
# started together overlap, so both read the same version and race to commit the next one.
SLOW_ROWS = "FROM range(0, 3, 1, 1) WHERE length(java_method('java.lang.Thread', 'sleep', 500L)) >= 0"


def run_together(spark: SparkSession, statements: list[str]) -> list[BaseException | None]:
    def run(statement: str) -> BaseException | None:
        try:
            with strata.errors.translate():
                spark.sql(statement)
            return None
        except Exception as e:
            return e

    with ThreadPoolExecutor(max_workers=len(statements)) as pool:
        return list(pool.map(run, statements))


@pytest.mark.parametrize("table", ["strata.sqlw.race", "default.sqlw_race"])
def test_concurrent_insert_overwrite_of_one_partition_one_wins(spark: SparkSession, table: str) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.sqlw")
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    spark.sql(f"CREATE TABLE {table} (id BIGINT, p STRING) USING strata PARTITIONED BY (p)")
    spark.sql(f"INSERT INTO {table} SELECT id, cast(id % 2 AS STRING) FROM range(10)")
    errors = run_together(spark, [
        f"INSERT OVERWRITE {table} PARTITION (p = '1') SELECT id + {k * 100} {SLOW_ROWS}" for k in (1, 2)])
    failed = [e for e in errors if e is not None]
    assert len(failed) == 1, errors
    assert isinstance(failed[0], strata.ConcurrentModificationError), repr(failed[0])
    assert "conflicts with version 2" in failed[0].message  # the winner's commit (append or delete conflict)
    winner = 100 if errors[0] is None else 200
    path = location(spark, table)
    assert DeltaTable(path).version() == 2
    assert sorted(r.id for r in spark.table(table).where("p = '1'").collect()) == [winner, winner + 1, winner + 2]
    assert sorted(r.id for r in spark.table(table).where("p = '0'").collect()) == [0, 2, 4, 6, 8]
    spark.sql(f"DROP TABLE {table}")


def test_concurrent_insert_into_both_commit(spark: SparkSession) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.sqlw")
    spark.sql("DROP TABLE IF EXISTS strata.sqlw.appends")
    spark.sql("CREATE TABLE strata.sqlw.appends (id BIGINT, p STRING) USING strata PARTITIONED BY (p)")
    errors = run_together(spark, [
        f"INSERT INTO strata.sqlw.appends PARTITION (p = '1') SELECT id + {k * 100} {SLOW_ROWS}" for k in (1, 2)])
    assert errors == [None, None]
    assert DeltaTable(location(spark, "strata.sqlw.appends")).version() == 2
    assert sorted(r.id for r in spark.table("strata.sqlw.appends").collect()) == [100, 101, 102, 200, 201, 202]
    spark.sql("DROP TABLE strata.sqlw.appends")


def test_partitioned_insert_asks_for_clustering_and_makes_one_file_per_partition(spark: SparkSession) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.sqlw")
    spark.sql("DROP TABLE IF EXISTS strata.sqlw.wide")
    spark.sql("CREATE TABLE strata.sqlw.wide (id BIGINT, k INT) USING strata PARTITIONED BY (k)")
    plan = spark.sql("EXPLAIN INSERT INTO strata.sqlw.wide SELECT id, cast(id % 200 AS INT) FROM range(0, 20000, 1, 8)"
                     ).collect()[0][0]
    assert "hashpartitioning(k" in plan and "Sort [k" in plan, plan
    spark.sql("INSERT INTO strata.sqlw.wide SELECT id, cast(id % 200 AS INT) FROM range(0, 20000, 1, 8)")
    files = DeltaTable(location(spark, "strata.sqlw.wide")).file_uris()
    assert len({f.rsplit("/", 2)[-2] for f in files}) == 200  # the k=NN directories
    assert len(files) <= 210, f"{len(files)} files for 200 partitions from 8 tasks"
    spark.sql("DROP TABLE strata.sqlw.wide")
