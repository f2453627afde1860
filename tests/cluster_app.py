"""Driver application for tests/test_standalone_cluster.py: runs one scenario on a Spark standalone cluster.

Usage: python cluster_app.py '<json config>'; the config names the master URL, the scenario, the table paths, a
marker directory shared with the test and extra Spark settings. The app prints one line `RESULT <json>`.

The Python UDFs here run in the executors' Python workers; they record which executor JVM ran each task (the JVM
is the worker's nearest ancestor running CoarseGrainedExecutorBackend) in marker files, and the `kill` scenario's
UDF kills its own executor JVM with SIGKILL at a chosen point of one chosen task's first attempt.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark import TaskContext
from pyspark.sql import DataFrame, SparkSession

import strata

SCHEMA = "id long, p string"
KILL_PARTITION = 3
FAIL_PARTITION = 2


def executor_pid() -> int:
    """The pid of the executor JVM this Python worker serves (worker -> pyspark daemon -> JVM)."""
    pid = os.getpid()
    for _ in range(10):
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])  # ppid
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        if b"CoarseGrainedExecutorBackend" in cmdline:
            return pid
    raise RuntimeError("no executor JVM among this Python worker's ancestors")


def record_task(markers: str, tag: str) -> None:
    ctx = TaskContext.get()
    assert ctx is not None
    name = f"{tag}-p{ctx.partitionId()}-s{ctx.stageId()}-a{ctx.attemptNumber()}.json"
    Path(markers, name).write_text(json.dumps({"pid": executor_pid(), "partition": ctx.partitionId()}))


def tagged(df: DataFrame, markers: str, tag: str) -> DataFrame:
    """The same rows, after a mapInPandas step that records which executor JVM ran each task."""
    def fn(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        record_task(markers, tag)
        yield from batches
    return df.mapInPandas(fn, SCHEMA)


def killing(df: DataFrame, markers: str, table: str, tag: str) -> DataFrame:
    """The first attempt of partition KILL_PARTITION passes its rows on until this task has a data file open in
    the table, then kills its own executor JVM (SIGKILL): the file stays behind, half written, with no abort."""
    def fn(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        ctx = TaskContext.get()
        assert ctx is not None
        chosen = ctx.partitionId() == KILL_PARTITION and ctx.attemptNumber() == 0
        prefix = f"part-{KILL_PARTITION:05d}-"

        def own_files() -> list[str]:
            return sorted(str(p) for p in Path(table).rglob(prefix + "*") if p.name.startswith(prefix))

        def kill_when_file_open(deadline: float) -> None:
            while not own_files():
                if time.monotonic() > deadline:
                    return
                time.sleep(0.05)
            pid = executor_pid()
            Path(markers, f"killed-{tag}.json").write_text(json.dumps({"pid": pid, "files": own_files()}))
            os.kill(pid, signal.SIGKILL)
            os._exit(1)  # this worker's JVM is gone; nothing it does any more can reach Spark

        for batch in batches:
            yield batch
            if chosen:
                kill_when_file_open(time.monotonic())  # a file already open: kill now
        if chosen:
            # Every batch was handed over (more than the worker's output buffer): the JVM opens the file soon.
            kill_when_file_open(time.monotonic() + 60)
            raise RuntimeError("the chosen task never opened a data file: nothing to kill")
    return df.mapInPandas(fn, SCHEMA)


def failing(df: DataFrame) -> DataFrame:
    """Every attempt of partition FAIL_PARTITION raises after passing on some rows."""
    def fn(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        ctx = TaskContext.get()
        assert ctx is not None
        for batch in batches:
            yield batch
            if ctx.partitionId() == FAIL_PARTITION:
                raise ValueError(f"injected failure in partition {FAIL_PARTITION}")
    return df.mapInPandas(fn, SCHEMA)


def await_executors(spark: SparkSession, n: int, timeout: float = 90.0) -> int:
    """Bounded wait until n executors are registered with the driver."""
    tracker = spark.sparkContext._jsc.sc().statusTracker()
    deadline = time.monotonic() + timeout
    while True:
        executors = len(tracker.getExecutorInfos()) - 1  # the driver is listed too
        if executors >= n:
            return executors
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {executors} of {n} executors registered after {timeout}s")
        time.sleep(0.2)


def source(spark: SparkSession, start: int, end: int, partitions: int) -> DataFrame:
    return spark.range(start, end, 1, partitions).selectExpr("id", "cast(id % 5 AS STRING) AS p")


def sorted_rows(df: DataFrame) -> list[list[Any]]:
    return [[r["id"], r["p"]] for r in df.select("id", "p").orderBy("id").collect()]


def location(spark: SparkSession, table: str) -> str:
    row = spark.sql(f"DESCRIBE TABLE EXTENDED {table}").where("col_name = 'Location'").collect()[0]
    return str(row[1])


def scenario_writes(spark: SparkSession, cfg: dict[str, Any]) -> dict[str, Any]:
    markers, v1 = cfg["markers"], cfg["v1_table"]
    await_executors(spark, 2)
    # V1: a partitioned save, then an append.
    tagged(source(spark, 0, 4000, 8), markers, "v1save").write.format("strata").partitionBy("p").save(v1)
    tagged(source(spark, 4000, 6000, 8), markers, "v1append").write.format("strata").mode("append").save(v1)
    v1_rows = sorted_rows(spark.read.format("strata").load(v1))
    # V2: CREATE TABLE, INSERT ... SELECT, writeTo(...).append().
    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.cluster")
    spark.sql("CREATE TABLE strata.cluster.t (id BIGINT, p STRING) USING strata PARTITIONED BY (p)")
    spark.sql("INSERT INTO strata.cluster.t SELECT id, cast(id % 5 AS STRING) FROM range(0, 3000, 1, 8)")
    tagged(source(spark, 3000, 5000, 8), markers, "v2append").writeTo("strata.cluster.t").append()
    v2_rows = sorted_rows(spark.table("strata.cluster.t"))
    # DML (copy-on-write) on the cluster: DELETE, UPDATE of the partition column, MERGE with every clause kind.
    spark.sql("CREATE TABLE strata.cluster.d (id BIGINT, p STRING) USING strata PARTITIONED BY (p)")
    spark.sql("INSERT INTO strata.cluster.d SELECT id, cast(id % 5 AS STRING) FROM range(0, 3000, 1, 8)")
    spark.sql("DELETE FROM strata.cluster.d WHERE id % 7 = 0")
    spark.sql("UPDATE strata.cluster.d SET p = 'u' WHERE id < 100")
    source(spark, 2900, 3100, 4).createOrReplaceTempView("cluster_src")
    spark.sql("MERGE INTO strata.cluster.d t USING cluster_src s ON t.id = s.id "
              "WHEN MATCHED THEN UPDATE SET p = 'm' WHEN NOT MATCHED THEN INSERT * "
              "WHEN NOT MATCHED BY SOURCE AND t.id >= 2800 THEN DELETE")
    dml_rows = sorted_rows(spark.table("strata.cluster.d"))
    # The same DML merge-on-read (deletion vectors): vectors are read back on the executors.
    spark.sql("CREATE TABLE strata.cluster.dv (id BIGINT, p STRING) USING strata PARTITIONED BY (p) "
              "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    spark.sql("INSERT INTO strata.cluster.dv SELECT id, cast(id % 5 AS STRING) FROM range(0, 3000, 1, 8)")
    spark.sql("DELETE FROM strata.cluster.dv WHERE id % 7 = 0")
    spark.sql("UPDATE strata.cluster.dv SET p = 'u' WHERE id < 100")
    spark.sql("MERGE INTO strata.cluster.dv t USING cluster_src s ON t.id = s.id "
              "WHEN MATCHED THEN UPDATE SET p = 'm' WHEN NOT MATCHED THEN INSERT * "
              "WHEN NOT MATCHED BY SOURCE AND t.id >= 2800 THEN DELETE")
    dv_rows = sorted_rows(spark.table("strata.cluster.dv"))
    return {"v1_rows": v1_rows, "v2_rows": v2_rows, "v2_location": location(spark, "strata.cluster.t"),
            "dml_rows": dml_rows, "dml_location": location(spark, "strata.cluster.d"),
            "dv_rows": dv_rows, "dv_location": location(spark, "strata.cluster.dv")}


def scenario_kill(spark: SparkSession, cfg: dict[str, Any]) -> dict[str, Any]:
    """A V1 save, then a V2 append to a new catalog table; each kills one executor once."""
    v1, markers = cfg["v1_table"], cfg["markers"]
    # 8 partitions of 20,000 rows in batches of 2,000: far more than the Python worker's 64 KiB output buffer.
    await_executors(spark, 2)
    killing(source(spark, 0, 160_000, 8), markers, v1, "v1").write.format("strata").save(v1)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.cluster")
    spark.sql("CREATE TABLE strata.cluster.k (id BIGINT, p STRING) USING strata")
    v2 = location(spark, "strata.cluster.k").removeprefix("file:")
    await_executors(spark, 2)  # the killed executor's replacement
    killing(source(spark, 0, 160_000, 8), markers, v2, "v2").writeTo("strata.cluster.k").append()
    counts = {}
    for api, df in (("v1", spark.read.format("strata").load(v1)), ("v2", spark.table("strata.cluster.k"))):
        counts[api] = [df.count(), df.select("id").distinct().count()]
    return {"counts": counts, "v2_location": v2}


def scenario_fail(spark: SparkSession, cfg: dict[str, Any]) -> dict[str, Any]:
    v1, markers = cfg["v1_table"], cfg["markers"]
    await_executors(spark, 2)
    tagged(source(spark, 0, 1000, 4), markers, "first").write.format("strata").partitionBy("p").save(v1)
    errors: dict[str, str] = {}
    try:
        failing(source(spark, 1000, 9000, 8)).write.format("strata").mode("append").partitionBy("p").save(v1)
    except Exception as e:  # noqa: BLE001  (the test checks the message)
        errors["v1"] = str(e)[:2000]
    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.cluster")
    spark.sql("CREATE TABLE strata.cluster.f (id BIGINT, p STRING) USING strata PARTITIONED BY (p)")
    spark.sql("INSERT INTO strata.cluster.f SELECT id, cast(id % 5 AS STRING) FROM range(0, 1000, 1, 4)")
    try:
        failing(source(spark, 1000, 9000, 8)).writeTo("strata.cluster.f").append()
    except Exception as e:  # noqa: BLE001
        errors["v2"] = str(e)[:2000]
    return {"errors": errors, "v2_location": location(spark, "strata.cluster.f"),
            "v1_rows": sorted_rows(spark.read.format("strata").load(v1)),
            "v2_rows": sorted_rows(spark.table("strata.cluster.f"))}


SCENARIOS = {"writes": scenario_writes, "kill": scenario_kill, "fail": scenario_fail}


def main() -> None:
    cfg = json.loads(sys.argv[1])
    builder = SparkSession.builder.master(cfg["master"]).appName(f"strata-cluster-{cfg['scenario']}")
    for key, value in cfg["conf"].items():
        builder = builder.config(key, value)
    spark = strata.configure_spark(builder, cfg["warehouse"]).getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    try:
        result = SCENARIOS[cfg["scenario"]](spark, cfg)
        print("RESULT " + json.dumps(result), flush=True)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
