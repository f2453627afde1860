"""Path reads planned from the log (issue 23): `inputFiles()` of a filtered `format("strata").load(path)` lists the
files its filters keep (also filters mixing partition and data columns), as delta-spark's does on the same table,
and the rows are delta-spark's; catalog reads show
the kept files in EXPLAIN (Spark's `inputFiles()` lists no V2 scan's files)."""
from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from delta_spark_peer import Peer


def local(files: list[str]) -> set[str]:
    """Paths of file URIs, whatever their spelling (`file:/x`, `file:///x`)."""
    return {unquote(urlparse(f).path) for f in files}


@pytest.fixture(scope="module")
def table(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4 partitions (p = 0..3) of 5 files each, file k holding ids [100 k, 100 k + 99]."""
    path = tmp_path_factory.mktemp("planning") / "t"
    (spark.range(0, 2000, 1, 1)
     .select("id", (F.col("id") / 500).cast("int").alias("p"), F.concat(F.lit("v"), F.col("id")).alias("v"))
     .repartitionByRange(20, "id").write.format("strata").partitionBy("p").save(str(path)))
    return path


@pytest.mark.parametrize("condition, count", [
    ("p = 2", 5), ("p = 1 AND id = 777", 1), ("id = 1234", 1), ("p IN (0, 3) AND id >= 1900", 1), ("p = 7", 0),
    ("v = 'v5'", 1),
])
def test_input_files_are_delta_sparks(spark: SparkSession, peer: Peer, table: Path, condition: str,
                                      count: int) -> None:
    df = spark.read.format("strata").load(str(table)).where(condition)
    ours = local(df.inputFiles())
    assert len(ours) == count
    assert ours == local(peer.input_files(table, condition))
    assert_rows_are_delta_sparks(peer, table, condition, sorted(r.id for r in df.select("id").collect()))


@pytest.mark.parametrize("condition, count, as_delta_spark", [
    ("v = 'v1500' OR p = 0", 6, False), ("p = 1 OR id = 1999", 6, False),
    ("(p = 0 AND id < 100) OR (p = 3 AND id > 1950)", 2, True),
])
def test_a_filter_mixing_partition_and_data_columns_prunes_files(spark: SparkSession, peer: Peer, table: Path,
                                                                condition: str, count: int,
                                                                as_delta_spark: bool) -> None:
    """Spark hands a path read's file scan no filter of an OR across partition and data columns; Strata skips files
    by it anyway (partition values as exact bounds). delta-spark 4.4 keeps more files for such an OR (its data
    skipping does not use partition values); where it splits the filter into partition and data parts (the last
    case) it keeps the same files."""
    df = spark.read.format("strata").load(str(table)).where(condition)
    ours = local(df.inputFiles())
    theirs = local(peer.input_files(table, condition))
    assert len(ours) == count
    assert ours == theirs if as_delta_spark else ours < theirs
    assert_rows_are_delta_sparks(peer, table, condition, sorted(r.id for r in df.select("id").collect()))


def assert_rows_are_delta_sparks(peer: Peer, table: Path, condition: str, ids: list[int]) -> None:
    theirs = peer.call("query", sql=f"SELECT id FROM delta.`{table}` WHERE {condition}")["rows"]
    assert ids == sorted(json.loads(r)["id"] for r in theirs)


def test_catalog_reads_show_the_kept_files_in_explain(spark: SparkSession, table: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    df = spark.table(f"strata.`{table}`").where("p = 1 AND id = 777")
    df.explain()
    assert "Location: LogFileIndex(1 paths)" in capsys.readouterr().out
    assert df.inputFiles() == []  # Spark's Dataset.inputFiles lists V1 relations' files only
    assert [r.id for r in df.collect()] == [777]
