"""The streaming sink end to end: a file source into a Strata table, exactly once across driver deaths.

A query in a child process (tests/streaming_child.py, one JSON file per micro-batch) has its driver JVM killed with
SIGKILL and is started again from its checkpoint (the last time in the test's own Spark application, which runs it to
the end), at chosen points: before a micro-batch's log commit (its files written), between the log commit and Spark's
checkpoint (the batch is replayed on restart), and at random moments of the next batch. The places are deterministic:
the child runs with test-support classes (build/strata-testkit.jar) whose pause point `<point>@<batch>` makes the
driver write a marker and block right before the put of that batch's log commit, or right before Spark records the
committed batch in its checkpoint, and the test kills it then. STRATA_STREAM_KILLS=<n> adds n kills at random moments (the default run does 2 of them, beside 4 at
the fixed points).
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

CHILD = Path(__file__).resolve().parent / "streaming_child.py"
ROWS_PER_FILE = 40
BASE_MTIME = 1_700_000_000


def write_inputs(input_dir: Path, first: int, count: int) -> None:
    """Files first..first+count-1, ROWS_PER_FILE rows each (ids unique); mtimes in file order, so that the file
    source (oldest first, one file per micro-batch) builds the same batches under any checkpoint."""
    input_dir.mkdir(parents=True, exist_ok=True)
    for i in range(first, first + count):
        rows = [{"id": i * ROWS_PER_FILE + j, "p": f"p{j % 3}"} for j in range(ROWS_PER_FILE)]
        tmp = input_dir / f".{i:04d}.json.tmp"
        tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
        os.utime(tmp, (BASE_MTIME + i, BASE_MTIME + i))
        tmp.rename(input_dir / f"{i:04d}.json")


def table_version(table: Path) -> int:
    log = table / "_delta_log"
    return max((int(f.name[:20]) for f in log.glob("*.json")), default=-1) if log.exists() else -1


def commits(table: Path) -> list[list[dict[str, Any]]]:
    return [[json.loads(line) for line in f.read_text().splitlines() if line]
            for f in sorted((table / "_delta_log").glob("*.json"))]


def data_files(table: Path) -> set[str]:
    return {str(p.relative_to(table)) for p in table.rglob("*.parquet") if "_delta_log" not in p.parts}


def wait_for(condition: Callable[[], bool], what: str, child: Child | None = None, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if child is not None and child.proc.poll() is not None:
            pytest.fail(f"the child exited ({child.proc.returncode}) while waiting for {what}:\n{child.log_tail()}")
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}" + (f":\n{child.log_tail()}" if child else ""))
        time.sleep(0.05)


class Child:
    """One run of the streaming query in its own Python process and driver JVM."""

    def __init__(self, work: Path, n: int, **args: Any) -> None:
        self.pid_file = work / f"pid-{n}"
        self.marker = work / f"marker-{n}"
        self.log = work / f"child-{n}.log"
        args.update(pid_file=str(self.pid_file), marker=str(self.marker))
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen([sys.executable, str(CHILD), json.dumps(args)], stdout=out,
                                         stderr=subprocess.STDOUT)

    def log_tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-40:])

    def jvm_pid(self) -> int:
        wait_for(self.pid_file.exists, "the driver's pid", self)
        return int(self.pid_file.read_text())

    def kill_driver(self) -> None:
        """SIGKILL to the driver JVM, then to the Python process that drove it."""
        os.kill(self.jvm_pid(), signal.SIGKILL)
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=60)


def query_id(checkpoint: Path) -> str:
    return str(json.loads((checkpoint / "metadata").read_text().splitlines()[0])["id"])


def assert_exactly_once(spark: SparkSession, table: Path, files: int, app_id: str,
                        batches: int | None = None) -> None:
    """Every input row once; versions 0..n each carry exactly the txn of their micro-batch; no file of a dead
    attempt left; delta-rs reads the same rows. (After a restart Spark's file source may put two files into one
    micro-batch: the number of batches is checked only when given.)"""
    df = spark.read.format("strata").load(str(table))
    expected = set(range(files * ROWS_PER_FILE))
    ids = [r.id for r in df.select("id").collect()]
    assert len(ids) == len(expected) and set(ids) == expected, f"{len(ids)} rows, {len(set(ids))} distinct"
    versions = commits(table)
    if batches is not None:
        assert len(versions) == batches
    for v, actions in enumerate(versions):
        txns = [a["txn"] for a in actions if "txn" in a]
        assert [(t["appId"], t["version"]) for t in txns] == [(app_id, v)], f"version {v}: {txns}"
        info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
        assert info["operation"] == "STREAMING UPDATE" and info["operationParameters"]["epochId"] == str(v)
    dt = DeltaTable(str(table))
    live = {u.split(str(table) + "/", 1)[-1] for u in dt.file_uris()}
    assert data_files(table) == live, f"files no version references: {data_files(table) - live}"
    assert sorted(dt.to_pyarrow_table()["id"].to_pylist()) == sorted(expected)


def test_driver_killed_at_chosen_points_restarts_exactly_once(spark: SparkSession, tmp_path: Path) -> None:
    extra = int(os.environ.get("STRATA_STREAM_KILLS", "0"))
    plan = ["beforeCommit", "afterCommit", "random", "beforeCommit", "afterCommit", "random"] + ["random"] * extra
    files = 14 + 3 * extra  # a random kill comes after at least one commit of its run
    input_dir, table, checkpoint = tmp_path / "in", tmp_path / "t", tmp_path / "cp"
    write_inputs(input_dir, 0, files)
    common = dict(input=str(input_dir), table=str(table), checkpoint=str(checkpoint))
    rng = random.Random(16)
    kills = 0
    orphans_seen = False
    for n, point in enumerate(plan):
        start_version = table_version(table)
        if point == "random":
            child = Child(tmp_path, n, **common)
            # Once this run committed a batch, kill at a random moment of the batches after it.
            wait_for(lambda: table_version(table) > start_version, "a commit", child)
            time.sleep(rng.uniform(0.0, 0.8))
        else:
            batch = start_version + 1  # the next micro-batch to commit (batch ids are the table's versions)
            child = Child(tmp_path, n, pause_at=f"{point}@{batch}", **common)
            wait_for(child.marker.exists, f"{point}@{batch}", child)
            assert child.marker.read_text().startswith(f"{point}@{batch} ")
            expected = start_version + (1 if point == "afterCommit" else 0)
            assert table_version(table) == expected
            if point == "beforeCommit" and start_version >= 0:
                live = {u.split(str(table) + "/", 1)[-1] for u in DeltaTable(str(table)).file_uris()}
                orphans_seen |= bool(data_files(table) - live)  # the batch's files, written, not committed
        child.kill_driver()
        kills += 1
        if table_version(table) >= files - 1:
            break
    assert kills == len(plan), f"the input ran out after {kills} kills"
    assert orphans_seen, "no kill left files of an uncommitted batch behind"
    # The last restart runs in this process (another application, the same checkpoint) until the input is consumed.
    (spark.readStream.schema("id long, p string").option("maxFilesPerTrigger", 1).json(str(input_dir))
     .writeStream.format("strata").partitionBy("p").option("checkpointLocation", str(checkpoint))
     .trigger(availableNow=True).start(str(table)).awaitTermination())
    assert_exactly_once(spark, table, files, query_id(checkpoint))


def run_available_now(spark: SparkSession, input_dir: Path, table: Path, checkpoint: Path, app_id: str) -> None:
    q = (spark.readStream.schema("id long, p string").option("maxFilesPerTrigger", 1).json(str(input_dir))
         .writeStream.format("strata").partitionBy("p").option("txnAppId", app_id)
         .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start(str(table)))
    q.awaitTermination()


def test_new_checkpoint_same_txn_app_id_no_duplicates(spark: SparkSession, tmp_path: Path) -> None:
    input_dir, table = tmp_path / "in", tmp_path / "t"
    write_inputs(input_dir, 0, 3)
    run_available_now(spark, input_dir, table, tmp_path / "cp1", "bronze")
    assert table_version(table) == 2
    write_inputs(input_dir, 3, 2)
    # The checkpoint is lost: a new one replays the source from its start, batches 0-2 again, then 3 and 4.
    run_available_now(spark, input_dir, table, tmp_path / "cp2", "bronze")
    assert_exactly_once(spark, table, 5, "bronze", batches=5)


def test_complete_mode_running_aggregate_read_by_delta_rs(spark: SparkSession, tmp_path: Path) -> None:
    input_dir, table = tmp_path / "in", tmp_path / "agg"
    input_dir.mkdir()
    counts = (spark.readStream.schema("id long, p string").option("maxFilesPerTrigger", 1).json(str(input_dir))
              .groupBy("p").agg(F.count("*").alias("n"), F.sum("id").alias("total")))
    q = (counts.writeStream.format("strata").outputMode("complete")
         .option("checkpointLocation", str(tmp_path / "cp")).start(str(table)))
    try:
        for batch in range(3):
            write_inputs(input_dir, batch, 1)
            q.processAllAvailable()
            rows = [(f * ROWS_PER_FILE + j, f"p{j % 3}") for f in range(batch + 1) for j in range(ROWS_PER_FILE)]
            expected = sorted((p, sum(1 for _, k in rows if k == p), sum(x for x, k in rows if k == p))
                              for p in {k for _, k in rows})
            got = sorted(tuple(r) for r in spark.read.format("strata").load(str(table)).collect())
            assert got == expected, f"after batch {batch}"
            t = DeltaTable(str(table))
            assert t.version() == batch
            arrow = t.to_pyarrow_table()
            assert sorted(zip(arrow["p"].to_pylist(), arrow["n"].to_pylist(), arrow["total"].to_pylist())) == expected
        metrics = q.lastProgress["sink"]["metrics"]
        assert metrics["tableVersion"] == "2" and metrics["numOutputRows"] == "3"
    finally:
        q.stop()
    last = commits(table)[-1]
    assert [a["txn"]["version"] for a in last if "txn" in a] == [2]
    assert sum(1 for a in last if "remove" in a) >= 1, "complete mode replaces the previous rows in the same commit"
    with pytest.raises(Exception, match="supports the output modes 'append'"):
        counts.writeStream.format("strata").outputMode("update").option(
            "checkpointLocation", str(tmp_path / "cp-u")).start(str(tmp_path / "u"))


def test_foreach_batch_merge_with_txn_confs_is_safe_to_retry(spark: SparkSession, tmp_path: Path) -> None:
    """The README's foreachBatch pattern: a MERGE per micro-batch under txnAppId / txnVersion session confs; a batch
    run again (a retry after a failure) changes nothing."""
    input_dir, table = tmp_path / "in", tmp_path / "t"
    write_inputs(input_dir, 0, 2)
    spark.createDataFrame([], "id long, p string").write.format("strata").save(str(table))
    target = f"strata.`{table}`"

    def upsert(batch: Any, batch_id: int) -> None:
        session = batch.sparkSession
        batch.createOrReplaceTempView("updates")
        session.conf.set("spark.strata.txnAppId", "upserts")
        session.conf.set("spark.strata.txnVersion", str(batch_id))
        try:
            session.sql(f"""MERGE INTO {target} t USING updates s ON t.id = s.id
                            WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""")
        finally:
            session.conf.unset("spark.strata.txnAppId")
            session.conf.unset("spark.strata.txnVersion")

    q = (spark.readStream.schema("id long, p string").option("maxFilesPerTrigger", 1).json(str(input_dir))
         .writeStream.foreachBatch(upsert).option("checkpointLocation", str(tmp_path / "cp"))
         .trigger(availableNow=True).start())
    q.awaitTermination()
    assert spark.read.format("strata").load(str(table)).count() == 2 * ROWS_PER_FILE
    assert [[a["txn"]["version"] for a in c if "txn" in a] for c in commits(table)] == [[], [0], [1]]
    # Batch 1 again, with other values: the table already holds application version 1, nothing is merged.
    upsert(spark.read.json(str(input_dir / "0001.json"), schema="id long, p string")
           .withColumn("p", F.lit("changed")), 1)
    assert table_version(table) == 2
    assert spark.read.format("strata").load(str(table)).where("p = 'changed'").count() == 0
