"""Runs delta-spark (io.delta:delta-spark_4.1_2.13) in its own Spark application, as an independent peer.

Usage: python delta_spark_job.py read PATH OUT_JSON
       python delta_spark_job.py write PATH OUT_JSON
       python delta_spark_job.py constraints PATH OUT_JSON
       python delta_spark_job.py append_id PATH OUT_JSON
       python delta_spark_job.py serve
`serve` keeps one delta-spark application for a whole test module, driven over stdin/stdout (see serve()).
`read` dumps the table's rows (as JSON strings) and version; `write` creates a table with delta-spark first;
`constraints` takes a table (id long) with CHECK constraint id > 0 made by Strata: it appends a violating row (and
records delta-spark's error), appends id 3, then adds a constraint of its own (id < 100). `append_id` appends
id 100 to a table (id long) and records the protocol delta-spark sees (DESCRIBE DETAIL).

       python delta_spark_job.py dml CORPUS_JSON BASE_DIR OUT_JSON
`dml` runs a statement corpus (tests/test_dml_delta_spark.py): CORPUS_JSON is {"tables": {name: [DDL, ...]},
"statements": [{"table": name, "sql": text}, ...]} where `{t}` stands for the table (delta.`BASE_DIR/name`) and
`{using}` for `delta`; it writes, per statement, the table's sorted rows as JSON strings (or the error's first line).
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
    mode = sys.argv[1]
    if mode == "serve":
        serve(session())
        return
    spark = session()
    if mode == "dml":
        run_corpus(spark, sys.argv[2], sys.argv[3], sys.argv[4])
        spark.stop()
        return
    run(spark, mode, sys.argv[2], sys.argv[3])


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


def table_rows(spark: SparkSession, path: str) -> list[str]:
    return sorted(spark.read.format("delta").load(path).toJSON().collect())


def run_corpus(spark: SparkSession, corpus_file: str, base: str, out: str) -> None:
    with open(corpus_file, encoding="utf-8") as f:
        corpus = json.load(f)
    paths = {name: os.path.join(base, name) for name in corpus["tables"]}
    for name, ddl in corpus["tables"].items():
        for statement in ddl:
            spark.sql(statement.format(t=f"delta.`{paths[name]}`", using="delta"))
    results = []
    for item in corpus["statements"]:
        path = paths[item["table"]]
        try:
            spark.sql(item["sql"].format(t=f"delta.`{path}`", using="delta"))
            results.append({"rows": table_rows(spark, path)})
        except Exception as e:  # recorded: Strata must fail on the same statements
            results.append({"error": str(e).strip().splitlines()[0][:500], "rows": table_rows(spark, path)})
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"results": results}, f)


def run(spark: SparkSession, mode: str, path: str, out: str) -> None:
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
    result = {"rows": sorted(df.toJSON().collect()), "version": version, "columns": df.columns, **result_extra}
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f)
    spark.stop()


REPLY = "@@delta-spark-peer@@ "  # prefix of reply lines: anything else on stdout is ignored by the caller


def serve(spark: SparkSession) -> None:
    """One JSON request per stdin line, one reply line (REPLY + JSON) on stdout each, until {"op": "stop"} or EOF.

    {"op": "corpus", "tables": {name: [DDL, ...]}, "statements": [{"table": name, "sql": text}, ...], "base": dir,
     "time_zone": zone}: like `dml` (tables at delta.`base/name`, `{t}` and `{using}` in the SQL), run in the session
     time zone given; replies {"results": [{"rows", "version"[, "error"]}, ...]}: per statement the sorted rows as
     JSON strings and the table's latest version (the newest commit file in its _delta_log).
    {"op": "sql", "statements": [text, ...], "time_zone": zone}: runs them in order; replies {} or {"error": ...}
     (the first failure's first line; later statements are not run).
    {"op": "read", "path": path, "versions": [v, ...] or null, "time_zone": zone}: the table's rows (sorted JSON
     strings) at each version (null: the latest): {"rows": [[...], ...]}.
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
            reply = {"error": f"{type(e).__name__}: {str(e).strip().splitlines()[0][:1000]}"}
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
                return {"error": str(e).strip().splitlines()[0][:1000], "statement": statement}
        return {}
    if op == "read":
        path, rows = request["path"], []
        for version in request.get("versions") or [None]:
            reader = spark.read.format("delta")
            if version is not None:
                reader = reader.option("versionAsOf", version)
            rows.append(sorted(reader.load(path).toJSON().collect()))
        return {"rows": rows}
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


if __name__ == "__main__":
    main()
