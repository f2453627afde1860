"""Workload 10: the streaming sink, 200 micro-batches of 1,000 rows (issue 16).

Run inside a system's application (bench/app.py calls `run`); Strata (its path-table sink, the V1 `Sink`) and
delta-spark (`DeltaSink`), each in its own application as every workload runs.

Input (untimed, written once per application, the same on both): 200 Parquet files of 1,000 rows each, workload 1's
mixed schema and generator (ids 0 to 199,999, file i holding ids [1,000 i, 1,000 (i + 1))), their modification times
set one second apart in file order so that the file source takes them in the same order everywhere. The warm-up
round reads its own 50 files the same way.

Timed, per round, on a path table created empty just before (version 0) and a fresh checkpoint directory:

  spark.readStream.schema(S).option("maxFilesPerTrigger", 1).parquet(input)
      .writeStream.format("strata" | "delta").option("checkpointLocation", C).trigger(availableNow=True).start(path)
  query.awaitTermination()

`Trigger.AvailableNow` with one file per trigger makes exactly one micro-batch per file: 200 commits of 1,000 rows.
The time runs from `start()` to the query's end. Each micro-batch's `durationMs` from the query progress is kept
(`addBatch` is the sink's write and commit; `triggerExecution` the whole micro-batch; `latestOffset`, `queryPlanning`,
`walCommit`, `commitOffsets`, `getBatch` the rest), with `spark.sql.streaming.numRecentProgressUpdates` raised so that
every batch's progress is retained. Both tables checkpoint every 10 commits (`delta.checkpointInterval`'s default).

The check: the table holds exactly 200,000 rows with 200,000 distinct ids; 200 commits after its creation (versions 1
to 200, read from `_delta_log`), each with exactly one `txn` action whose appId is the query's id and whose version is
its batch id (version v: batch v - 1); the query progress reports 200 batches, ids 0 to 199, of 1,000 input rows each.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from spec import STREAMING_KEYS

Json = dict[str, Any]
WORKLOADS = STREAMING_KEYS
DURATIONS = ("addBatch", "triggerExecution", "latestOffset", "getBatch", "queryPlanning", "walCommit",
             "commitOffsets")


def tables(rnd: int) -> tuple[str, ...]:
    return (f"stream_r{rnd}",)


def input_files(server: Any, app: ModuleType, batches: int, rows: int) -> Path:
    """`batches` Parquet files of `rows` rows (ids 0 to batches * rows - 1, in file order), written once."""
    src: Path = server.root / "stream-input" / f"{batches}x{rows}"
    marker = src.parent / f"{src.name}.complete"
    if marker.exists():
        return src
    shutil.rmtree(src, ignore_errors=True)
    app.data(server.spark, 0, batches * rows, batches).write.parquet(str(src))
    files = sorted(f for f in src.iterdir() if f.name.startswith("part-") and f.name.endswith(".parquet"))
    if len(files) != batches:
        raise RuntimeError(f"{src}: {len(files)} input files, expected {batches}")
    base = time.time() - batches - 60
    for i, f in enumerate(files):  # the file source takes files oldest first: file order, on every system
        os.utime(f, (base + i, base + i))
    marker.write_text("")
    return src


def log_commits(path: Path) -> dict[int, list[Json]]:
    """Every commit of the table's `_delta_log`: version -> its actions."""
    out: dict[int, list[Json]] = {}
    for f in (path / "_delta_log").iterdir():
        if f.name.endswith(".json") and f.name[:-5].isdigit():
            out[int(f.name[:-5])] = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return out


def checkpoints(path: Path) -> list[int]:
    return sorted(int(f.name.split(".")[0]) for f in (path / "_delta_log").iterdir()
                  if ".checkpoint." in f.name and f.name.endswith(".parquet") and not f.name.startswith("."))


def run(server: Any, workload: str, rnd: int, app: ModuleType) -> Json:
    from pyspark.sql import functions as F
    e, s, spark = server.engine, server.sizes, server.spark
    batches = s.stream_warmup_batches if rnd == 0 else s.stream_batches
    rows = s.stream_rows
    setup = time.perf_counter()
    src = input_files(server, app, batches, rows)
    schema = spark.read.parquet(str(src)).schema
    t = e.table(f"stream_r{rnd}", False)
    e.drop(t)
    e.create(t)
    chk = server.root / "stream-checkpoints" / t.name
    shutil.rmtree(chk, ignore_errors=True)
    conf = "spark.sql.streaming.numRecentProgressUpdates"
    spark.conf.set(conf, str(batches + 100))  # keep every batch's progress (default: the last 100)
    reader = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(src))
    writer = (reader.writeStream.format(e.fmt).outputMode("append").option("checkpointLocation", str(chk))
              .trigger(availableNow=True))
    setup_s = time.perf_counter() - setup
    load = os.getloadavg()
    with app.Measured(server.memory, e, t) as m:
        query = writer.start(str(t.path))
        query.awaitTermination()
    check = time.perf_counter()
    spark.conf.unset(conf)
    progress = [json.loads(p.json()) for p in query._jsq.recentProgress()]
    done = sorted((p for p in progress if p["numInputRows"] > 0), key=lambda p: p["batchId"])
    durations = {k: [int(p["durationMs"].get(k, 0)) for p in done] for k in DURATIONS}
    query_id = str(query.id)

    agg = e.open(t).agg(F.count(F.lit(1)), F.countDistinct("id")).collect()[0]
    table_rows, ids = int(agg[0]), int(agg[1])
    commits = log_commits(t.path)
    after_create = sorted(v for v in commits if v > 0)
    txn_bad: list[Json] = []
    operations: set[str] = set()
    for v in after_create:
        txns = [a["txn"] for a in commits[v] if "txn" in a]
        operations.update(a["commitInfo"].get("operation", "") for a in commits[v] if "commitInfo" in a)
        if len(txns) != 1 or txns[0].get("appId") != query_id or txns[0].get("version") != v - 1:
            txn_bad.append({"version": v, "txns": txns})
    batch_ids = [p["batchId"] for p in done]
    input_rows = {int(p["numInputRows"]) for p in done}
    expected = batches * rows
    check_out: Json = {
        "rows": table_rows, "distinct_ids": ids, "expected_rows": expected,
        "commits": len(after_create), "expected_commits": batches,
        "versions_contiguous": after_create == list(range(1, batches + 1)),
        "commits_without_one_txn_of_their_batch": len(txn_bad), "txn_mismatches": txn_bad[:5],
        "batches_reported": len(done), "batch_ids_ok": batch_ids == list(range(batches)),
        "input_rows_per_batch": sorted(input_rows),
        "operations": sorted(operations),
    }
    check_out["ok"] = (table_rows == ids == expected and len(after_create) == batches
                       and check_out["versions_contiguous"] and not txn_bad and len(done) == batches
                       and check_out["batch_ids_ok"] and input_rows == {rows})
    m.result.update({
        "batches": batches, "rows_per_batch": rows, "query_id": query_id, "loadavg_at_start": load,
        "durations_ms": durations, "checkpoint_versions": checkpoints(t.path),
        "sink_metrics": done[-1].get("sink", {}).get("metrics", {}) if done else {},
        "setup_s": setup_s, "check": check_out,
    })
    e.drop(t)
    shutil.rmtree(chk, ignore_errors=True)
    m.result["check_s"] = time.perf_counter() - check
    result: Json = m.result
    return result
