"""The documented strata user flow on a Spark Connect session (run by tests/test_connect.py in its own process).

    python tests/connect_script.py local  <workdir>   # SparkSession.builder.remote("local[2]"), as docs/python.md shows
    python tests/connect_script.py server <workdir>   # a Connect server (SparkConnectPlugin) on a free port + a client

`local` is exactly the documented builder line; pyspark then always serves on port 15002, so the script sets
SPARK_TESTING=1, which makes pyspark pick a free port (and tell its client) instead. `server` starts the server the
way a deployment does (plugin, explicit port, no test mode) and connects a plain Spark Connect client to it.

Only public strata helpers and public Spark APIs run on the Connect session. The last stdout line is
`RESULT <json>`.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import socket
import sys
import time
import warnings
from pathlib import Path
from typing import Any

os.environ["TZ"] = "UTC"
time.tzset()

MODE, WORKDIR = sys.argv[1], Path(sys.argv[2])
if MODE == "local":
    os.environ["SPARK_TESTING"] = "1"

from pyspark.sql import SparkSession  # noqa: E402

import strata  # noqa: E402

# The Connect client re-sends the builder's static configs (spark.jars, ...) as runtime configs and warns that the
# server refuses them; the server already has them.
warnings.filterwarnings("ignore", message="Failed to set spark")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def connect_session() -> Any:
    warehouse = str(WORKDIR / "warehouse")
    if MODE == "local":
        builder = strata.configure_spark(SparkSession.builder.remote("local[2]"), warehouse)
        return builder.config("spark.sql.session.timeZone", "UTC").config("spark.ui.enabled", "false").getOrCreate()
    port = free_port()
    server_builder = (SparkSession.builder.master("local[2]")
                      .config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
                      .config("spark.connect.grpc.binding.port", str(port))
                      .config("spark.ui.enabled", "false"))
    strata.configure_spark(server_builder, warehouse).getOrCreate()
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    client = ConnectSession.builder.remote(f"sc://localhost:{port}").getOrCreate()
    client.conf.set("spark.sql.session.timeZone", "UTC")
    return client


def rows(df: Any) -> list[list[Any]]:
    return sorted([list(r) for r in df.collect()])


def error_of(call: Any) -> dict[str, Any]:
    try:
        call()
    except Exception as e:  # noqa: BLE001  (reported to the test)
        return {"type": type(e).__name__, "message": str(e).splitlines()[0] if str(e) else "",
                "jvm_class": getattr(e, "jvm_class", None), "condition": getattr(e, "condition", None),
                "sql_state": getattr(e, "sql_state", None),
                # What Spark Connect's own exception (the cause) says: the server sent the condition.
                "spark_condition": _call(e.__cause__, "getCondition"),
                "spark_sql_state": _call(e.__cause__, "getSqlState")}
    return {"type": None}


def _call(error: BaseException | None, method: str) -> Any:
    return getattr(error, method)() if error is not None and hasattr(error, method) else None


def main() -> None:
    spark = connect_session()
    out: dict[str, Any] = {"session": f"{type(spark).__module__}.{type(spark).__name__}"}
    path = str(WORKDIR / "sales")
    df = spark.createDataFrame([(1, "FR"), (2, "DE")], "id long, country string")

    strata.write(df, path, partition_by=["country"], user_metadata="initial load")               # v0
    strata.write(spark.createDataFrame([(3, "FR")], "id long, country string"), path, "append")   # v1
    time.sleep(1.1)
    between = dt.datetime.now(dt.timezone.utc)
    time.sleep(1.1)
    strata.write(spark.createDataFrame([(20, "DE")], "id long, country string"), path, "overwrite",
                 dynamic_partition_overwrite=True)                                                # v2
    strata.write(spark.createDataFrame([(30, "FR")], "id long, country string"), path, "overwrite",
                 replace_where="country = 'FR'", app_id="loader", app_version=7)                  # v3
    strata.write(spark.createDataFrame([(31, "FR")], "id long, country string"), path, "overwrite",
                 replace_where="country = 'FR'", app_id="loader", app_version=7)                  # skipped

    table = strata.Table.for_path(spark, path)
    out["latest"] = rows(table.to_df())
    out["v0"] = rows(table.to_df(version=0))
    out["v1"] = rows(table.to_df(version=1))
    out["v2"] = rows(table.to_df(version=2))
    out["at_between"] = rows(table.to_df(timestamp=between))
    out["read_api_v0"] = rows(spark.read.format("strata").option("versionAsOf", 0).load(path))

    out["version"] = table.version()
    out["history"] = [[r.version, r.operation] for r in table.history(limit=2).collect()]
    detail = table.detail()
    out["detail"] = [detail.version, detail.num_files, list(detail.partition_columns)]
    out["validation_error"] = error_of(lambda: strata.write(df, path, "append", replace_where="country = 'FR'"))
    out["schema_error"] = error_of(
        lambda: strata.write(spark.createDataFrame([(1,)], "x int"), path, "append"))
    out["constraint_error"] = error_of(
        lambda: strata.write(spark.createDataFrame([(40, "DE")], "id long, country string"), path, "overwrite",
                             replace_where="country = 'FR'"))

    def raw_misspelt() -> None:
        with strata.errors.translate():
            df.write.format("strata").mode("append").option("compresion", "zstd").save(path)

    out["raw_option_error"] = error_of(raw_misspelt)
    out["missing_table_error"] = error_of(lambda: strata.Table.for_path(spark, str(WORKDIR / "none")).to_df())
    out["exists_error"] = error_of(lambda: strata.write(df, path, "error"))
    out["after_errors"] = rows(table.to_df())
    optimized = table.optimize()
    out["optimize"] = [optimized.files_removed, optimized.files_added, len(optimized.versions)]
    out["vacuum_dry_run"] = [table.vacuum(dry_run=True).files_deleted]
    restored = table.restore(version=1)
    out["restore"] = [restored.version, restored.restored_version, rows(table.to_df())]
    out["checkpoint"] = table.checkpoint()
    out["cleanup_log"] = table.cleanup_log().oldest_version

    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.db")
    spark.sql("CREATE TABLE strata.db.events (id BIGINT, day STRING) USING strata PARTITIONED BY (day)")
    out["catalog_columns"] = spark.table("strata.db.events").columns
    out["catalog_location_exists"] = (WORKDIR / "warehouse" / "db" / "events" / "_delta_log").is_dir()
    spark.sql("ALTER TABLE strata.db.events ADD CONSTRAINT pos CHECK (id > 0)")

    def insert_negative() -> None:
        with strata.errors.translate():
            spark.sql("INSERT INTO strata.db.events VALUES (-1, 'mon')").collect()

    out["check_error"] = error_of(insert_negative)
    spark.stop()
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
