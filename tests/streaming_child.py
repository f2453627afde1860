"""A streaming query in a process of its own, for tests/test_streaming_sink.py: JSON files (one per micro-batch) into
a Strata path table. The test kills its driver JVM with SIGKILL and starts it again from the same checkpoint.

Argument: a JSON object with `input`, `table`, `checkpoint`, `pid_file` (the driver JVM writes its pid there),
optional `pause_at` / `marker` (a pause point, see below), `txn_app_id`, and `available_now` (process every file,
then exit; otherwise run until killed).

The driver runs with two test-support classes from build/strata-testkit.jar (which `make test-python` builds; never
part of the product): the log store io.strata.testkit.FaultInjectingLogStore and, for FileContext's `file` paths,
io.strata.testkit.PausingLocalFs. `pause_at` = `beforeCommit@<n>` makes the driver write `marker` and block right
before the put of micro-batch n's log commit (its `txn` version is n); `afterCommit@<n>`, once that commit and all the
sink does after it are done, right before Spark records batch n in its checkpoint (`commits/<n>`). The test kills it
there.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

import strata

TESTKIT_JAR = Path(__file__).resolve().parent.parent / "build" / "strata-testkit.jar"
LOG_STORE = "io.strata.testkit.FaultInjectingLogStore"
FILE_CONTEXT_FS = "io.strata.testkit.PausingLocalFs"


def main() -> None:
    args = json.loads(sys.argv[1])
    if not TESTKIT_JAR.is_file():
        sys.exit(f"{TESTKIT_JAR} is missing: build it with `make testkit` (`make test-python` does)")
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("strata-streaming-child")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.jars", str(TESTKIT_JAR))  # configure_spark adds the connector's jar after it
        .config("spark.hadoop.strata.logStore.file.impl", LOG_STORE)
        .config("spark.hadoop.fs.AbstractFileSystem.file.impl", FILE_CONTEXT_FS)
        .config("spark.hadoop.strata.testkit.pauseAt", args.get("pause_at", ""))
        .config("spark.hadoop.strata.testkit.pauseMarker", args.get("marker", ""))
    )
    spark = strata.configure_spark(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    pid = jvm.java.lang.ProcessHandle.current().pid()
    tmp = args["pid_file"] + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(pid))
    os.replace(tmp, args["pid_file"])

    source = spark.readStream.schema("id long, p string").option("maxFilesPerTrigger", 1).json(args["input"])
    writer = (
        source.writeStream.format("strata")
        .partitionBy("p")
        .option("checkpointLocation", args["checkpoint"])
    )
    if args.get("txn_app_id"):
        writer = writer.option("txnAppId", args["txn_app_id"])
    if args.get("available_now"):
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime="0 seconds")
    writer.start(args["table"]).awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main()
