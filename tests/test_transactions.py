"""The transaction core end to end: another engine (delta-rs, the `deltalake` package) commits to the table while a
Strata job runs, at a chosen point, and every outcome is either a typed conflict with nothing lost or a result equal
to a serial order.

The rival commit runs inside the Strata job itself: a `mapInPandas` step of the written DataFrame calls delta-rs
once (a marker file created with O_EXCL guards against task retries), so it lands after Strata's transaction read
the table and before Strata commits, on every run.
"""
from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
from pyspark import cloudpickle
from pyspark.sql import DataFrame, SparkSession

import strata

# The rival steps run in Spark's Python workers, which cannot import this test module: ship its functions by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

SCHEMA = "id long, p string"
ARROW = pa.schema([("id", pa.int64()), ("p", pa.string())])
Row = tuple[Any, ...]


def rows_of(spark: SparkSession, path: Path | str) -> list[Row]:
    return sorted(tuple(r) for r in spark.read.format("strata").load(str(path)).select("id", "p").collect())


def delta_rs_rows(path: Path | str) -> list[Row]:
    t = DeltaTable(str(path)).to_pyarrow_table()
    return sorted(zip(t["id"].to_pylist(), t["p"].to_pylist()))


def commits(path: Path) -> list[list[dict[str, Any]]]:
    """Every commit's actions, by version."""
    log = path / "_delta_log"
    return [[json.loads(line) for line in f.read_text().splitlines() if line]
            for f in sorted(log.glob("*.json"))]


def arrow(rows: list[Row]) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "p": p} for i, p in rows], schema=ARROW)


def with_rival(spark: SparkSession, rows: list[Row], marker: Path, rival: Callable[[], None]) -> DataFrame:
    """`rows` as a one-partition DataFrame whose computation runs `rival` once, inside the Spark job."""
    marker_path = str(marker)

    def step(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        try:
            os.close(os.open(marker_path, os.O_CREAT | os.O_EXCL))
            rival()
        except FileExistsError:
            pass
        yield from batches

    return spark.createDataFrame(rows, SCHEMA).coalesce(1).mapInPandas(step, SCHEMA)


def create(spark: SparkSession, path: Path, rows: list[Row], **props: str) -> None:
    writer = spark.createDataFrame(rows, SCHEMA).write.format("strata").partitionBy("p")
    writer.save(str(path))
    for k, v in props.items():
        spark.sql(f"ALTER TABLE strata.`{path}` SET TBLPROPERTIES ('{k}' = '{v}')")


def test_v2_writes_with_txn_options_are_idempotent(spark: SparkSession) -> None:
    """Finding 1: writeTo(...).option(txnAppId/txnVersion) ran twice committed twice; an older version too."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.txn")
    spark.sql("DROP TABLE IF EXISTS strata.txn.idem")
    spark.sql("CREATE TABLE strata.txn.idem (id BIGINT, p STRING) USING strata")
    df = spark.createDataFrame([(1, "a"), (2, "b")], SCHEMA)
    for version in ("1", "1", "0"):
        df.writeTo("strata.txn.idem").option("txnAppId", "etl").option("txnVersion", version).append()
    assert sorted(tuple(r) for r in spark.table("strata.txn.idem").collect()) == [(1, "a"), (2, "b")]
    df.writeTo("strata.txn.idem").option("txnAppId", "etl").option("txnVersion", "2").append()
    assert spark.table("strata.txn.idem").count() == 4

    # SQL takes the pair from the session, as delta-spark's spark.databricks.delta.write.txnAppId does.
    spark.conf.set("spark.strata.txnAppId", "sql-job")
    spark.conf.set("spark.strata.txnVersion", "7")
    try:
        spark.sql("INSERT INTO strata.txn.idem VALUES (10, 'z')")
        spark.sql("INSERT INTO strata.txn.idem VALUES (10, 'z')")
    finally:
        spark.conf.unset("spark.strata.txnAppId")
        spark.conf.unset("spark.strata.txnVersion")
    assert spark.table("strata.txn.idem").where("id = 10").count() == 1
    spark.sql("DROP TABLE strata.txn.idem")


def test_idempotence_is_checked_against_a_rival_commit_inside_the_commit(spark: SparkSession, tmp_path: Path) -> None:
    """A run of the same application that commits while this one runs: ours finds it and commits nothing."""
    path = tmp_path / "t"
    create(spark, path, [(1, "a")])
    for version, path_write in ((5, True), (7, False)):
        def rival(v: int = version) -> None:
            write_deltalake(str(path), arrow([(100, "a")]), mode="append", partition_by=["p"],
                            commit_properties=CommitProperties(app_transactions=[Transaction("nightly", v)]))

        df = with_rival(spark, [(200, "b")], tmp_path / f"marker-{version}", rival)
        with strata.errors.translate():
            if path_write:
                df.write.format("strata").mode("append").option("txnAppId", "nightly") \
                    .option("txnVersion", str(version)).save(str(path))
            else:
                df.writeTo(f"strata.`{path}`").option("txnAppId", "nightly").option("txnVersion", str(version)).append()
    # The rival's rows (one per run), none of ours: each time, our version of "nightly" was committed meanwhile.
    assert rows_of(spark, path) == [(1, "a"), (100, "a"), (100, "a")]
    assert delta_rs_rows(path) == rows_of(spark, path)
    # Our job's files were deleted, not left behind.
    assert not [f for f in path.rglob("*.parquet") if "p=b" in str(f)]


def test_overwrite_from_a_read_of_the_same_table_conflicts_with_a_concurrent_append(
        spark: SparkSession, tmp_path: Path) -> None:
    """Finding 2: read version N, another writer appends, then overwrite: the appended rows vanished silently."""
    path = tmp_path / "t"
    create(spark, path, [(1, "a"), (2, "a"), (3, "b")])
    df = spark.read.format("strata").load(str(path)).filter("id > 1")
    write_deltalake(str(path), arrow([(9, "a")]), mode="append", partition_by=["p"])
    with pytest.raises(strata.ConcurrentModificationError) as err:
        with strata.errors.translate():
            df.write.format("strata").mode("overwrite").save(str(path))
    assert "ConcurrentAppendException" in (err.value.jvm_class or "")
    assert rows_of(spark, path) == [(1, "a"), (2, "a"), (3, "b"), (9, "a")]

    # The same through SQL (V2): INSERT OVERWRITE from a SELECT of the table read before the rival append.
    v2 = spark.table(f"strata.`{path}`").filter("id > 1")
    v2.collect()
    write_deltalake(str(path), arrow([(10, "b")]), mode="append", partition_by=["p"])
    with pytest.raises(strata.ConcurrentModificationError):
        with strata.errors.translate():
            v2.writeTo(f"strata.`{path}`").overwritePartitions()
    assert rows_of(spark, path) == [(1, "a"), (2, "a"), (3, "b"), (9, "a"), (10, "b")]

    # Nothing in between: the same write commits, and equals its input.
    df = spark.read.format("strata").load(str(path)).filter("id > 1")
    df.write.format("strata").mode("overwrite").save(str(path))
    assert rows_of(spark, path) == [(2, "a"), (3, "b"), (9, "a"), (10, "b")]
    # A read pinned by time travel is a deliberate choice (restore): it does not conflict.
    old = spark.read.format("strata").option("versionAsOf", 0).load(str(path))
    old.write.format("strata").mode("overwrite").save(str(path))
    assert rows_of(spark, path) == [(1, "a"), (2, "a"), (3, "b")]


def test_append_that_reads_other_partitions_is_not_a_conflict(spark: SparkSession, tmp_path: Path) -> None:
    """Read-then-write is judged by what the input read: an append into another partition does not conflict."""
    path = tmp_path / "t"
    create(spark, path, [(1, "a"), (2, "b")])
    df = spark.read.format("strata").load(str(path)).filter("p = 'a'").selectExpr("id + 10 AS id", "'c' AS p")
    write_deltalake(str(path), arrow([(5, "b")]), mode="append", partition_by=["p"])
    df.write.format("strata").mode("append").save(str(path))
    assert rows_of(spark, path) == [(1, "a"), (2, "b"), (5, "b"), (11, "c")]


@pytest.mark.parametrize("isolation", ["serializable", "snapshot"])
def test_replace_where_while_another_engine_compacts_the_same_files(
        spark: SparkSession, tmp_path: Path, isolation: str) -> None:
    """Finding 3: the compacted rows came back after the overwrite (removes with dataChange=false were ignored)."""
    path = tmp_path / "t"
    create(spark, path, [(1, "a"), (2, "b")], **{"strata.isolationLevel": isolation})
    spark.createDataFrame([(3, "a")], SCHEMA).write.format("strata").mode("append").save(str(path))
    before = rows_of(spark, path)

    def rival() -> None:
        DeltaTable(str(path)).optimize.compact()

    df = with_rival(spark, [(7, "a")], tmp_path / "marker", rival)
    with pytest.raises(strata.ConcurrentModificationError) as err:
        with strata.errors.translate():
            df.write.format("strata").mode("overwrite").option("replaceWhere", "p = 'a'").save(str(path))
    assert "ConcurrentDeleteDeleteException" in (err.value.jvm_class or "")
    last = commits(path)[-1]
    assert any("remove" in a and not a["remove"]["dataChange"] for a in last), "the rival compacted"
    assert rows_of(spark, path) == before == delta_rs_rows(path)
    # Retried on the compacted table, the replace commits and replaces exactly p = 'a'.
    spark.createDataFrame([(7, "a")], SCHEMA).write.format("strata").mode("overwrite") \
        .option("replaceWhere", "p = 'a'").save(str(path))
    assert rows_of(spark, path) == [(2, "b"), (7, "a")] == delta_rs_rows(path)


def test_schema_replacement_conflicts_with_a_concurrent_append_even_under_snapshot_isolation(
        spark: SparkSession, tmp_path: Path) -> None:
    """Finding 8: a metadata change did not conflict with a concurrent append (rows of the old schema slipped in)."""
    path = tmp_path / "t"
    create(spark, path, [(1, "a")], **{"strata.isolationLevel": "snapshot"})

    def rival() -> None:
        write_deltalake(str(path), arrow([(5, "a")]), mode="append", partition_by=["p"])

    df = with_rival(spark, [(9, "z")], tmp_path / "marker", rival).selectExpr("id", "p", "'new' AS extra")
    with pytest.raises(strata.ConcurrentModificationError) as err:
        with strata.errors.translate():
            df.write.format("strata").mode("overwrite").option("overwriteSchema", "true").save(str(path))
    assert "MetadataChangedException" in (err.value.jvm_class or "")
    assert rows_of(spark, path) == [(1, "a"), (5, "a")] == delta_rs_rows(path)


def test_ctas_refuses_a_table_that_exists(spark: SparkSession, tmp_path: Path) -> None:
    """CREATE TABLE AS SELECT never replaces a table, even one another engine created at that location."""
    path = tmp_path / "t"
    write_deltalake(str(path), arrow([(1, "a")]))
    with pytest.raises(Exception, match="already exists"):
        spark.sql(f"CREATE TABLE strata.`{path}` USING strata AS SELECT 2L AS id, 'b' AS p")
    assert rows_of(spark, path) == [(1, "a")]


def test_commit_info_carries_one_txn_id_per_transaction(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "t"
    create(spark, path, [(1, "a")])
    spark.createDataFrame([(2, "a")], SCHEMA).write.format("strata").mode("append").save(str(path))
    ids = [a["commitInfo"]["txnId"] for c in commits(path) for a in c if "commitInfo" in a]
    assert len(ids) == len(set(ids)) == len(commits(path))
