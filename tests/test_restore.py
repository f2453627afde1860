"""restore, checkpoint and cleanup_log against the reference engines: after each procedure the delta-spark 4.4.0 peer
(one application for the module, tests/delta_spark_peer.py) and delta-rs read the same rows as Strata at every version
still in the log; delta-spark RESTOREs tables Strata wrote and restored, and Strata restores tables delta-spark wrote.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder
from pyspark.sql import SparkSession

import strata
from delta_spark_peer import Peer, start_peer
from test_dml_delta_spark import _plain

peer = pytest.fixture(scope="module")(start_peer)

COLUMNS = ["id", "v"]


def strata_rows(spark: SparkSession, path: Path, version: int | None = None) -> list[str]:
    reader = spark.read.format("strata")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return sorted(reader.load(str(path)).select(*COLUMNS).toJSON().collect())


def delta_rs_rows(path: Path) -> list[tuple[Any, ...]]:
    """The latest version as delta-rs reads it (DataFusion: applies deletion vectors)."""
    reader = QueryBuilder().register("t", DeltaTable(str(path))).execute("SELECT * FROM t")
    return sorted((tuple(_plain(r[c]) for c in COLUMNS) for r in pa.table(reader.read_all()).to_pylist()), key=repr)


def strata_tuples(spark: SparkSession, path: Path) -> list[tuple[Any, ...]]:
    df = spark.read.format("strata").load(str(path)).select(*COLUMNS)
    return sorted((tuple(_plain(v) for v in r) for r in df.collect()), key=repr)


def call(spark: SparkSession, sql: str) -> dict[str, Any]:
    return spark.sql(sql).collect()[0].asDict()


def latest_version(path: Path) -> int:
    return max(int(f.name[:-5]) for f in (path / "_delta_log").glob("*.json"))


def assert_same_everywhere(spark: SparkSession, peer: Peer, path: Path, versions: list[int]) -> None:
    """delta-spark reads every version in `versions` as Strata does; delta-rs reads the latest alike."""
    mine = [strata_rows(spark, path, v) for v in versions]
    assert peer.read(path, versions=versions) == mine
    assert DeltaTable(str(path)).version() == versions[-1] == latest_version(path)
    assert delta_rs_rows(path) == strata_tuples(spark, path)


def test_strata_restore_read_alike_and_delta_spark_restores_it(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = f"strata.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING) USING strata TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'c')")  # v1
    spark.sql(f"DELETE FROM {t} WHERE id = 2")  # v2: a deletion vector
    spark.sql(f"INSERT OVERWRITE {t} VALUES (9, 'z')")  # v3
    r = call(spark, f"CALL strata.system.restore(table => '{path}', version => 2)")
    assert (r["version"], r["restored_version"], r["files_removed"]) == (4, 2, 1) and r["files_added"] >= 1
    assert strata_rows(spark, path) == strata_rows(spark, path, 2)
    assert_same_everywhere(spark, peer, path, [2, 4])
    # delta-spark restores the table Strata restored; Strata reads the result as delta-spark does
    peer.call("sql", statements=[f"RESTORE TABLE delta.`{path}` TO VERSION AS OF 1"])
    assert strata_rows(spark, path) == strata_rows(spark, path, 1)
    assert_same_everywhere(spark, peer, path, [5])
    history = spark.sql(f"CALL strata.system.history('{path}')").collect()
    assert [(h.operation, h.operationParameters.get("version")) for h in history[:2]] == [("RESTORE", "1"),
                                                                                          ("RESTORE", "2")]
    assert history[1].operationMetrics["numRestoredFiles"] == str(r["files_added"])


def test_strata_restores_what_delta_spark_wrote(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    path = tmp_path / "d"
    t = f"delta.`{path}`"
    peer.call("sql", statements=[
        f"CREATE TABLE {t} (id BIGINT, v STRING) USING delta TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",
        f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'c')",  # v1
        f"DELETE FROM {t} WHERE id = 1",  # v2: a deletion vector
        f"UPDATE {t} SET v = 'x' WHERE id = 3",  # v3: another vector, a new file
        f"ALTER TABLE {t} ADD COLUMNS (w INT)",  # v4
    ])
    r = strata.Table.for_path(spark, str(path)).restore(version=2)  # the Python API: the same CALL
    assert (r.version, r.restored_version) == (5, 2)
    assert spark.read.format("strata").load(str(path)).columns == COLUMNS  # the schema of version 2
    assert_same_everywhere(spark, peer, path, [2, 5])
    assert strata_rows(spark, path) == strata_rows(spark, path, 2) == ['{"id":2,"v":"b"}', '{"id":3,"v":"c"}']


def test_delta_spark_reads_after_checkpoint_and_cleanup_log(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    path = tmp_path / "c"
    t = f"strata.`{path}`"
    # (delta-spark time travels only within delta.deletedFileRetentionDuration of the commit times)
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING) USING strata TBLPROPERTIES ('delta.checkpointInterval' = '3', "
              "'delta.deletedFileRetentionDuration' = 'interval 365 days')")
    for i in range(1, 6):
        spark.sql(f"INSERT INTO {t} VALUES ({i}, 'v{i}')")  # v1..v5; checkpoint at 3
    c = call(spark, f"CALL strata.system.checkpoint('{path}')")
    assert c["version"] == 5 and Path(c["checkpoint_file"].removeprefix("file:")).exists()
    # versions 0..4 committed 40 days ago (commit times are the files' modification times), 5 now
    old = time.time() - 40 * 86400
    for v in range(5):
        os.utime(path / "_delta_log" / f"{v:020d}.json", (old + v, old + v))
    r = strata.Table.for_path(spark, str(path)).cleanup_log()
    assert r == strata.LogCleanupResult(commits_deleted=3, checkpoints_deleted=0, oldest_version=3)
    assert sorted(f.name for f in (path / "_delta_log").glob("*.json"))[0] == f"{3:020d}.json"
    assert_same_everywhere(spark, peer, path, [3, 5])
    peer.send("read", path=str(path), versions=[2])
    assert "error" in peer.receive()  # delta-spark cannot rebuild a cleaned-up version either
    # delta-spark writes on top: version 6 is a checkpoint, after which delta-spark cleans the log up itself (its rule
    # deletes everything before checkpoint 5, since commit 4 is expired); then it restores to a retained version
    peer.call("sql", statements=[f"INSERT INTO delta.`{path}` VALUES (6, 'v6')",
                                 f"RESTORE TABLE delta.`{path}` TO VERSION AS OF 5"])
    assert strata_rows(spark, path) == strata_rows(spark, path, 5)
    assert_same_everywhere(spark, peer, path, [7])
    with pytest.raises(Exception, match="Version 3 of .* is no longer available"):
        strata_rows(spark, path, 3)
    assert call(spark, f"CALL strata.system.cleanup_log('{path}')")["oldest_version"] == 5
