"""The V1 path write (`df.write.format("strata")...save(path)`) against Spark's own Parquet source.

Every operation whose semantics Spark's Parquet source shares is run on both and compared; every resulting table
is also read by delta-rs (`deltalake`), which must see exactly the rows Strata sees.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

Row = tuple[Any, ...]


def data(spark: SparkSession, start: int, n: int) -> DataFrame:
    return spark.range(start, start + n).select(
        F.col("id"), (F.col("id") % 4).cast("string").alias("p"), (F.col("id") * 0.5).alias("v"))


def spark_rows(df: DataFrame) -> list[Row]:
    return sorted(tuple(r) for r in df.select("id", "p", "v").collect())


def strata_rows(spark: SparkSession, path: Path) -> list[Row]:
    return spark_rows(spark.read.format("strata").load(str(path)))


def parquet_rows(spark: SparkSession, path: Path) -> list[Row]:
    df = spark.read.parquet(str(path))
    return spark_rows(df.withColumn("p", F.col("p").cast("string")))


def delta_rs_rows(path: Path) -> list[Row]:
    table = DeltaTable(str(path)).to_pyarrow_table()
    return sorted(zip(table["id"].to_pylist(), table["p"].to_pylist(), table["v"].to_pylist()))


def test_append_and_overwrite_match_parquet(spark: SparkSession, tmp_path: Path) -> None:
    strata, parquet = tmp_path / "s", tmp_path / "pq"
    steps = [("append", data(spark, 0, 40)), ("append", data(spark, 40, 10)), ("overwrite", data(spark, 100, 7))]
    for mode, df in steps:
        df.write.format("strata").mode(mode).partitionBy("p").save(str(strata))
        df.write.mode(mode).partitionBy("p").parquet(str(parquet))
        assert strata_rows(spark, strata) == parquet_rows(spark, parquet)
        assert delta_rs_rows(strata) == strata_rows(spark, strata)
    assert DeltaTable(str(strata)).version() == 2


def test_dynamic_partition_overwrite_matches_parquet(spark: SparkSession, tmp_path: Path) -> None:
    strata, parquet = tmp_path / "s", tmp_path / "pq"
    data(spark, 0, 40).write.format("strata").partitionBy("p").save(str(strata))
    data(spark, 0, 40).write.partitionBy("p").parquet(str(parquet))
    update = data(spark, 500, 9).where("p IN ('1', '3')")
    update.write.format("strata").mode("overwrite").option("partitionOverwriteMode", "dynamic").save(str(strata))
    update.write.mode("overwrite").option("partitionOverwriteMode", "dynamic").partitionBy("p").parquet(str(parquet))
    assert strata_rows(spark, strata) == parquet_rows(spark, parquet)
    assert delta_rs_rows(strata) == strata_rows(spark, strata)


def test_replace_where(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "s"
    data(spark, 0, 40).write.format("strata").partitionBy("p").save(str(path))
    data(spark, 200, 8).where("p = '2'").write.format("strata").mode("overwrite") \
        .option("replaceWhere", "p = '2'").save(str(path))
    expected = spark_rows(data(spark, 0, 40).where("p <> '2'").union(data(spark, 200, 8).where("p = '2'")))
    assert strata_rows(spark, path) == expected
    assert delta_rs_rows(path) == expected


def test_merge_schema_is_read_by_delta_rs(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "s"
    data(spark, 0, 5).write.format("strata").save(str(path))
    data(spark, 5, 5).withColumn("extra", F.lit("x")).write.format("strata").mode("append") \
        .option("mergeSchema", "true").save(str(path))
    table = DeltaTable(str(path)).to_pyarrow_table()
    assert table.column_names == ["id", "p", "v", "extra"]
    extras = dict(zip(table["id"].to_pylist(), table["extra"].to_pylist()))
    assert extras == {i: (None if i < 5 else "x") for i in range(10)}


@pytest.mark.parametrize("codec", ["snappy", "zstd", "gzip", "lz4", "uncompressed"])
def test_codecs_are_readable_by_delta_rs(spark: SparkSession, tmp_path: Path, codec: str) -> None:
    path = tmp_path / codec
    data(spark, 0, 50).write.format("strata").option("compression", codec).option("maxRecordsPerFile", 20) \
        .save(str(path))
    assert delta_rs_rows(path) == spark_rows(data(spark, 0, 50))
    files = DeltaTable(str(path)).file_uris()
    assert len(files) >= 3
    ext = {"uncompressed": (".parquet",), "gzip": (".gz.parquet",), "lz4": (".lz4.parquet", ".lz4hadoop.parquet")}
    assert all(f.endswith(ext.get(codec, (f".{codec}.parquet",))) for f in files), files


def test_bad_input_commits_nothing(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "s"
    data(spark, 0, 10).write.format("strata").save(str(path))
    with pytest.raises(Exception, match="Unknown option 'replaceWher'. Did you mean 'replaceWhere'"):
        data(spark, 0, 10).write.format("strata").mode("overwrite").option("replaceWher", "p = '1'").save(str(path))
    with pytest.raises(Exception, match="column 'v' is double in the table but string in the data"):
        data(spark, 0, 10).withColumn("v", F.col("v").cast("string")).write.format("strata").mode("append") \
            .save(str(path))
    with pytest.raises(Exception, match="partitionOverwriteMode' has invalid value 'dynamik'"):
        data(spark, 0, 10).write.format("strata").mode("overwrite").option("partitionOverwriteMode", "dynamik") \
            .save(str(path))
    assert DeltaTable(str(path)).version() == 0
    assert strata_rows(spark, path) == spark_rows(data(spark, 0, 10))


def test_delta_rs_reads_through_strata_checkpoints(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "s"
    for k in range(13):  # versions 0..12: a checkpoint at version 10
        data(spark, k * 10, 10).write.format("strata").mode("append").partitionBy("p").save(str(path))
    assert (path / "_delta_log" / "00000000000000000010.checkpoint.parquet").exists()
    assert (path / "_delta_log" / "_last_checkpoint").exists()
    # Without the commits before the checkpoint, a reader must use the checkpoint itself.
    for v in range(10):
        (path / "_delta_log" / f"{v:020d}.json").unlink()
    table = DeltaTable(str(path))
    assert table.version() == 12
    assert delta_rs_rows(path) == spark_rows(data(spark, 0, 130))
    assert delta_rs_rows(path) == strata_rows(spark, path)
    assert sorted(DeltaTable(str(path), version=11).to_pyarrow_table()["id"].to_pylist()) == list(range(120))
