"""One Spark application of the benchmark: one system (Spark Parquet, Strata V1, Strata V2, delta-spark or Iceberg).

Started by bench/run.py, never by hand:

  app.py serve  CONFIG_JSON   the system's long-lived application: reads one JSON command a line on stdin, runs it,
                              answers one JSON line on the file descriptor CONFIG_JSON["reply_fd"]
  app.py writer CONFIG_JSON   one of workload 6's concurrent writers: on each command, appends to the named table
                              and answers with the time span of every append

Only the operation itself is timed (time.perf_counter around the Spark action); table creation, checks and clean-up
are not. Around every timed operation the application lists the table directory before and after (files written =
new or changed files, data and log counted apart, Hadoop's hidden .crc side files apart) and resets then reads the
peak resident set size of its JVM (VmHWM in /proc/<jvm pid>/status, reset by writing 5 to /proc/<pid>/clear_refs)
and the CPU time the JVM used meanwhile (utime + stime in /proc/<jvm pid>/stat).

The systems and their sessions are in systems.py, the measurement in measure.py; this module runs the commands.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable, TextIO

from pyspark.sql import functions as F

import dml
import dml_dv
import streaming
import zorder
from measure import Measured, Memory, listing, written
from spec import DRIVER_MEMORY, WRITER_DRIVER_MEMORY, Sizes
from systems import ENGINES, Engine, Iceberg, Parquet, StrataV1, Table, data, jvm, session

# The workload modules (dml, dml_dv, zorder, streaming) get this module from Server.run and use these names of it.
__all__ = ["Measured", "StrataV1", "data", "listing", "written"]

OVERWRITTEN_PARTITION = 42
Json = dict[str, Any]


class Server:
    def __init__(self, cfg: Json) -> None:
        self.system: str = cfg["system"]
        self.root = Path(cfg["work"])
        self.snapshots = Path(cfg["snapshots"])
        self.sizes = Sizes(**cfg["sizes"])
        self.spark = session(self.system, self.root, Path(cfg["jars"]), self.snapshots, DRIVER_MEMORY)
        self.engine = ENGINES[self.system](self.spark, self.root)
        self.memory = Memory(self.spark)

    def info(self) -> Json:
        out: Json = {"spark": self.spark.version,
                     "java": jvm(self.spark).java.lang.System.getProperty("java.version"),
                     "jvm_pid": self.memory.pid, "python": sys.version.split()[0]}
        if self.system.startswith("strata"):
            import strata
            out["strata"] = strata.__version__
            out["strata_jar"] = strata.jar_path()
            out["strata_jar_sha256"] = hashlib.sha256(Path(strata.jar_path()).read_bytes()).hexdigest()
        return out

    def noop(self, workload: str) -> Json:
        n = self.sizes.rows
        modulus = {"append": None, "part100": 100, "part1000": 1000}[workload]
        df = data(self.spark, 0, n, self.sizes.slices, modulus)
        self.memory.reset()
        cpu, start = self.memory.cpu_s(), time.perf_counter()
        df.write.format("noop").mode("overwrite").save()
        return {"seconds": time.perf_counter() - start, "cpu_s": self.memory.cpu_s() - cpu,
                "peak_rss_mb": self.memory.peak_mb()}

    def run(self, workload: str, rnd: int) -> Json:
        e, s = self.engine, self.sizes
        if workload in ("append", "part100", "part1000"):
            modulus = {"append": None, "part100": 100, "part1000": 1000}[workload]
            t = e.table(f"{workload}_r{rnd}", modulus is not None)
            e.create(t)
            df = data(self.spark, 0, s.rows, s.slices, modulus)
            with Measured(self.memory, e, t) as m:
                e.append(df, t)
            if workload != "part100":  # workload 5 overwrites a partition of the 100-partition table
                e.drop(t)
            return m.result
        if workload == "overwrite":
            t = e.table(f"part100_r{rnd}", True)
            df = data(self.spark, s.rows, s.overwrite_rows, s.slices, fixed_partition=OVERWRITTEN_PARTITION)
            with Measured(self.memory, e, t) as m:
                e.overwrite_partitions(df, t)
            after = e.open(t)
            total, part = after.count(), after.where(f"p = {OVERWRITTEN_PARTITION}").count()
            held = max(0, (s.rows - OVERWRITTEN_PARTITION + 99) // 100)  # ids in [0, N) with id % 100 = 42
            expected = (s.rows - held + s.overwrite_rows, s.overwrite_rows)
            m.result["check"] = {"ok": (total, part) == expected, "rows": total, "partition_rows": part,
                                 "expected_rows": expected[0], "expected_partition_rows": expected[1]}
            e.drop(t)
            return m.result
        if workload == "small_appends":
            t = e.table(f"small_r{rnd}", False)
            e.create(t)
            latencies: list[float] = []
            with Measured(self.memory, e, t) as m:
                for i in range(s.small_appends):
                    df = data(self.spark, i, 1, 1)
                    start = time.perf_counter()
                    e.append(df, t)
                    latencies.append(time.perf_counter() - start)
            m.result["latencies"] = latencies
            rows, commits = e.open(t).count(), e.commits(t)
            m.result["check"] = {"ok": rows == commits == s.small_appends, "rows": rows, "commits": commits}
            e.drop(t)
            return m.result
        if workload == "snapshot":
            t = self.snapshot_table()
            e.clear_caches()
            with Measured(self.memory, e, t) as m:
                df = e.open(t)
                opened = time.perf_counter()
                rows = df.count()
            m.result["open_s"] = opened - m.start
            m.result["count_s"] = m.result["seconds"] - m.result["open_s"]
            appends = s.snapshot_commits - 1
            m.result["check"] = {"ok": rows == appends, "rows": rows, "expected_rows": appends}
            return m.result
        if workload in dml.WORKLOADS:
            return dml.run(self, workload, rnd, sys.modules[__name__])
        if workload in dml_dv.WORKLOADS:
            return dml_dv.run(self, workload, rnd, sys.modules[__name__])
        if workload in zorder.WORKLOADS:
            return zorder.run(self, workload, rnd, sys.modules[__name__])
        if workload in streaming.WORKLOADS:
            return streaming.run(self, workload, rnd, sys.modules[__name__])
        raise ValueError(f"unknown workload {workload}")

    # Workload 4's table, built once per system and version (setup) and cached in bench/cache/snapshots.

    def snapshot_table(self) -> Table:
        key = self.snapshot_key
        if isinstance(self.engine, Iceberg):
            return Iceberg(self.spark, self.root, "icesnap").table(key, False)
        path = self.snapshots / key
        return Table(key, path, {"parquet": f"`{path}`", "delta": f"delta.`{path}`"}.get(self.system,
                                                                                         f"strata.`{path}`"), False)

    def build_snapshot(self, key: str, build: bool) -> Json:
        """Makes sure the 1,000-commit table exists (create + 999 one-row appends); `build` = this app may build it."""
        self.snapshot_key = key
        t = self.snapshot_table()
        marker = self.snapshots / f"{key}.complete"
        if marker.exists():
            return {"cached": True, "path": str(t.path)}
        if not build:
            raise RuntimeError(f"{t.path} is not built ({marker} missing)")
        engine = Iceberg(self.spark, self.root, "icesnap") if isinstance(self.engine, Iceberg) else self.engine
        shutil.rmtree(t.path, ignore_errors=True)
        start = time.perf_counter()
        appends = self.sizes.snapshot_commits - 1
        if isinstance(engine, Parquet):  # no commits: a directory of as many one-row files
            data(self.spark, 0, appends, appends).write.parquet(str(t.path))
        else:
            engine.create(t)
            for i in range(appends):
                engine.append(data(self.spark, i, 1, 1), t)
            commits = engine.commits(t)
            if commits != appends:
                raise RuntimeError(f"{t.path}: {commits} commits after create, expected {appends}")
        marker.write_text(json.dumps({"built_s": time.perf_counter() - start}))
        return {"cached": False, "path": str(t.path), "built_s": time.perf_counter() - start}

    # Workload 6: the table, then (after the writers) the checks.

    def concurrent_table(self, rnd: int) -> Table:
        return self.engine.table(f"concurrent_r{rnd}", False)

    def concurrent_create(self, rnd: int) -> Json:
        t = self.concurrent_table(rnd)
        self.engine.create(t)
        return {"name": t.name}

    def concurrent_verify(self, rnd: int, appends: int) -> Json:
        """Every writer's `appends` commits and rows must be in the table."""
        e, s, t = self.engine, self.sizes, self.concurrent_table(rnd)
        df = e.open(t)
        row = df.agg(F.count(F.lit(1)), F.countDistinct("id")).collect()[0]
        rows, ids, commits = int(row[0]), int(row[1]), e.commits(t)
        expected_rows = s.writers * appends * s.writer_rows
        expected_commits = s.writers * appends
        out: Json = {"rows": rows, "distinct_ids": ids, "commits": commits, "expected_rows": expected_rows,
                     "expected_commits": expected_commits,
                     "ok": rows == ids == expected_rows and commits == expected_commits,
                     "written": written({}, listing(t.path), e.log_dir)}
        e.drop(t)
        return out

    def cleanup(self, rnd: int) -> Json:
        for name in (f"append_r{rnd}", f"part100_r{rnd}", f"part1000_r{rnd}", f"small_r{rnd}",
                     f"concurrent_r{rnd}", *dml.tables(rnd), *dml_dv.tables(rnd), *zorder.tables(rnd),
                     *streaming.tables(rnd)):
            for partitioned in (False, True):
                self.engine.drop(self.engine.table(name, partitioned))
        return {}

    def handle(self, msg: Json) -> Json:
        op = msg["op"]
        if op == "info":
            return self.info()
        if op == "snapshot":
            return self.build_snapshot(msg["key"], msg["build"])
        if op == "run":
            return self.noop(msg["workload"]) if msg.get("control") else self.run(msg["workload"], msg["round"])
        if op == "concurrent_create":
            return self.concurrent_create(msg["round"])
        if op == "concurrent_verify":
            return self.concurrent_verify(msg["round"], msg["appends"])
        if op == "cleanup":
            return self.cleanup(msg["round"])
        if op == "stop":
            self.spark.stop()
            return {}
        raise ValueError(f"unknown op {op}")


def reply(out: TextIO, message: Json) -> None:
    out.write(json.dumps(message) + "\n")
    out.flush()


def guarded(out: TextIO, fn: Callable[[], Json]) -> bool:
    try:
        reply(out, {"ok": True, "result": fn()})
        return True
    except BaseException:
        reply(out, {"ok": False, "error": traceback.format_exc()})
        return False


def serve(cfg: Json) -> None:
    out = os.fdopen(cfg["reply_fd"], "w")
    holder: list[Server] = []

    def start() -> Json:
        holder.append(Server(cfg))
        return {"started": True}

    if not guarded(out, start):
        sys.exit(1)
    server = holder[0]
    for line in sys.stdin:
        msg = json.loads(line)
        guarded(out, lambda: server.handle(msg))
        if msg["op"] == "stop":
            break


def writer(cfg: Json) -> None:
    """One of workload 6's writers: its own Spark application; on each `appends` command it appends that many times
    `writer_rows` rows to the named table and answers with the time span of every append."""
    out = os.fdopen(cfg["reply_fd"], "w")
    system, k = cfg["system"], cfg["writer"]
    sizes = Sizes(**cfg["sizes"])
    state: dict[str, Any] = {}

    def start() -> Json:
        spark = session(system, Path(cfg["work"]), Path(cfg["jars"]), Path(cfg["snapshots"]), WRITER_DRIVER_MEMORY)
        state.update(spark=spark, engine=ENGINES[system](spark, Path(cfg["work"])), memory=Memory(spark))
        return {"started": True}

    def appends(table: str, count: int) -> Json:
        engine: Engine = state["engine"]
        memory: Memory = state["memory"]
        t = engine.table(table, False)
        memory.reset()
        cpu = memory.cpu_s()
        spans: list[tuple[float, float]] = []
        for j in range(count):
            first = (k * count + j) * sizes.writer_rows
            df = data(state["spark"], first, sizes.writer_rows, 1)
            begin = time.monotonic()  # CLOCK_MONOTONIC: comparable across the processes of one machine
            engine.append(df, t)
            spans.append((begin, time.monotonic()))
        return {"spans": spans, "peak_rss_mb": memory.peak_mb(), "cpu_s": memory.cpu_s() - cpu}

    if not guarded(out, start):
        sys.exit(1)
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["op"] == "stop":
            break
        guarded(out, lambda: appends(msg["table"], msg["appends"]))
    state["spark"].stop()


def main() -> None:
    role, cfg = sys.argv[1], json.loads(sys.argv[2])
    if role == "serve":
        serve(cfg)
    elif role == "writer":
        writer(cfg)
    else:
        raise SystemExit(f"unknown role {role}")


if __name__ == "__main__":
    main()
