"""Row tracking fields survive a Strata checkpoint (issue 23): delta-spark makes a table with
`delta.enableRowTracking`, Strata's log core checkpoints it, and delta-spark reads the same `_metadata.row_id` and
`_metadata.row_commit_version` from the checkpoint as from the commits (and hands out fresh row ids after it).
Strata cannot write such a table (row tracking is a writer feature it does not follow), so its CALL refuses to
checkpoint it; the log core's checkpoint is what a Strata process would write for it."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from delta_spark_peer import Peer


def row_ids(peer: Peer, path: Path) -> list[dict[str, Any]]:
    rows = peer.call("query", sql=f"SELECT id, v, _metadata.row_id AS row_id, "
                                  f"_metadata.row_commit_version AS row_commit_version FROM delta.`{path}`")["rows"]
    return sorted((json.loads(r) for r in rows), key=lambda r: int(r["id"]))


def test_row_ids_are_the_same_after_a_strata_checkpoint(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    path = tmp_path / "tracked"
    t = f"delta.`{path}`"
    peer.call("sql", statements=[
        f"CREATE TABLE {t} (id BIGINT, v STRING) USING delta TBLPROPERTIES ('delta.enableRowTracking' = 'true', "
        "'delta.checkpointInterval' = '1000')",
        f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'c')",
        f"INSERT INTO {t} VALUES (4, 'd'), (5, 'e')",
        f"UPDATE {t} SET v = 'B' WHERE id = 2",  # rewrites a file: its rows keep their ids (materialized)
        f"DELETE FROM {t} WHERE id = 5",
    ])
    before = row_ids(peer, path)
    assert [r["id"] for r in before] == [1, 2, 3, 4]
    assert len({r["row_id"] for r in before}) == 4

    with pytest.raises(Exception, match="rowTracking"):
        spark.sql(f"CALL strata.system.checkpoint('{path}')").collect()

    jvm = spark.sparkContext._jvm
    assert jvm is not None
    conf = spark._jsparkSession.sessionState().newHadoopConf()
    log = jvm.io.strata.log.TableLog.forPath(jvm.org.apache.hadoop.fs.Path(str(path)), conf)
    snapshot = log.snapshot()
    version = int(snapshot.version())
    log.checkpoint(snapshot)
    checkpoint = path / "_delta_log" / f"{version:020d}.checkpoint.parquet"
    adds = [a for a in pq.read_table(checkpoint).column("add").to_pylist() if a is not None]
    assert adds and all(a["baseRowId"] is not None and a["defaultRowCommitVersion"] is not None for a in adds)
    # Only the checkpoint is left to read the versions up to it from (its own commit stays, as log cleanup leaves it).
    for v in range(version):
        (path / "_delta_log" / f"{v:020d}.json").unlink()

    peer.call("sql", statements=[f"INSERT INTO {t} VALUES (6, 'f')"])  # delta-spark loads the checkpoint
    after = row_ids(peer, path)
    assert after[:4] == before
    assert len({r["row_id"] for r in after}) == 5  # the new row's id is fresh: the high-water mark survived too
