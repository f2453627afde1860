"""One Spark application of the metadata-scale set (bench/scale.py): one engine on one generated table.

Started by bench/scale.py, never by hand (one JSON command a line on stdin, one JSON answer a line on the file
descriptor CONFIG_JSON["reply_fd"], as bench/app.py):

  scale_app.py prepare CONFIG_JSON  builds the table of F files (bench/scale_log.py): partition p = 5's data files
                                    (Spark), commit 0 (Python, streamed), then Strata's checkpoint at version 0
  scale_app.py serve CONFIG_JSON    runs the set's operations (scale_log.OPERATIONS) on the engine (Strata through
                                    `format("strata")`, delta-spark through `format("delta")`), one command each

Every operation answers with a result, never an error: `status` ok, error or oom, its time (time.perf_counter around
the operation alone), the JVM's CPU time and peak RSS meanwhile (VmHWM, reset before: bench/measure.py), the files
it wrote, its answer (`value`) and, for the scans, the files Spark's scan nodes read (their `numFiles` metric).
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
from typing import Any, Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import scale_checkpoint
from app import guarded
from measure import Memory, listing, written
from scale_log import (DDL, LATER_APPENDS, MISSING_PARTITION, PARTITIONS, POINT_PARTITION, REAL_ROWS, ROWS_PER_FILE,
                       RealFile, log_bytes, point_id, real_files, write_commit0)
from systems import jvm, session

Json = dict[str, Any]
FORMATS = {"strata": "strata", "delta": "delta"}
SYSTEMS = {"strata": "strata-v1", "delta": "delta"}  # bench/systems.py's session for each engine
# The JVM exits on its first OutOfMemoryError (instead of limping on in a broken state until the timeout); the driver
# finds the error in the application's log.
JVM_OPTIONS = "-XX:+ExitOnOutOfMemoryError"


def start(cfg: Json) -> SparkSession:
    work = Path(cfg["work"])
    return session(SYSTEMS[cfg["engine"]], work, Path(cfg["jars"]), work, cfg["memory"],
                   dict({"spark.driver.extraJavaOptions": JVM_OPTIONS}, **cfg.get("conf", {})))


def scan_files(df: DataFrame) -> int | None:
    """Files the executed plan of `df` (after an action on it) read: the sum of its file scans' numFiles metric."""
    found: list[int] = []

    def walk(node: Any) -> None:
        name = node.getClass().getSimpleName()
        if name == "AdaptiveSparkPlanExec":
            walk(node.executedPlan())
            return
        if "QueryStageExec" in name:
            walk(node.plan())
        if name == "FileSourceScanExec":
            metrics = node.metrics()
            if metrics.contains("numFiles"):
                found.append(int(metrics.apply("numFiles").value()))
        children = node.children()
        for i in range(children.size()):
            walk(children.apply(i))

    walk(df._jdf.queryExecution().executedPlan())
    return sum(found) if found else None


def jvm_alive(pid: int) -> bool:
    """The JVM still runs (neither gone nor a zombie: it exits on an OutOfMemoryError)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            state = next((line.split()[1] for line in f if line.startswith("State:")), "X")
    except OSError:
        return False
    return state not in ("Z", "X")


def count(df: DataFrame) -> tuple[int, DataFrame]:
    agg = df.agg(F.count(F.lit(1)))
    return int(agg.collect()[0][0]), agg


class Server:
    def __init__(self, cfg: Json) -> None:
        self.cfg = cfg
        self.engine: str = cfg["engine"]
        self.fmt = FORMATS[self.engine]
        self.table = Path(cfg["table"])
        self.empty = Path(cfg["empty"])
        self.files: int = cfg["files"]
        self.spark = start(cfg)
        self.memory = Memory(self.spark)
        self.appended = 0
        self.later_empty: Json | None = None

    def info(self) -> Json:
        out: Json = {"spark": self.spark.version, "python": sys.version.split()[0], "jvm_pid": self.memory.pid,
                     "java": jvm(self.spark).java.lang.System.getProperty("java.version"),
                     "max_heap_mb": int(jvm(self.spark).java.lang.Runtime.getRuntime().maxMemory()) / 2**20}
        if self.engine == "strata":
            import strata
            out["strata"] = strata.__version__
            out["strata_jar_sha256"] = hashlib.sha256(Path(strata.jar_path()).read_bytes()).hexdigest()
        return out

    def read(self) -> DataFrame:
        return self.spark.read.format(self.fmt).load(str(self.table))

    def measure(self, path: Path, op: Callable[[], Json], after: Callable[[Json], None] | None = None) -> Json:
        """Times `op` alone (then runs `after` on its result, untimed); failures become results."""
        before = listing(path)
        self.memory.reset()
        cpu = self.memory.cpu_s()
        start_t = time.perf_counter()
        try:
            result = op()
            result["seconds"] = time.perf_counter() - start_t
            result["cpu_s"] = self.memory.cpu_s() - cpu
            result["peak_rss_mb"] = self.memory.peak_mb()
            if after is not None:
                after(result)
            result["written"] = written(before, listing(path), "_delta_log")
            result["status"] = "ok"
            return result
        except Exception:
            seconds = time.perf_counter() - start_t
            text = traceback.format_exc()
            alive = jvm_alive(self.memory.pid)
            return {"status": "oom" if "OutOfMemoryError" in text else "error", "seconds": seconds,
                    "peak_rss_mb": self.memory.peak_mb() if alive else None, "jvm_alive": alive,
                    "error": text[-4000:]}

    def missing_partition(self) -> Json:
        df = self.read()
        opened = time.perf_counter()
        rows, agg = count(df.where(f"p = {MISSING_PARTITION}"))
        return {"value": rows, "count_s": time.perf_counter() - opened, "scan_files": scan_files(agg)}

    def input_files(self) -> Json:
        # The array stays in the JVM (pyspark's inputFiles() would fetch every path, one py4j call each).
        return {"value": len(self.read().where(f"p = {POINT_PARTITION}")._jdf.inputFiles())}

    def point(self) -> Json:
        df = self.read().where(f"p = {POINT_PARTITION} AND id = {point_id()}")
        rows, agg = count(df)
        self.point_df = df
        return {"value": rows, "scan_files": scan_files(agg)}

    def count_all(self) -> Json:
        """The whole table's count(*): answered from the log's numRecords, or by reading files (most do not exist)."""
        rows, agg = count(self.read())
        return {"value": rows, "scan_files": scan_files(agg)}

    def point_input_files(self, result: Json) -> None:
        result["input_files"] = len(self.point_df._jdf.inputFiles())

    def row(self) -> DataFrame:
        """One new row (an id no generated file holds), in partition p = 0."""
        self.appended += 1
        i = self.files * ROWS_PER_FILE + self.appended
        return self.spark.range(i, i + 1, 1, 1).select(
            F.col("id"), F.format_string("v-%012d", F.col("id")).alias("v"), F.lit(0).cast("int").alias("p"))

    def append(self, path: Path) -> Json:
        df = self.row()

        def op() -> Json:
            df.write.format(self.fmt).mode("append").partitionBy("p").save(str(path))
            return {}

        def version(result: Json) -> None:
            result["version"] = max(int(f.name[:-5]) for f in (path / "_delta_log").glob("*.json")
                                    if f.name[:-5].isdigit())

        return self.measure(path, op, version)

    def later_appends(self) -> Json:
        """Appends 2 to 1 + LATER_APPENDS to the big table, each followed by one to the empty table, each timed alone:
        alternating, so that JIT warm-up and the machine's load weigh on both tables alike (five appends to one table
        and then five to the other favour the second). The big table's median; the empty table's is kept for
        `empty_append_2`."""
        self.create_empty()
        big: list[Json] = []
        empty: list[Json] = []
        for _ in range(LATER_APPENDS):
            big.append(self.append(self.table))
            if big[-1]["status"] != "ok":
                return big[-1]
            empty.append(self.append(self.empty))
        self.later_empty = median(empty)
        return median(big)

    def create_empty(self) -> None:
        if not (self.empty / "_delta_log").exists():  # untimed
            self.spark.sql(f"CREATE TABLE {self.fmt}.`{self.empty}` ({DDL}) USING {self.fmt} PARTITIONED BY (p)")

    def run(self, key: str) -> Json:
        if key in ("cold", "warm"):
            return self.measure(self.table, self.missing_partition)
        if key == "input_files":
            return self.measure(self.table, self.input_files)
        if key == "point":
            return self.measure(self.table, self.point, self.point_input_files)
        if key == "count":
            return self.measure(self.table, self.count_all)
        if key == "append_1":
            return self.append(self.table)
        if key == "append_2":
            return self.later_appends()
        if key == "empty_append_1":
            self.create_empty()
            return self.append(self.empty)
        if key == "empty_append_2":  # alone only when the big table's application failed before
            return self.later_empty or median([self.append(self.empty) for _ in range(LATER_APPENDS)])
        raise ValueError(f"unknown operation {key}")


def median(runs: list[Json]) -> Json:
    """The median run's result, with every run's seconds (`samples_s`) and the highest peak RSS; the first failure
    instead, if one failed (one sample of a few hundred milliseconds is mostly noise)."""
    failed = [r for r in runs if r["status"] != "ok"]
    if failed:
        return failed[0]
    out = dict(sorted(runs, key=lambda r: float(r["seconds"]))[len(runs) // 2])
    out["samples_s"] = [round(float(r["seconds"]), 4) for r in runs]
    out["peak_rss_mb"] = max(float(r["peak_rss_mb"]) for r in runs)
    out["version"] = runs[-1]["version"]
    return out


def prepare(spark: SparkSession, table: Path, files: int, layout: str = "json", parts: int = 1) -> Json:
    """
    Builds the generated table at `table`: data files of p = 5, then commit 0 (bench/scale_log.py) and Strata's
    checkpoint 0, or (layout `checkpoint`) only a checkpoint of `parts` parts (bench/scale_checkpoint.py).
    """
    import strata
    shutil.rmtree(table, ignore_errors=True)
    tmp = table.parent / "real-files"
    shutil.rmtree(tmp, ignore_errors=True)
    started = time.perf_counter()
    wanted = scale_checkpoint.real_paths(files) if layout == "checkpoint" else real_files(files)
    # File j of p = 5 is file n = 5 + 1000 j: ids [n R, n R + REAL_ROWS). One task, one file per value of f.
    n = F.lit(POINT_PARTITION) + F.lit(PARTITIONS) * F.floor(F.col("id") / REAL_ROWS)
    df = spark.range(0, len(wanted) * REAL_ROWS, 1, 1).select(
        (n * ROWS_PER_FILE + F.col("id") % REAL_ROWS).alias("id"), n.alias("f"))
    df.select("id", F.format_string("v-%012d", F.col("id")).alias("v"), "f").write.partitionBy("f").parquet(str(tmp))
    real: dict[int, RealFile] = {}
    for k, path in wanted:
        [part] = list((tmp / f"f={k}").glob("part-*.parquet"))
        target = table / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(part), target)
        real[k] = RealFile(k, path, target.stat().st_size)
    shutil.rmtree(tmp)
    data_s = time.perf_counter() - started
    if layout == "checkpoint":
        memory = Memory(spark)
        memory.reset()
        out = {"files": files, "real_files": len(real), "data_s": data_s, "layout": layout, "json_bytes": 0,
               "json_s": 0.0, "checkpoint_version": 0,
               **scale_checkpoint.write(spark, table, files, parts, {k: f.size for k, f in real.items()}),
               "checkpoint_peak_rss_mb": memory.peak_mb(), "log_bytes": log_bytes(table), "strata": strata.__version__}
        return out
    out: Json = {"files": files, "real_files": len(real), "data_s": data_s, **write_commit0(table, files, real)}
    memory = Memory(spark)
    memory.reset()
    started = time.perf_counter()
    out["checkpoint_version"] = strata.Table.for_path(spark, str(table)).checkpoint()
    out["checkpoint_s"] = time.perf_counter() - started
    out["checkpoint_peak_rss_mb"] = memory.peak_mb()
    out["log_bytes"] = log_bytes(table)
    out["strata"] = strata.__version__
    out["strata_jar_sha256"] = hashlib.sha256(Path(strata.jar_path()).read_bytes()).hexdigest()
    return out


def unknown(role: str, op: str) -> Json:
    raise ValueError(f"{role}: unknown op {op}")


def main() -> None:
    role, cfg = sys.argv[1], json.loads(sys.argv[2])
    out = os.fdopen(cfg["reply_fd"], "w")
    holder: list[Any] = []

    def begin() -> Json:
        holder.append(Server(cfg) if role == "serve" else start(cfg))
        return {"started": True}

    if not guarded(out, begin):
        sys.exit(1)
    for line in sys.stdin:
        msg = json.loads(line)
        op = msg["op"]
        if op == "stop":
            break
        if role == "prepare" and op == "prepare":
            guarded(out, lambda: prepare(holder[0], Path(cfg["table"]), cfg["files"], cfg.get("layout", "json"),
                                         cfg.get("parts", 1)))
        elif role == "serve" and op == "info":
            guarded(out, holder[0].info)
        elif role == "serve" and op == "run":
            guarded(out, lambda: holder[0].run(msg["key"]))
        else:
            guarded(out, lambda: unknown(role, op))
    spark = holder[0].spark if role == "serve" else holder[0]
    spark.stop()


if __name__ == "__main__":
    main()
