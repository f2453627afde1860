"""Runs delta-spark (io.delta:delta-spark_4.1_2.13) in its own Spark application, as an independent peer.

Usage: python delta_spark_job.py serve
One delta-spark application for the whole pytest run (tests/delta_spark_peer.py), driven over stdin/stdout: see
serve() for the requests. Besides SQL, reads and streams, it runs the scenarios below on request:

`interop` (tests/test_delta_spark_interop.py), by mode: `read` dumps the table's rows (as JSON strings) and version;
`write` creates a table with delta-spark first; `constraints` takes a table (id long) with CHECK constraint id > 0
made by Strata: it appends a violating row (and records delta-spark's error), appends id 3, then adds a constraint of
its own (id < 100). `append_id` appends id 100 to a table (id long) and records the protocol delta-spark sees
(DESCRIBE DETAIL).

`dv_history` builds tables with deletion vectors (tests/test_deletion_vectors.py) under a base directory, one per
entry of DV_TABLES, and replies {"tables": {name: history}, "read": {PATH: history}}: a history holds the columns,
each commit's operation and, per version, the sorted rows as JSON strings (read with versionAsOf) in UTC and, for the
tables of DV_TIME_ZONE_TABLES, in America/Los_Angeles too. PATHs are existing tables, only read.
"""
from __future__ import annotations

import datetime
import decimal
import json
import os
import sys
import time
from typing import Any

from pyspark.sql import SparkSession


def main() -> None:
    if sys.argv[1:] != ["serve"]:
        raise SystemExit("usage: delta_spark_job.py serve")
    serve(session())


def session() -> SparkSession:
    return (
        SparkSession.builder.master("local[2]")
        .config("spark.jars", os.environ["STRATA_DELTA_JARS"])
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.databricks.delta.snapshotPartitions", "2")  # tiny tables: log replay in 2 tasks, not 50
        .getOrCreate()
    )


# Columns of the deletion-vector tables: a string, a date, a timestamp and a decimal, each NULL on some rows; `id` is
# the key the statements pick rows by. Rows are made from spark.range, so each range partition becomes one file.
DV_COLUMNS = "id BIGINT, s STRING, d DATE, ts TIMESTAMP, amt DECIMAL(12,3)"
DV_ROW = [
    "id",
    "CASE WHEN id % 11 = 0 THEN NULL ELSE concat('s-', id, CASE id % 3 WHEN 0 THEN ' ünï ✓' ELSE '' END) END AS s",
    "CASE WHEN id % 13 = 0 THEN NULL ELSE date_add(DATE'1969-12-20', CAST(id % 20000 AS INT)) END AS d",
    "CASE WHEN id % 7 = 0 THEN NULL ELSE timestamp_micros(id * 3600000123 - 86400000000) END AS ts",
    "CASE WHEN id % 9 = 0 THEN NULL ELSE CAST(id * 1.125 - 50 AS DECIMAL(12,3)) END AS amt",
]
DV_PARTITION = "CASE id % 4 WHEN 0 THEN 'a' WHEN 1 THEN 'b/c' WHEN 2 THEN NULL ELSE 'with space' END AS p"
DV_PROPERTIES = "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true', 'delta.checkpointInterval' = '3')"
MERGE_SOURCE = ("(SELECT id, concat('m-', id) AS s, DATE'2030-01-01' AS d, TIMESTAMP'2030-01-01 12:00:00' AS ts, "
                "CAST(-1.5 AS DECIMAL(12,3)) AS amt, {p}id % 3 = 0 AS gone FROM VALUES {ids} AS v(id))")
# Per table: the CREATE TABLE, then steps: ("append", first id, end id, files) or a SQL statement ({t}: the table).
DV_TABLES: dict[str, dict[str, Any]] = {
    "flat": {"partitioned": False, "steps": [
        ("append", 0, 300, 3),                                               # 3 files: ids 0-99, 100-199, 200-299
        "DELETE FROM {t} WHERE id BETWEEN 10 AND 14",                        # a vector on the first file
        "DELETE FROM {t} WHERE id % 10 = 7 AND id < 100",                    # replaced by a bigger one (checkpoint)
        "UPDATE {t} SET s = concat('u-', s), amt = amt * 2 WHERE id % 25 = 1",  # vectors on all three files
        "MERGE INTO {t} AS t USING " + MERGE_SOURCE.format(p="", ids="(150), (151), (153), (160), (1000), (1001)")
        + " AS src ON t.id = src.id WHEN MATCHED AND src.gone THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET s = src.s, ts = src.ts WHEN NOT MATCHED THEN INSERT (id, s, d, ts, amt) "
        "VALUES (src.id, src.s, src.d, src.ts, src.amt)",
        "DELETE FROM {t} WHERE id >= 200 AND id < 300",                      # every row of the third file (checkpoint)
        ("append", 300, 360, 1),
        "DELETE FROM {t} WHERE id % 3 = 0 AND id >= 300",
        "OPTIMIZE {t}",                                                      # rewrites the files without vectors
        "DELETE FROM {t} WHERE id % 4 = 0 OR s IS NULL",                     # vectors on the compacted file
        "INSERT INTO {t} VALUES (5000, NULL, NULL, NULL, NULL), (5001, 'last', DATE'2000-02-29', "
        "TIMESTAMP'2000-02-29 23:59:59.999999', 12345.678)",
    ]},
    "part": {"partitioned": True, "steps": [
        ("append", 0, 200, 2),                                               # 2 files in each of 4 partitions
        "DELETE FROM {t} WHERE p = 'a' AND id < 50",
        "DELETE FROM {t} WHERE p IS NULL AND id % 3 = 0",                    # (checkpoint)
        "DELETE FROM {t} WHERE p = 'a' AND id < 100",                        # the rest of a file that had a vector
        "UPDATE {t} SET p = 'moved', s = upper(s) WHERE id % 10 = 1",        # rows change partition
        "MERGE INTO {t} AS t USING " + MERGE_SOURCE.format(p="'b/c' AS p, ", ids="(5), (12), (33), (42), (2000)")
        + " AS src ON t.id = src.id WHEN MATCHED AND src.gone THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET amt = src.amt, d = src.d WHEN NOT MATCHED THEN INSERT *",  # (checkpoint)
        ("append", 200, 240, 1),
        "DELETE FROM {t} WHERE id % 2 = 0 AND p = 'b/c'",
        "OPTIMIZE {t} WHERE p = 'with space'",                               # (checkpoint)
        "DELETE FROM {t} WHERE amt IS NULL OR d IS NULL",
    ]},
    # Small row groups (set while this table is written): vectors hold rows of several row groups of one file.
    "row_groups": {"partitioned": False, "row_group_bytes": 8192, "steps": [
        ("append", 0, 20000, 2),
        "DELETE FROM {t} WHERE id % 1000 = 999 OR id IN (0, 9999, 10000, 19999)",
        "DELETE FROM {t} WHERE id BETWEEN 4000 AND 6500",                    # a bigger vector for the first file
        "UPDATE {t} SET s = 'updated' WHERE id % 777 = 0",
        "DELETE FROM {t} WHERE id % 501 = 0",
    ]},
}
DV_TIME_ZONE_TABLES = ["flat"]
OTHER_TIME_ZONE = "America/Los_Angeles"


def history(spark: SparkSession, path: str, time_zones: list[str]) -> dict[str, object]:
    """Per version, the sorted rows as JSON strings in each time zone; the columns; each commit's operation."""
    entries = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").select("version", "operation").collect()
    operations = [op for _, op in sorted((r["version"], r["operation"]) for r in entries)]
    result: dict[str, object] = {"columns": spark.read.format("delta").load(path).columns, "operations": operations}
    # One DataFrame per version: its snapshot is built once, and toJSON takes the session time zone when called.
    frames = [spark.read.format("delta").option("versionAsOf", v).load(path) for v in range(len(operations))]
    for zone in time_zones:
        began = time.monotonic()
        spark.conf.set("spark.sql.session.timeZone", zone)
        result[zone] = [sorted(df.toJSON().collect()) for df in frames]
        print(f"dv_history: {time.monotonic() - began:6.1f}s read {len(frames)} versions of {path} in {zone}",
              file=sys.stderr)
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    return result


def build_dv_table(spark: SparkSession, path: str, spec: dict[str, Any]) -> None:
    partitioned = bool(spec["partitioned"])
    hadoop_conf = spark.sparkContext._jsc.hadoopConfiguration()
    if "row_group_bytes" in spec:
        hadoop_conf.set("parquet.block.size", str(spec["row_group_bytes"]))
    table = f"delta.`{path}`"
    columns = DV_COLUMNS + (", p STRING" if partitioned else "")
    spark.sql(f"CREATE TABLE {table} ({columns}) USING delta {'PARTITIONED BY (p) ' if partitioned else ''}"
              + DV_PROPERTIES)
    for step in spec["steps"]:
        began = time.monotonic()
        if isinstance(step, tuple):
            _, start, end, files = step
            row = DV_ROW + ([DV_PARTITION] if partitioned else [])
            spark.range(start, end, 1, files).selectExpr(*row).write.format("delta").mode("append").save(path)
        else:
            spark.sql(step.format(t=table))
        print(f"dv_history: {time.monotonic() - began:6.1f}s {str(step)[:60]}", file=sys.stderr)
    hadoop_conf.unset("parquet.block.size")


def run_dv_history(spark: SparkSession, base: str, read_paths: list[str]) -> dict[str, Any]:
    # Each snapshot (every commit, every versionAsOf read) is rebuilt in one task instead of 2: tiny tables.
    spark.conf.set("spark.databricks.delta.snapshotPartitions", "1")
    try:
        tables = {}
        for name, spec in DV_TABLES.items():
            path = os.path.join(base, name)
            build_dv_table(spark, path, spec)
            zones = ["UTC"] + ([OTHER_TIME_ZONE] if name in DV_TIME_ZONE_TABLES else [])
            tables[name] = {"path": path, **history(spark, path, zones)}
        read = {path: history(spark, path, ["UTC"]) for path in read_paths}
    finally:
        spark.conf.set("spark.databricks.delta.snapshotPartitions", "2")
    return {"tables": tables, "read": read, "time_zone": OTHER_TIME_ZONE}


def run_interop(spark: SparkSession, mode: str, path: str) -> dict[str, Any]:
    if mode == "write":
        rows = [
            (i, ["a/b", "k=v", "100%", "with space", "ünï", None, ""][i % 7],
             datetime.date(2024, 1, 1 + i % 28), datetime.datetime(2024, 1, 1, i % 24, 30, 15, 123456),
             decimal.Decimal(i) / 8, i % 2 == 0)
            for i in range(40)
        ]
        schema = "id long, p string, d date, ts timestamp, amt decimal(12,3), flag boolean"
        df = spark.createDataFrame(rows, schema)
        df.write.format("delta").partitionBy("p").save(path)
        for k in range(11):  # crosses delta-spark's checkpoint interval of 10
            spark.createDataFrame(rows[k:k + 3], schema).write.format("delta").mode("append").save(path)
        spark.createDataFrame(rows[5:30], schema).write.format("delta").mode("overwrite").save(path)
        spark.createDataFrame(rows[0:4], schema).write.format("delta").mode("append").save(path)
    result_extra: dict[str, object] = {}
    if mode == "constraints":
        try:
            spark.createDataFrame([(-1,)], "id long").write.format("delta").mode("append").save(path)
            result_extra["violation_error"] = ""
        except Exception as e:  # delta-spark's DeltaInvariantViolationException, through py4j
            lines = [line for line in str(e).splitlines() if "constraint" in line.lower()]
            result_extra["violation_error"] = lines[0] if lines else str(e)[:2000]
        spark.createDataFrame([(3,)], "id long").write.format("delta").mode("append").save(path)
        spark.sql(f"ALTER TABLE delta.`{path}` ADD CONSTRAINT small CHECK (id < 100)")
    if mode == "append_id":
        spark.createDataFrame([(100,)], "id long").write.format("delta").mode("append").save(path)
        detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
        result_extra["protocol"] = [detail["minReaderVersion"], detail["minWriterVersion"]]
    df = spark.read.format("delta").load(path)
    version = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").agg({"version": "max"}).collect()[0][0]
    return {"rows": sorted(df.toJSON().collect()), "version": version, "columns": df.columns, **result_extra}


REPLY = "@@delta-spark-peer@@ "  # prefix of reply lines: anything else on stdout is ignored by the caller


def serve(spark: SparkSession) -> None:
    """One JSON request per stdin line, one reply line (REPLY + JSON) on stdout each, until {"op": "stop"} or EOF.

    {"op": "corpus", "tables": {name: [DDL, ...]}, "statements": [{"table": name, "sql": text}, ...], "base": dir,
     "time_zone": zone}: like `dml` (tables at delta.`base/name`, `{t}` and `{using}` in the SQL), run in the session
     time zone given; replies {"results": [{"rows", "version"[, "error"]}, ...]}: per statement the sorted rows as
     JSON strings and the table's latest version (the newest commit file in its _delta_log).
    {"op": "sql", "statements": [text, ...], "time_zone": zone}: runs them in order; replies {} or {"error": ...}
     (the first failure's first line; later statements are not run).
    {"op": "query", "sql": text, "time_zone": zone}: runs one statement and replies {"rows": [...], "schema": ...}, its result
     rows as sorted JSON strings (e.g. the paths of VACUUM ... DRY RUN), or {"error": ...}.
    {"op": "write", "query": sql, "path": path, "mode": m, "options": {...}}: df.write.format("delta") of the query's
     rows; replies {} or {"error": ...}
    {"op": "read", "path": path, "versions": [v, ...] or null, "time_zone": zone}: the table's rows (sorted JSON
     strings) at each version (null: the latest): {"rows": [[...], ...]}.
    {"op": "interop", "mode": m, "path": p} and {"op": "dv_history", "base": dir, "read": [path, ...]}: the
     scenarios of the module docstring; reply as described there.
    {"op": "stream", "source": {"format": f, "path": p, "schema": ddl or null, "options": {...}},
     "sink": {"format": "delta" | "parquet" | "json", "path": p}, "checkpoint": dir, "time_zone": zone}: one
     Trigger.AvailableNow run of readStream.format(f).load(p) -> writeStream.format(...) with that checkpoint; replies
     {"batches": [input rows of each micro-batch of this run], "rows": the sink's rows (sorted JSON strings)}.
    Any other failure replies {"error": ...}, and the peer goes on serving.
    """
    spark.conf.set("spark.databricks.delta.merge.materializeSource", "none")  # deterministic sources only
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "stop":
            break  # the JVM exits when this process does (its stdin closes): no spark.stop(), which takes long
        spark.conf.set("spark.sql.session.timeZone", request.get("time_zone", "UTC"))
        start = time.monotonic()
        try:
            reply = serve_one(spark, request)
        except Exception as e:  # reported to the test, which fails naming it
            lines = str(e).strip().splitlines()
            # The first line, and the lines naming a per-stream conf (delta-spark's `SET ....ckpt_<hash> = ...`).
            reply = {"error": "\n".join([f"{type(e).__name__}: {lines[0][:1000]}"] + [
                line.strip() for line in lines[1:] if ".ckpt_" in line])}
        print(f"delta-spark peer: {request['op']} took {time.monotonic() - start:.1f}s", file=sys.stderr, flush=True)
        sys.stdout.write(REPLY + json.dumps(reply) + "\n")
        sys.stdout.flush()
    sys.stdout.flush()
    os._exit(0)


def serve_one(spark: SparkSession, request: dict[str, Any]) -> dict[str, Any]:
    op = request["op"]
    if op == "sql":
        for statement in request["statements"]:
            try:
                spark.sql(statement)
            except Exception as e:
                # A py4j error's first line only names the call; the JVM exception's line follows it.
                lines = [line for line in str(e).strip().splitlines() if line.strip()]
                cause = next((line for line in lines if line.startswith(": ")), lines[0] if lines else "")
                return {"error": cause.lstrip(": ")[:1000], "statement": statement}
        return {}
    if op == "query":
        df = spark.sql(request["sql"])
        return {"rows": sorted(df.toJSON().collect()), "schema": df.schema.simpleString()}
    if op == "read":
        path, rows = request["path"], []
        for version in request.get("versions") or [None]:
            reader = spark.read.format("delta")
            if version is not None:
                reader = reader.option("versionAsOf", version)
            rows.append(sorted(reader.load(path).toJSON().collect()))
        return {"rows": rows}
    if op == "write":
        try:
            (spark.sql(request["query"]).write.format("delta").mode(request.get("mode", "append"))
             .options(**request.get("options", {})).save(request["path"]))
        except Exception as e:  # the JVM exception's line, as "sql" replies it
            lines = [line for line in str(e).strip().splitlines() if line.strip()]
            return {"error": next((line for line in lines if line.startswith(": ")), lines[0] if lines else "")[:1000]}
        return {}
    if op == "input_files":
        df = spark.read.format("delta").load(request["path"]).where(request["condition"])
        return {"files": sorted(df.inputFiles())}
    if op == "stream":
        return run_stream(spark, request["source"], request["sink"], request["checkpoint"])
    if op == "interop":
        return run_interop(spark, request["mode"], request["path"])
    if op == "dv_history":
        return run_dv_history(spark, request["base"], request.get("read", []))
    if op == "corpus":
        paths = {name: os.path.join(request["base"], name) for name in request["tables"]}
        for name, ddl in request["tables"].items():
            for statement in ddl:
                spark.sql(statement.format(t=f"delta.`{paths[name]}`", using="delta"))
        results = []
        for item in request["statements"]:
            table, result = paths[item["table"]], {}  # type: tuple[str, dict[str, Any]]
            try:
                spark.sql(item["sql"].format(t=f"delta.`{table}`", using="delta"))
            except Exception as e:  # recorded: Strata must fail on the same statements
                result["error"] = str(e).strip().splitlines()[0][:500]
            result["rows"] = sorted(spark.read.format("delta").load(table).toJSON().collect())
            result["version"] = max(int(f[:-5]) for f in os.listdir(os.path.join(table, "_delta_log"))
                                    if f.endswith(".json") and f[:-5].isdigit())
            results.append(result)
        return {"results": results}
    raise ValueError(f"unknown op {op}")


def run_stream(spark: SparkSession, source: dict[str, Any], sink: dict[str, Any], checkpoint: str) -> dict[str, Any]:
    reader = spark.readStream.format(source["format"]).options(**source.get("options", {}))
    if source.get("schema"):
        reader = reader.schema(source["schema"])
    query = (reader.load(source["path"]).writeStream.format(sink["format"]).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start(sink["path"]))
    query.awaitTermination()
    batches = [p["numInputRows"] for p in query.recentProgress if p["batchId"] >= 0 and "numInputRows" in p]
    rows = sorted(spark.read.format(sink["format"]).load(sink["path"]).toJSON().collect())
    return {"batches": batches, "rows": rows}


if __name__ == "__main__":
    main()
