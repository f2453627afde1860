"""SQL and DataFrameWriterV2 writes on catalog tables (DataSource V2 path), against Spark's own Parquet tables.

Each statement runs on a table in the `strata` catalog, on a session-catalog table `USING strata` and on a
session-catalog Parquet table; the three must hold the same rows, and delta-rs must read the Strata tables
identically.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

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
    data.writeTo(tables[0]).overwrite(F.col("p") == "2")
    assert sorted(r[0] for r in spark.table(tables[0]).where("p = '2'").collect()) == [2, 5, 8, 11]


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
