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
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TextIO

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import dml
import dml_dv
import streaming
import zorder
from spec import (COMMON_CONF, DELTA_JARS, DISTRIBUTION, DRIVER_MEMORY, ICEBERG_JARS, ICEBERG_TABLE_PROPERTIES,
                  MASTER, WRITER_DRIVER_MEMORY, Sizes)

COLUMNS = "id BIGINT, k BIGINT, x DOUBLE, s STRING, d DATE, ts TIMESTAMP, amt DECIMAL(12,2)"
OVERWRITTEN_PARTITION = 42
Json = dict[str, Any]


def data(spark: SparkSession, start: int, rows: int, slices: int, modulus: int | None = None,
         fixed_partition: int | None = None) -> DataFrame:
    """Deterministic mixed schema (longs, doubles, strings, dates, timestamps, decimals), generated on the fly.

    Partitioned tables get p = id % modulus (every write task holds rows of every partition), or a fixed p.
    """
    df = spark.range(start, start + rows, 1, slices).select(
        F.col("id"),
        (F.col("id") * 7 % 1000003).alias("k"),
        (F.col("id") / 3.0).alias("x"),
        F.concat(F.lit("name-"), (F.col("id") % 50000).cast("string")).alias("s"),
        F.date_add(F.lit("2020-01-01").cast("date"), (F.col("id") % 1500).cast("int")).alias("d"),
        (F.lit(1_600_000_000) + F.col("id")).cast("timestamp").alias("ts"),
        (F.col("id") % 100000 / 100).cast("decimal(12,2)").alias("amt"),
    )
    if modulus is not None:
        df = df.withColumn("p", (F.col("id") % modulus).cast("int"))
    if fixed_partition is not None:
        df = df.withColumn("p", F.lit(fixed_partition).cast("int"))
    return df


def jvm(spark: SparkSession) -> Any:
    """The py4j view of the application's JVM."""
    view = spark._jvm
    assert view is not None
    return view


# ---------------------------------------------------------------------------------------------------------------
# Systems


@dataclass(frozen=True)
class Table:
    name: str
    path: Path  # the table's directory
    ref: str  # how SQL and DataFrameWriterV2 name it
    partitioned: bool
    properties: tuple[tuple[str, str], ...] = ()  # extra table properties of CREATE TABLE (workloads 7)


class Engine:
    """How one system creates, appends to, overwrites and opens a table."""
    log_dir: str | None = None  # the transaction log's folder inside the table directory

    def __init__(self, spark: SparkSession, root: Path) -> None:
        self.spark = spark
        self.root = root

    def table(self, name: str, partitioned: bool) -> Table:
        path = self.root / "tables" / name
        return Table(name, path, f"`{path}`", partitioned)

    def create(self, t: Table) -> None:
        raise NotImplementedError

    def append(self, df: DataFrame, t: Table) -> None:
        raise NotImplementedError

    def overwrite_partitions(self, df: DataFrame, t: Table) -> None:
        raise NotImplementedError

    def open(self, t: Table) -> DataFrame:
        raise NotImplementedError

    def commits(self, t: Table) -> int:
        """Commits after the table's creation (appends and overwrites)."""
        logs = t.path / "_delta_log"
        return sum(1 for f in logs.iterdir() if f.name.endswith(".json") and f.name[:-5].isdigit()) - 1

    def drop(self, t: Table) -> None:
        shutil.rmtree(t.path, ignore_errors=True)

    def clear_caches(self) -> None:
        pass

    def ddl(self, t: Table) -> str:
        return COLUMNS + (", p INT" if t.partitioned else "")


def tblproperties(props: dict[str, str]) -> str:
    """A CREATE TABLE's TBLPROPERTIES clause ("" for none)."""
    pairs = ", ".join(f"'{k}' = '{v}'" for k, v in props.items())
    return f" TBLPROPERTIES ({pairs})" if props else ""


class Parquet(Engine):
    def create(self, t: Table) -> None:
        pass  # a directory; the first write creates it

    def append(self, df: DataFrame, t: Table) -> None:
        w = df.write.mode("append")
        (w.partitionBy("p") if t.partitioned else w).parquet(str(t.path))

    def overwrite_partitions(self, df: DataFrame, t: Table) -> None:
        df.write.mode("overwrite").option("partitionOverwriteMode", "dynamic").partitionBy("p").parquet(str(t.path))

    def open(self, t: Table) -> DataFrame:
        return self.spark.read.parquet(str(t.path))

    def commits(self, t: Table) -> int:
        raise NotImplementedError("Spark Parquet has no commits")


class PathFormat(Engine):
    """A table at a path, written through `df.write.format(fmt)` (the DataSource V1 path) and named `fmt.`path``
    in SQL: Strata V1 and delta-spark."""
    log_dir = "_delta_log"
    fmt = ""

    def table(self, name: str, partitioned: bool) -> Table:
        path = self.root / "tables" / name
        return Table(name, path, f"{self.fmt}.`{path}`", partitioned)

    def properties(self, t: Table) -> str:
        """The CREATE TABLE's TBLPROPERTIES clause, if any."""
        return tblproperties(dict(t.properties))

    def create(self, t: Table) -> None:
        part = " PARTITIONED BY (p)" if t.partitioned else ""
        self.spark.sql(f"CREATE TABLE {t.ref} ({self.ddl(t)}) USING {self.fmt}{part}{self.properties(t)}")

    def append(self, df: DataFrame, t: Table) -> None:
        w = df.write.format(self.fmt).mode("append")
        (w.partitionBy("p") if t.partitioned else w).save(str(t.path))

    def overwrite_partitions(self, df: DataFrame, t: Table) -> None:
        df.write.format(self.fmt).mode("overwrite").option("partitionOverwriteMode", "dynamic") \
            .partitionBy("p").save(str(t.path))

    def open(self, t: Table) -> DataFrame:
        return self.spark.read.format(self.fmt).load(str(t.path))


class StrataV1(PathFormat):
    fmt = "strata"

    def properties(self, t: Table) -> str:
        return tblproperties({"write.distribution-mode": DISTRIBUTION[t.partitioned], **dict(t.properties)})


class CatalogWrites(Engine):
    """Writes and reads through the catalog: DataFrameWriterV2 and `spark.table` (the DataSource V2 path)."""

    def append(self, df: DataFrame, t: Table) -> None:
        df.writeTo(t.ref).append()

    def overwrite_partitions(self, df: DataFrame, t: Table) -> None:
        df.writeTo(t.ref).overwritePartitions()

    def open(self, t: Table) -> DataFrame:
        return self.spark.table(t.ref)


class StrataV2(CatalogWrites, StrataV1):
    """Strata V1's tables, written and read through the catalog."""


class Delta(PathFormat):
    fmt = "delta"  # with delta-spark's default table properties

    def clear_caches(self) -> None:
        jvm(self.spark).org.apache.spark.sql.delta.DeltaLog.clearCache()


class Iceberg(CatalogWrites, Engine):
    """Hadoop catalogs: `ice` for the run's tables, `icesnap` for the cached 1,000-commit table."""
    log_dir = "metadata"

    def __init__(self, spark: SparkSession, root: Path, catalog: str = "ice") -> None:
        super().__init__(spark, root)
        self.catalog = catalog
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {catalog}.bench")

    def table(self, name: str, partitioned: bool) -> Table:
        warehouse = self.spark.conf.get(f"spark.sql.catalog.{self.catalog}.warehouse")
        assert warehouse is not None
        return Table(name, Path(warehouse) / "bench" / name, f"{self.catalog}.bench.`{name}`", partitioned)

    def create(self, t: Table) -> None:
        part = " PARTITIONED BY (p)" if t.partitioned else ""
        props = dict(ICEBERG_TABLE_PROPERTIES, **{"write.distribution-mode": DISTRIBUTION[t.partitioned]},
                     **dict(t.properties))
        self.spark.sql(f"CREATE TABLE {t.ref} ({self.ddl(t)}) USING iceberg{part}{tblproperties(props)}")

    def commits(self, t: Table) -> int:
        return int(self.spark.sql(f"SELECT count(*) FROM {t.ref}.snapshots").collect()[0][0])


ENGINES: dict[str, type[Engine]] = {
    "parquet": Parquet, "strata-v1": StrataV1, "strata-v2": StrataV2, "delta": Delta, "iceberg": Iceberg}


def session(system: str, root: Path, jars_dir: Path, snapshots: Path, memory: str) -> SparkSession:
    """The system's Spark application: the same settings for every system, plus what the system needs."""
    b = SparkSession.builder.master(MASTER).appName(f"bench-{system}")
    for key, value in COMMON_CONF.items():
        b = b.config(key, value)
    b = b.config("spark.driver.memory", memory).config("spark.sql.warehouse.dir", str(root / "spark-warehouse"))
    if system.startswith("strata"):
        import strata
        b = strata.configure_spark(b, str(root / "strata-warehouse"))
    elif system == "delta":
        b = (b.config("spark.jars", ",".join(str(jars_dir / j) for j in DELTA_JARS))
             .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
             .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"))
    elif system == "iceberg":
        b = (b.config("spark.jars", ",".join(str(jars_dir / j) for j in ICEBERG_JARS))
             .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"))
        for name, warehouse in (("ice", root / "iceberg-warehouse"), ("icesnap", snapshots / "iceberg-warehouse")):
            b = (b.config(f"spark.sql.catalog.{name}", "org.apache.iceberg.spark.SparkCatalog")
                 .config(f"spark.sql.catalog.{name}.type", "hadoop")
                 .config(f"spark.sql.catalog.{name}.warehouse", str(warehouse))
                 .config(f"spark.sql.catalog.{name}.cache-enabled", "false"))
    elif system != "parquet":
        raise ValueError(f"unknown system {system}")
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# ---------------------------------------------------------------------------------------------------------------
# Measurement


class Memory:
    """Peak resident set size and CPU time of this application's JVM (the py4j gateway process)."""

    def __init__(self, spark: SparkSession) -> None:
        self.pid = int(jvm(spark).java.lang.management.ManagementFactory.getRuntimeMXBean().getPid())
        self.ticks = os.sysconf("SC_CLK_TCK")

    def cpu_s(self) -> float:
        """User + system CPU seconds the JVM has used so far (all its threads)."""
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / self.ticks  # utime, stime: fields 14 and 15 of stat

    def reset(self) -> None:
        with open(f"/proc/{self.pid}/clear_refs", "w") as f:
            f.write("5")

    def peak_mb(self) -> float:
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        raise RuntimeError("no VmHWM in /proc/<pid>/status")


def listing(path: Path) -> dict[str, tuple[int, int]]:
    found: dict[str, tuple[int, int]] = {}
    if path.exists():
        for dirpath, _, files in os.walk(path):
            for name in files:
                st = os.stat(os.path.join(dirpath, name))
                found[os.path.relpath(os.path.join(dirpath, name), path)] = (st.st_size, st.st_mtime_ns)
    return found


def written(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]], log_dir: str | None) -> Json:
    """Files the operation wrote (new or changed), data and log apart; Hadoop's hidden .crc side files apart."""
    out = {"data_bytes": 0, "data_files": 0, "log_bytes": 0, "log_files": 0, "crc_bytes": 0, "crc_files": 0}
    for rel, (size, mtime) in after.items():
        if before.get(rel) == (size, mtime):
            continue
        base = os.path.basename(rel)
        if base.startswith(".") and base.endswith(".crc"):
            kind = "crc"
        elif (log_dir is not None and rel.startswith(log_dir + os.sep)) or base.startswith("_"):
            kind = "log"  # the transaction log (Parquet: the _SUCCESS marker)
        else:
            kind = "data"
        out[f"{kind}_bytes"] += size
        out[f"{kind}_files"] += 1
    return out


class Measured:
    """Times one operation on a table, with the files it wrote and the JVM's peak RSS meanwhile."""

    def __init__(self, memory: Memory, engine: Engine, t: Table) -> None:
        self.memory, self.engine, self.t = memory, engine, t
        self.result: Json = {}

    def __enter__(self) -> Measured:
        self.before = listing(self.t.path)
        self.memory.reset()
        self.cpu = self.memory.cpu_s()
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.result["seconds"] = time.perf_counter() - self.start
        self.result["cpu_s"] = self.memory.cpu_s() - self.cpu
        self.result["peak_rss_mb"] = self.memory.peak_mb()
        self.result["written"] = written(self.before, listing(self.t.path), self.engine.log_dir)


# ---------------------------------------------------------------------------------------------------------------
# The long-lived application


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
