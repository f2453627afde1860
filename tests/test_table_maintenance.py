"""The Python Table API's maintenance methods (issue 15): typed results of the procedures they CALL, argument checks
before any SQL runs, and the same calls on a catalog table (Table.for_name). The procedures' semantics against
delta-spark are tested in test_optimize.py, test_vacuum.py and test_restore.py; Spark Connect in test_connect.py."""
from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession

import strata


def ids(table: strata.Table) -> list[int]:
    return sorted(r[0] for r in table.to_df().select("id").collect())


def small_files(spark: SparkSession, path: Path, batches: int = 4) -> strata.Table:
    for i in range(batches):
        strata.write(spark.createDataFrame([(i, f"p{i % 2}")], "id long, p string"), str(path),
                     "append" if i else "error", partition_by=["p"])
    return strata.Table.for_path(spark, path)


def test_typed_results_of_the_maintenance_calls(spark: SparkSession, table_path: Path) -> None:
    t = small_files(spark, table_path)
    assert t.version() == 3
    detail = t.detail()
    assert isinstance(detail, strata.TableDetail)
    assert (detail.version, detail.num_files, detail.partition_columns, detail.format) == (3, 4, ("p",), "delta")
    assert detail.location.rstrip("/").endswith(str(table_path)) and detail.size_in_bytes > 0

    optimized = t.optimize()
    assert isinstance(optimized, strata.OptimizeResult)
    assert (optimized.files_removed, optimized.files_added, optimized.groups_conflicted) == (4, 2, 0)
    assert optimized.versions and all(v > 3 for v in optimized.versions)
    assert ids(t) == [0, 1, 2, 3] and t.detail().num_files == 2
    assert t.history(limit=1).first()["operation"] == "OPTIMIZE"

    dry = t.vacuum(retention_hours=None, dry_run=True)
    assert isinstance(dry, strata.VacuumResult) and dry.dry_run
    assert dry.files_deleted == len(dry.paths) == 0  # the compacted files are tombstones younger than 7 days

    restored = t.restore(version=1)
    assert isinstance(restored, strata.RestoreResult)
    assert restored.restored_version == 1 and restored.version == t.version()
    assert (restored.files_removed, restored.files_added) == (2, 2)
    assert ids(t) == [0, 1]
    assert sorted(DeltaTable(str(table_path)).to_pyarrow_table().column("id").to_pylist()) == [0, 1]

    assert t.checkpoint() == t.version()
    assert (table_path / "_delta_log" / f"{t.version():020d}.checkpoint.parquet").exists()
    cleaned = t.cleanup_log()
    assert isinstance(cleaned, strata.LogCleanupResult)
    assert (cleaned.commits_deleted, cleaned.oldest_version) == (0, 0)  # nothing is 30 days old


def test_named_tables_take_the_same_calls(spark: SparkSession) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.maint")
    spark.sql("DROP TABLE IF EXISTS strata.maint.events")
    spark.sql("CREATE TABLE strata.maint.events (id BIGINT, p STRING) USING strata PARTITIONED BY (p)")
    for i in range(3):
        spark.sql(f"INSERT INTO strata.maint.events VALUES ({i}, 'a')")
    t = strata.Table.for_name(spark, "strata.maint.events")
    assert t.version() == 3 and t.detail().num_files == 3
    assert t.optimize(where="p = 'a'").files_removed == 3
    assert t.detail().num_files == 1 and ids(t) == [0, 1, 2]
    assert [r.version for r in t.history(limit=2).collect()] == [4, 3]
    assert t.restore(version=2).restored_version == 2 and ids(t) == [0, 1]


def test_bad_arguments_are_refused_before_any_sql(spark: SparkSession, table_path: Path) -> None:
    t = small_files(spark, table_path, batches=2)
    with pytest.raises(strata.InvalidOptionError, match="exactly one of version or timestamp"):
        t.restore()
    with pytest.raises(strata.InvalidOptionError, match="exactly one of version or timestamp"):
        t.restore(version=0, timestamp="2026-01-01 00:00:00")
    with pytest.raises(strata.InvalidOptionError, match="version must be a whole number >= 0"):
        t.restore(version=-1)
    with pytest.raises(strata.InvalidOptionError, match="retention_hours must be a number of hours >= 0"):
        t.vacuum(retention_hours=-1)
    with pytest.raises(strata.InvalidOptionError, match="dry_run must be True or False"):
        t.vacuum(dry_run="yes")  # type: ignore[arg-type]
    with pytest.raises(strata.InvalidOptionError, match="zorder_by must be a column name or a non-empty list"):
        t.optimize(zorder_by=[])
    with pytest.raises(strata.InvalidOptionError, match="target_file_size must be a number of bytes > 0"):
        t.optimize(target_file_size=0)
    assert t.version() == 1  # nothing was committed


def test_missing_table_is_typed_for_every_call(spark: SparkSession, table_path: Path) -> None:
    t = strata.Table.for_path(spark, table_path)
    for call in (t.version, t.detail, t.history, t.optimize, t.vacuum, t.checkpoint, t.cleanup_log,
                 lambda: t.restore(version=0)):
        with pytest.raises(strata.TableNotFoundError, match=r"^No Strata/Delta table at "):
            call()
