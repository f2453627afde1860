"""A streaming query in a process of its own, for tests/test_streaming_sink.py: JSON files (one per micro-batch) into
a Strata path table. The test kills its driver JVM with SIGKILL and starts it again from the same checkpoint.

Argument: a JSON object with `input`, `table`, `checkpoint`, `pid_file` (the driver JVM writes its pid there),
optional `pause_at` / `marker` (the test-only pause point, `strata.test.pauseAt`), `txn_app_id`, and
`available_now` (process every file, then exit; otherwise run until killed).
"""
from __future__ import annotations

import json
import os
import sys

from pyspark.sql import SparkSession

import strata


def main() -> None:
    args = json.loads(sys.argv[1])
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("strata-streaming-child")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("strata.test.pauseAt", args.get("pause_at", ""))
        .config("strata.test.pauseMarker", args.get("marker", ""))
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
