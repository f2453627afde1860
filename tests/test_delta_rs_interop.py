"""Strata and delta-rs (the `deltalake` Python package, an independent Delta implementation) read each other's tables."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from pyspark.sql import SparkSession

import strata

COLUMNS = ["id", "p", "s", "d", "ts", "amt", "flag", "x"]
SCHEMA = "id long, p string, s string, d date, ts timestamp, amt decimal(12,3), flag boolean, x double"
ARROW_SCHEMA = pa.schema([
    ("id", pa.int64()), ("p", pa.string()), ("s", pa.string()), ("d", pa.date32()),
    ("ts", pa.timestamp("us", tz="UTC")), ("amt", pa.decimal128(12, 3)), ("flag", pa.bool_()), ("x", pa.float64()),
])
# Partition values that need escaping in paths; "" is stored as null by the Delta protocol.
PARTITIONS = [None, "", "a/b", "k=v", "100%", "with space", "ünïcødé ✓", "plain"]

Row = tuple[Any, ...]


def make_rows(start: int, n: int) -> list[Row]:
    rows = []
    for i in range(start, start + n):
        rows.append((
            i * 1_000_003 - 7,
            PARTITIONS[i % len(PARTITIONS)],
            None if i % 5 == 0 else f"s-{i} ✓",
            None if i % 7 == 0 else dt.date(1969, 12, 25) + dt.timedelta(days=3 * i),
            None if i % 6 == 0 else dt.datetime(1969, 12, 31, 23, 0, 0, tzinfo=dt.timezone.utc)
            + dt.timedelta(hours=5 * i, microseconds=123457 * i),
            None if i % 9 == 0 else Decimal(i * 1001 - 5000).scaleb(-3),
            None if i % 4 == 0 else i % 3 == 0,
            None if i % 8 == 0 else i / 3 - 10,
        ))
    return rows


def norm(row: Row) -> Row:
    """A row as plain Python values: naive UTC timestamps, empty-string partition values as null."""
    out = []
    for name, v in zip(COLUMNS, row):
        if isinstance(v, dt.datetime) and v.tzinfo is not None:
            v = v.astimezone(dt.timezone.utc).replace(tzinfo=None)
        if name == "p" and v == "":
            v = None
        out.append(v)
    return tuple(out)


def expected(rows: list[Row]) -> list[Row]:
    return sorted((norm(r) for r in rows), key=lambda r: r[0])


def delta_rs_rows(path: Path, version: int | None = None) -> list[Row]:
    table = DeltaTable(str(path), version=version).to_pyarrow_table(columns=COLUMNS)
    return expected([tuple(r[c] for c in COLUMNS) for r in table.to_pylist()])


def strata_rows(spark: SparkSession, path: Path, version: int | None = None) -> list[Row]:
    df = strata.Table.for_path(spark, path).to_df(version).select(*COLUMNS)
    return expected([tuple(r) for r in df.collect()])


def strata_write(spark: SparkSession, rows: list[Row], path: Path, mode: str, partitioned: bool = True) -> None:
    writer = spark.createDataFrame(rows, SCHEMA).write.format("strata").mode(mode)
    if partitioned:
        writer = writer.partitionBy("p")
    writer.save(str(path))


def arrow(rows: list[Row]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(COLUMNS, r)) for r in rows], schema=ARROW_SCHEMA)


def test_delta_rs_reads_what_strata_wrote(spark: SparkSession, table_path: Path) -> None:
    first, second = make_rows(0, 40), make_rows(40, 17)
    strata_write(spark, first, table_path, "errorifexists")
    strata_write(spark, second, table_path, "append")

    table = DeltaTable(str(table_path))
    assert table.version() == 1
    assert table.metadata().partition_columns == ["p"]
    assert [f.name for f in table.schema().fields] == COLUMNS
    assert delta_rs_rows(table_path) == expected(first + second)
    assert strata_rows(spark, table_path) == expected(first + second)
    # every partition value, including the null one, made it to delta-rs
    assert {r[1] for r in delta_rs_rows(table_path)} == {None, "a/b", "k=v", "100%", "with space", "ünïcødé ✓", "plain"}


@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "unpartitioned"])
def test_strata_reads_what_delta_rs_wrote(spark: SparkSession, table_path: Path, partitioned: bool) -> None:
    partition_by = ["p"] if partitioned else None
    batches = [("error", make_rows(0, 24)), ("append", make_rows(24, 9)), ("append", make_rows(33, 5)),
               ("overwrite", make_rows(100, 19)), ("append", make_rows(200, 3))]
    versions: list[list[Row]] = []
    current: list[Row] = []
    for mode, rows in batches:
        write_deltalake(str(table_path), arrow(rows), mode=mode,  # type: ignore[call-overload]
                        partition_by=partition_by)
        current = rows if mode == "overwrite" else current + rows
        versions.append(current)

    assert DeltaTable(str(table_path)).version() == len(batches) - 1
    assert strata.Table.for_path(spark, table_path).version() == len(batches) - 1
    assert strata_rows(spark, table_path) == expected(current)
    for version, rows in enumerate(versions):
        assert strata_rows(spark, table_path, version) == expected(rows), f"versionAsOf {version}"
        assert delta_rs_rows(table_path, version) == expected(rows), f"delta-rs version {version}"


def test_delta_rs_time_travels_over_strata_commits(spark: SparkSession, table_path: Path) -> None:
    a, b, c = make_rows(0, 11), make_rows(11, 13), make_rows(50, 6)
    strata_write(spark, a, table_path, "append")
    strata_write(spark, b, table_path, "append")
    strata_write(spark, c, table_path, "overwrite")

    assert delta_rs_rows(table_path, version=0) == expected(a)
    assert delta_rs_rows(table_path, version=1) == expected(a + b)
    assert delta_rs_rows(table_path, version=2) == expected(c)
    assert delta_rs_rows(table_path) == expected(c)

    history = DeltaTable(str(table_path)).history()
    assert [(h["version"], h["operation"], h["operationParameters"]["mode"]) for h in history] == [
        (2, "WRITE", "Overwrite"), (1, "WRITE", "Append"), (0, "WRITE", "Append"),
    ]
