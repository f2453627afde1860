"""A table's log replaced under a state Strata holds (issue 47): a directory put back from a copy, a table deleted and
created again with another schema, a backup older than the held version written on past it. Each time another engine
(delta-rs) writes the new history, and Strata, on the driver's state and on the distributed state, must read what the
log now says, as delta-spark and delta-rs do, and its next commit's checkpoint must hold every live file of the new
history (checked against a replay of the JSON commits made here, independent of every engine)."""
from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import PostCommitHookProperties, write_deltalake
from pyspark.sql import SparkSession

from delta_spark_peer import Peer
from table_reads import delta_rs_tuples, strata_tuples

DISTRIBUTED = "spark.strata.state.distributedThreshold.files"


@contextmanager
def state_path(spark: SparkSession, which: str) -> Iterator[None]:
    """Strata's reads and appends on the driver's state, or on the distributed state (the threshold at 0, as for a
    table above the default one)."""
    if which == "distributed":
        spark.conf.set(DISTRIBUTED, "0")
    try:
        yield
    finally:
        spark.conf.unset(DISTRIBUTED)


def jvm(spark: SparkSession) -> Any:
    return spark.sparkContext._jvm


def replayed_files(path: Path) -> set[str]:
    """The live files of the latest version by replaying every JSON commit (adds, then removes hiding them)."""
    live: set[str] = set()
    commits = sorted(p for p in (path / "_delta_log").glob("*.json") if p.name[:-5].isdigit())
    for commit in commits:
        for line in commit.read_text(encoding="utf-8").splitlines():
            action = json.loads(line)
            if "add" in action:
                live.add(action["add"]["path"])
            elif "remove" in action:
                live.discard(action["remove"]["path"])
    return live


def checkpoint_files(path: Path, version: int) -> set[str]:
    """The add paths of version `version`'s checkpoint (every part)."""
    parts = sorted((path / "_delta_log").glob(f"{version:020d}.checkpoint*.parquet"))
    assert parts, f"no checkpoint of version {version} in {path}"
    return {r["add"]["path"] for p in parts for r in pq.read_table(p, columns=["add"]).to_pylist() if r["add"]}


def all_read(spark: SparkSession, peer: Peer, path: Path, columns: list[str], expected: list[tuple[Any, ...]]) -> None:
    """Strata (the session's state path), delta-spark and delta-rs read exactly `expected`."""
    assert strata_tuples(spark, path, columns) == expected, "Strata"
    assert delta_rs_tuples(path, columns) == expected, "delta-rs"
    theirs = sorted(tuple(json.loads(r)[c] for c in columns) for r in peer.read(path)[0])
    assert theirs == expected, "delta-spark"


def strata_append(spark: SparkSession, path: Path, rows: list[tuple[Any, ...]], schema: str) -> None:
    spark.createDataFrame(rows, schema).write.format("strata").mode("append").save(str(path))


# delta-rs checkpoints by itself (at version 4 of a table with interval 5): a checkpoint newer than Strata's held
# state makes any reader start over from it, and would hide what these tests are about.
NO_CHECKPOINT = PostCommitHookProperties(create_checkpoint=False)


def rival_write(path: Path, rows: dict[str, list[Any]], mode: str = "append", **options: Any) -> None:
    """delta-rs commits the next version (or creates the table), as another process would, without a checkpoint."""
    write_deltalake(str(path), pa.table(rows), mode=mode,  # type: ignore[call-overload]
                    post_commithook_properties=NO_CHECKPOINT, **options)


def checkpointed_after(spark: SparkSession, path: Path, version: int, which: str, append: Callable[[], None]) -> None:
    """`append` (a Strata blind append) lands `version`, whose checkpoint is due: the checkpoint (by Spark jobs on
    the distributed path, which builds no file state on the driver) holds exactly the live files the JSON commits
    give."""
    assert not list((path / "_delta_log").glob("*.checkpoint*")), "a checkpoint before Strata's"
    built = jvm(spark).io.strata.log.Snapshot.fileStatesBuilt()
    with state_path(spark, which):
        append()
        jvm(spark).io.strata.state.DistributedCheckpoint.awaitBackground()
    if which == "distributed":
        assert jvm(spark).io.strata.log.Snapshot.fileStatesBuilt() == built, "the distributed path built a file state"
    assert checkpoint_files(path, version) == replayed_files(path)


def history_then_copy(spark: SparkSession, which: str, path: Path, copy: Path, interval: int) -> None:
    """Version 0 (id, p partitioned, `delta.checkpointInterval` = interval), version 1 (rows 1/a, 2/b) appended on the
    state path `which`, the table copied aside (keeping modification times, as cp -a does), then version 2 (DELETE of
    p = 'a') on the driver's state, as every DML."""
    spark.sql(f"CREATE TABLE strata.`{path}` (id BIGINT, p STRING) USING strata PARTITIONED BY (p) "
              f"TBLPROPERTIES ('delta.checkpointInterval' = '{interval}')")
    with state_path(spark, which):
        strata_append(spark, path, [(1, "a"), (2, "b")], "id long, p string")  # version 1
    shutil.copytree(path, copy)
    spark.sql(f"DELETE FROM strata.`{path}` WHERE p = 'a'")  # version 2


def read_on(spark: SparkSession, which: str, path: Path, columns: list[str]) -> list[tuple[Any, ...]]:
    with state_path(spark, which):
        return strata_tuples(spark, path, columns)


@pytest.mark.parametrize("which", ["driver", "distributed"])
def test_a_copy_put_back_and_written_on_at_the_held_version(
        spark: SparkSession, peer: Peer, tmp_path: Path, which: str) -> None:
    path, copy = tmp_path / "t", tmp_path / "copy"
    cols = ["id", "p"]
    history_then_copy(spark, which, path, copy, interval=3)
    assert read_on(spark, which, path, cols) == [(2, "b")]  # held (cached on the distributed path)
    all_read(spark, peer, path, cols, [(2, "b")])

    shutil.rmtree(path)
    shutil.copytree(copy, path)
    rival_write(path, {"id": pa.array([3], pa.int64()), "p": ["c"]})  # version 2 again, another history
    with state_path(spark, which):
        all_read(spark, peer, path, cols, [(1, "a"), (2, "b"), (3, "c")])

    checkpointed_after(spark, path, 3, which, lambda: strata_append(spark, path, [(4, "d")], "id long, p string"))
    expected = [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    with state_path(spark, which):
        all_read(spark, peer, path, cols, expected)
    # Without the JSON commits the checkpoint alone must give the table (what log cleanup would leave).
    for v in range(3):
        (path / "_delta_log" / f"{v:020d}.json").unlink()
    assert delta_rs_tuples(path, cols) == expected
    assert read_on(spark, "driver", path, cols) == expected


@pytest.mark.parametrize("which", ["driver", "distributed"])
def test_a_table_deleted_and_created_again_with_another_schema(
        spark: SparkSession, peer: Peer, tmp_path: Path, which: str) -> None:
    path = tmp_path / "t"
    spark.sql(f"CREATE TABLE strata.`{path}` (id BIGINT, p STRING) USING strata PARTITIONED BY (p) "
              "TBLPROPERTIES ('delta.checkpointInterval' = '3')")
    with state_path(spark, which):
        strata_append(spark, path, [(1, "a"), (2, "b")], "id long, p string")  # version 1
        strata_append(spark, path, [(5, "a")], "id long, p string")  # version 2
        assert strata_tuples(spark, path, ["id", "p"]) == [(1, "a"), (2, "b"), (5, "a")]

    # Another engine drops the table and makes another at the path, to the same version number.
    shutil.rmtree(path)
    cols = ["id", "p", "v"]
    schema = {"id": pa.array([10], pa.int64()), "p": ["x"], "v": ["first"]}
    rival_write(path, schema, mode="error", partition_by=["p"],
                configuration={"delta.checkpointInterval": "3"})  # version 0
    rival_write(path, {"id": pa.array([11], pa.int64()), "p": ["x"], "v": ["second"]})  # version 1
    rival_write(path, {"id": pa.array([12], pa.int64()), "p": ["y"], "v": ["third"]})  # version 2
    with state_path(spark, which):
        all_read(spark, peer, path, cols, [(10, "x", "first"), (11, "x", "second"), (12, "y", "third")])

    checkpointed_after(spark, path, 3, which,
                       lambda: strata_append(spark, path, [(13, "y", "fourth")], "id long, p string, v string"))
    with state_path(spark, which):
        all_read(spark, peer, path, cols,
                 [(10, "x", "first"), (11, "x", "second"), (12, "y", "third"), (13, "y", "fourth")])


@pytest.mark.parametrize("which", ["driver", "distributed"])
def test_a_backup_older_than_the_held_version_written_on_past_it(
        spark: SparkSession, peer: Peer, tmp_path: Path, which: str) -> None:
    path, copy = tmp_path / "t", tmp_path / "copy"
    cols = ["id", "p"]
    history_then_copy(spark, which, path, copy, interval=5)
    with state_path(spark, which):
        strata_append(spark, path, [(6, "b")], "id long, p string")  # version 3
        assert strata_tuples(spark, path, cols) == [(2, "b"), (6, "b")]  # held at version 3

    shutil.rmtree(path)
    shutil.copytree(copy, path)  # back to version 1
    rival_write(path, {"id": pa.array([3], pa.int64()), "p": ["c"]})  # version 2
    with state_path(spark, which):  # older than the held version 3: still the log's version 2
        all_read(spark, peer, path, cols, [(1, "a"), (2, "b"), (3, "c")])
    rival_write(path, {"id": pa.array([7], pa.int64()), "p": ["a"]})  # version 3, the held number
    rival_write(path, {"id": pa.array([8], pa.int64()), "p": ["b"]})  # version 4, past it
    expected = [(1, "a"), (2, "b"), (3, "c"), (7, "a"), (8, "b")]
    with state_path(spark, which):
        all_read(spark, peer, path, cols, expected)

    checkpointed_after(spark, path, 5, which, lambda: strata_append(spark, path, [(9, "d")], "id long, p string"))
    with state_path(spark, which):
        all_read(spark, peer, path, cols, sorted(expected + [(9, "d")]))
