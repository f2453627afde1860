"""Where a one-row append's time goes (issue 23): the append of bench/scale.py, repeated, in one Spark application.

    .venv/bin/python bench/append_probe.py [--files 1000000] [--engine strata|delta] [--appends 6]
                                           [--profile DIR] [--conf k=v ...] [--first-append]
                                           [--first append|parquet]

On a hard-linked copy of the cached scale table (bench/cache/scale/<F>/table, `make bench-scale FILES=F` makes it):
runs the benchmark's reads (`where p = -1` count, inputFiles() of p = 5, the point query, count(*)), appends one row to it (the
application's first write), one to an empty table of the same schema and one with plain `df.write.parquet` (Spark's
own floor for a one-row write job); then `--appends` rounds of the three, interleaved so that the load of a shared
machine weighs on them alike. Prints each time, and the median and minimum of the rounds (the like-for-like figures). `--profile DIR`: async-profiler (its Maven Central jar, unpacked; set
ASYNC_PROFILER_JAR to that jar and ASYNC_PROFILER_LIB to its unpacked linux-x64/libasyncProfiler.so) samples the driver's wall clock during each append and
writes DIR/<label>.collapsed (collapsed stacks, one file per timed operation) for bench/append_phases.py;
ASYNC_PROFILER_START replaces its start command (e.g. `start,event=alloc,alloc=512k,threads,total` for the
allocations that G1 takes as humongous).

`--first parquet`: after the reads, the application's first write is the plain `df.write.parquet` (Spark's own
first-write cost, the floor of any connector built on its write job), and the engine's first append follows it
(results/scale/first-write-floor.md).

`--first-append`: the application's first operation is the one-row append to the big table (no read before it),
then `--appends` more appends to it; prints each time and the driver's resident set (VmRSS, VmHWM from /proc) and
heap used after a full GC, before and after the first append (what the append left the driver holding).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

sys.path.insert(0, str(Path(__file__).parent))
from scale_log import DDL, POINT_PARTITION, ROWS_PER_FILE, point_id  # noqa: E402
from systems import jvm, session  # noqa: E402

CACHE = Path(__file__).parent / "cache"
SYSTEMS = {"strata": "strata-v1", "delta": "delta"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=1_000_000)
    ap.add_argument("--engine", choices=sorted(SYSTEMS), default="strata")
    ap.add_argument("--appends", type=int, default=6)
    ap.add_argument("--profile", type=Path)
    ap.add_argument("--memory", default="2g")
    ap.add_argument("--conf", action="append", default=[])
    ap.add_argument("--first", choices=["append", "parquet"], default="append",
                    help="the application's first write after the reads: the engine's append (default) or a plain "
                         "df.write.parquet of the same row (Spark's own first-write cost, the floor of any connector)")
    ap.add_argument("--first-append", action="store_true")
    args = ap.parse_args()

    source = CACHE / "scale" / str(args.files) / "table"
    if not source.exists():
        raise SystemExit(f"{source} is missing: run `make bench-scale FILES={args.files}` once to build it")
    work = CACHE / "work" / f"append-probe-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(source, work / "table", copy_function=os.link)  # the log is only read or added to
    conf = dict(kv.split("=", 1) for kv in args.conf)
    lib = os.environ.get("ASYNC_PROFILER_LIB")
    if args.profile:
        if not lib:
            raise SystemExit("--profile needs ASYNC_PROFILER_LIB (linux-x64/libasyncProfiler.so)")
        # The Java API's jar sits beside its native library (the unpacked Maven Central jar).
        conf["spark.driver.extraClassPath"] = os.environ["ASYNC_PROFILER_JAR"]
        args.profile.mkdir(parents=True, exist_ok=True)
    spark = session(SYSTEMS[args.engine], work, CACHE / "jars", work, args.memory, conf)
    fmt = "strata" if args.engine == "strata" else "delta"
    profiler = Profiler(spark, args.profile, lib) if args.profile and lib else None
    try:
        if args.first_append:
            first_append(spark, fmt, work, args.files, args.appends)
        else:
            run(spark, fmt, work, args.files, args.appends, profiler, args.first)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


class Profiler:
    """async-profiler in wall-clock mode, driven through its Java API (one.profiler.AsyncProfiler)."""

    def __init__(self, spark: SparkSession, out: Path, lib: str) -> None:
        self.vm = jvm(spark)
        self.out = out
        self.lib = lib

    def around(self, label: str, op: Callable[[], Any]) -> Any:
        self._exec(os.environ.get("ASYNC_PROFILER_START", "start,event=wall,interval=1ms,threads"))
        try:
            return op()
        finally:
            self._exec(f"stop,collapsed,file={self.out / (label + '.collapsed')}")

    def _exec(self, command: str) -> None:
        self.vm.one.profiler.AsyncProfiler.getInstance(self.lib).execute(command)


def cpu_s(pid: int) -> float:
    """User + system CPU seconds the JVM has used so far (all its threads: JIT and GC too)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(spark: SparkSession, fmt: str, work: Path, files: int, appends: int, profiler: Profiler | None,
        first: str = "append") -> None:
    table = work / "table"
    empty = work / "empty"
    n = [files * ROWS_PER_FILE]

    def row() -> Any:
        n[0] += 1
        return spark.range(n[0], n[0] + 1, 1, 1).select(
            F.col("id"), F.format_string("v-%012d", F.col("id")).alias("v"), F.lit(0).cast("int").alias("p"))

    vm = jvm(spark)
    pid = int(vm.java.lang.management.ManagementFactory.getRuntimeMXBean().getPid())
    gcs = vm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()

    def gc_ms() -> int:
        return sum(int(gcs.get(i).getCollectionTime()) for i in range(gcs.size()))

    def timed(label: str, op: Callable[[], Any]) -> float:
        cpu, gc = cpu_s(pid), gc_ms()
        t = time.perf_counter()
        if profiler:
            profiler.around(label, op)
        else:
            op()
        s = time.perf_counter() - t
        print(f"{label:28s} {s * 1000:8.1f} ms  (JVM CPU {(cpu_s(pid) - cpu) * 1000:6.0f} ms, GC pauses "
              f"{gc_ms() - gc:4d} ms)", flush=True)
        return s

    def append(path: Path) -> Callable[[], Any]:
        df = row()
        return lambda: df.write.format(fmt).mode("append").partitionBy("p").save(str(path))

    def plain() -> Callable[[], Any]:
        df = row()
        out = work / f"plain-{n[0]}"
        return lambda: df.write.partitionBy("p").parquet(str(out))

    def read() -> Any:
        return spark.read.format(fmt).load(str(table))

    timed("load + count p = -1", lambda: read().where("p = -1").count())
    # What bench/scale.py runs before its appends (the heap then holds what those reads built).
    timed("inputFiles p = 5", lambda: read().where(f"p = {POINT_PARTITION}")._jdf.inputFiles())
    timed("point query", lambda: read().where(f"p = {POINT_PARTITION} AND id = {point_id()}").count())
    timed("count(*)", lambda: read().count())
    if first == "parquet":
        timed("1st write: df.write.parquet", plain())
    timed("1st append (F files)", append(table))
    spark.sql(f"CREATE TABLE {fmt}.`{empty}` ({DDL}) USING {fmt} PARTITIONED BY (p)")
    timed("1st append (empty)", append(empty))
    timed("1st df.write.parquet", plain())
    # Interleaved rounds: the machine's load (shared cores) weighs on the three alike.
    times: dict[str, list[float]] = {"F files": [], "empty": [], "plain parquet": []}
    for i in range(appends):
        times["F files"].append(timed(f"append {i + 2} (F files)", append(table)))
        times["empty"].append(timed(f"append {i + 2} (empty)", append(empty)))
        times["plain parquet"].append(timed(f"df.write.parquet {i + 2}", plain()))
    for k, v in times.items():
        print(f"{k:14s} median {statistics.median(v) * 1000:7.1f} ms, min {min(v) * 1000:7.1f} ms over {len(v)}")
    print(f"F files / empty (medians): {statistics.median(times['F files']) / statistics.median(times['empty']):.2f}")


def memory(spark: SparkSession, pid: int) -> str:
    """The driver's resident set now and at its peak, and its heap used after a full GC (what it retains)."""
    with open(f"/proc/{pid}/status") as f:
        status = dict(line.split(":", 1) for line in f if ":" in line)
    vm = jvm(spark)
    vm.java.lang.System.gc()
    heap = int(vm.java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed())
    return (f"VmRSS {int(status['VmRSS'].split()[0]) // 1024} MB, VmHWM {int(status['VmHWM'].split()[0]) // 1024} MB, "
            f"heap after GC {heap // (1 << 20)} MB")


def first_append(spark: SparkSession, fmt: str, work: Path, files: int, appends: int) -> None:
    """The application's first operation is a one-row append to the big table; then more appends to it."""
    table = work / "table"
    n = [files * ROWS_PER_FILE]
    vm = jvm(spark)
    pid = int(vm.java.lang.management.ManagementFactory.getRuntimeMXBean().getPid())

    def append() -> float:
        n[0] += 1
        df = spark.range(n[0], n[0] + 1, 1, 1).select(
            F.col("id"), F.format_string("v-%012d", F.col("id")).alias("v"), F.lit(0).cast("int").alias("p"))
        t = time.perf_counter()
        df.write.format(fmt).mode("append").partitionBy("p").save(str(table))
        return time.perf_counter() - t

    print(f"before: {memory(spark, pid)}", flush=True)
    first = append()
    print(f"1st op: append (F files) {first * 1000:8.1f} ms", flush=True)
    print(f"after:  {memory(spark, pid)}", flush=True)
    later = [append() for _ in range(appends)]
    for i, s in enumerate(later):
        print(f"append {i + 2} (F files) {s * 1000:8.1f} ms", flush=True)
    if later:
        print(f"appends 2..{appends + 1}: median {statistics.median(later) * 1000:7.1f} ms, "
              f"min {min(later) * 1000:7.1f} ms", flush=True)
    print(f"end:    {memory(spark, pid)}  load average {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
