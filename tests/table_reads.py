"""A table's rows and log as the tests compare them: Strata's DataFrame reader, delta-rs (deltalake) and the
`_delta_log` files themselves. One copy for every test module."""
from __future__ import annotations

import datetime as dt
import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder
from pyspark.sql import SparkSession


def plain(value: Any) -> Any:
    """A value comparable across engines: zone-aware datetimes (delta-rs) as naive UTC (Spark in a UTC session)."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


def strata_json(spark: SparkSession, path: Path | str, version: int | None = None,
                columns: list[str] | None = None) -> list[str]:
    """The rows Strata reads (at `version`; only `columns`), as sorted JSON lines."""
    reader = spark.read.format("strata")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    df = reader.load(str(path))
    return sorted((df.select(*columns) if columns else df).toJSON().collect())


def strata_tuples(spark: SparkSession, path: Path | str, columns: list[str] | None = None) -> list[tuple[Any, ...]]:
    """The latest rows Strata reads (only `columns`), as tuples of plain values sorted by repr."""
    df = spark.read.format("strata").load(str(path))
    return sorted((tuple(plain(v) for v in r) for r in (df.select(*columns) if columns else df).collect()), key=repr)


def delta_rs_tuples(path: Path | str, columns: list[str], version: int | None = None) -> list[tuple[Any, ...]]:
    """The rows delta-rs reads (latest, or at `version`), as tuples of plain values sorted by repr. Its DataFusion
    scan applies deletion vectors (to_pyarrow_table refuses tables that have them)."""
    table = DeltaTable(str(path)) if version is None else DeltaTable(str(path), version=version)
    reader = QueryBuilder().register("t", table).execute("SELECT * FROM t")
    rows = pa.table(reader.read_all()).select(columns).to_pylist()
    return sorted((tuple(plain(r[c]) for c in columns) for r in rows), key=repr)


def log_version(path: Path) -> int:
    """The latest version with a JSON commit in the table's log."""
    return max(int(f.name[:-5]) for f in (path / "_delta_log").glob("*.json") if f.name[:-5].isdigit())


def commit_actions(path: Path, version: int) -> list[dict[str, Any]]:
    """The actions of one JSON commit, as parsed JSON objects."""
    text = (path / "_delta_log" / f"{version:020d}.json").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@contextlib.contextmanager
def session_time_zone(spark: SparkSession, zone: str) -> Iterator[str]:
    """The session in time zone `zone` for the block, back in UTC (the test session's zone) after it."""
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        yield zone
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


def log_versions(path: Path) -> list[int]:
    """Every version of the table's log, from 0 to the latest."""
    return list(range(log_version(path) + 1))


def strata_history(spark: SparkSession, path: Path) -> list[list[str]]:
    """Strata's rows (as JSON) of every version of the table, oldest first."""
    return [strata_json(spark, path, v) for v in log_versions(path)]
