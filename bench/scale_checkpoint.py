"""The metadata-scale set's checkpoint-only table (bench/scale.py --layout checkpoint; `make bench-scale SCALE=1`).

The table of bench/scale_log.py (F live files in 1,000 partitions, statistics of id and v, the files of partition
p = 5 real), but its files are only in a multi-part checkpoint at version 0 (plus `_last_checkpoint`): commit 0's
JSON holds only commitInfo, protocol and metaData (delta-spark needs the commit file of the checkpoint's version to
exist; both engines take the state from the checkpoint), so no 3.6 GB commit of 10,000,000 adds is written, and no
snapshot of the table is ever built on a driver. The parts are written by a Spark job
(`spark.range(F)`, the add rows computed by SQL expressions, Spark's Parquet writer: the schema delta-spark's own
checkpoints have), so building it needs no memory in proportion to F. File n's path is
`p=<n % 1000>/part-<n:05d>-<md5("<generator>/<F>/<n>") as a UUID>.c000.snappy.parquet`, its size 32-128 MiB from
xxhash64(n), its statistics those of scale_log.stats (the real files': their true sizes and REAL_ROWS rows).
"""
from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from scale_log import (CREATED_MS, GENERATOR, MAX_SIZE, MIN_SIZE, PARTITIONS, POINT_PARTITION, REAL_ROWS,
                       ROWS_PER_FILE, SCHEMA, check_files)

Json = dict[str, Any]
LAYOUT = "checkpoint-only"


def uuid_of(files: int, n: int) -> str:
    h = hashlib.md5(f"{GENERATOR}/{LAYOUT}/{files}/{n}".encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def path_of(files: int, n: int) -> str:
    return f"p={n % PARTITIONS}/part-{n:05d}-{uuid_of(files, n)}.c000.snappy.parquet"


def real_paths(files: int) -> list[tuple[int, str]]:
    """(n, log path) of the files that exist: those of partition POINT_PARTITION."""
    check_files(files)
    return [(n, path_of(files, n)) for n in range(POINT_PARTITION, files, PARTITIONS)]


ADD = ("STRUCT<path: STRING, partitionValues: MAP<STRING, STRING>, size: BIGINT, modificationTime: BIGINT, "
       "dataChange: BOOLEAN, stats: STRING, tags: MAP<STRING, STRING>>")
METADATA = ("STRUCT<id: STRING, name: STRING, description: STRING, format: STRUCT<provider: STRING, "
            "options: MAP<STRING, STRING>>, schemaString: STRING, partitionColumns: ARRAY<STRING>, "
            "configuration: MAP<STRING, STRING>, createdTime: BIGINT>")
PROTOCOL = "STRUCT<minReaderVersion: INT, minWriterVersion: INT>"


def rows(spark: SparkSession, files: int, real: dict[int, int]) -> DataFrame:
    """Every checkpoint row: protocol, metaData, then the F adds (real files with their sizes and row counts)."""
    n = F.col("id")
    prefix = f"{GENERATOR}/{LAYOUT}/{files}/"
    h = F.md5(F.concat(F.lit(prefix), n.cast("string")))
    uuid = F.concat_ws("-", F.substring(h, 1, 8), F.substring(h, 9, 4), F.substring(h, 13, 4),
                       F.substring(h, 17, 4), F.substring(h, 21, 12))
    real_df = spark.createDataFrame([(k, s) for k, s in real.items()], "n BIGINT, real_size BIGINT")
    adds = spark.range(files).join(F.broadcast(real_df), F.col("id") == F.col("n"), "left")
    nrows = F.when(F.col("real_size").isNull(), F.lit(ROWS_PER_FILE)).otherwise(F.lit(REAL_ROWS))
    size = F.coalesce(F.col("real_size"), F.lit(MIN_SIZE) + F.pmod(F.xxhash64(n), F.lit(MAX_SIZE - MIN_SIZE)))
    lo = n * F.lit(ROWS_PER_FILE)
    hi = lo + nrows - 1
    stats = F.format_string('{"numRecords":%d,"minValues":{"id":%d,"v":"v-%012d"},"maxValues":{"id":%d,'
                            '"v":"v-%012d"},"nullCount":{"id":0,"v":0}}', nrows, lo, lo, hi, hi)
    add = F.struct(
        F.format_string("p=%d/part-%05d-%s.c000.snappy.parquet", F.pmod(n, F.lit(PARTITIONS)), n, uuid).alias("path"),
        F.create_map(F.lit("p"), F.pmod(n, F.lit(PARTITIONS)).cast("string")).alias("partitionValues"),
        size.alias("size"), (F.lit(CREATED_MS) + n).alias("modificationTime"), F.lit(True).alias("dataChange"),
        stats.alias("stats"), F.lit(None).cast("MAP<STRING, STRING>").alias("tags"))
    add_rows = adds.select(add.alias("add"), F.lit(None).cast(METADATA).alias("metaData"),
                           F.lit(None).cast(PROTOCOL).alias("protocol"))
    table_id = uuid_of(files, -1)
    meta = spark.sql(
        f"SELECT CAST(NULL AS {ADD}) AS add, named_struct('id', '{table_id}', 'name', CAST(NULL AS STRING), "
        "'description', CAST(NULL AS STRING), 'format', named_struct('provider', 'parquet', 'options', "
        "map_from_arrays(CAST(array() AS ARRAY<STRING>), CAST(array() AS ARRAY<STRING>))), "
        f"'schemaString', '{json.dumps(SCHEMA, separators=(',', ':'))}', 'partitionColumns', array('p'), "
        "'configuration', map_from_arrays(CAST(array() AS ARRAY<STRING>), CAST(array() AS ARRAY<STRING>)), "
        f"'createdTime', CAST({CREATED_MS} AS BIGINT)) AS metaData, CAST(NULL AS {PROTOCOL}) AS protocol "
        f"UNION ALL SELECT CAST(NULL AS {ADD}), CAST(NULL AS {METADATA}), named_struct('minReaderVersion', 1, "
        "'minWriterVersion', 2)")
    return meta.unionByName(add_rows)


def write(spark: SparkSession, table: Path, files: int, parts: int, real: dict[int, int]) -> Json:
    """Writes `parts` checkpoint parts at version 0 and `_last_checkpoint` into `table`/_delta_log."""
    log = table / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    tmp = table.parent / "checkpoint-parts"
    shutil.rmtree(tmp, ignore_errors=True)
    started = time.perf_counter()
    rows(spark, files, real).repartition(parts).write.option("compression", "snappy").parquet(str(tmp))
    written = sorted(tmp.glob("part-*.parquet"))
    if len(written) != parts:
        raise RuntimeError(f"{len(written)} checkpoint parts written, expected {parts}")
    total = 0
    for i, f in enumerate(written, 1):
        target = log / f"{0:020d}.checkpoint.{i:010d}.{parts:010d}.parquet"
        shutil.move(str(f), target)
        total += target.stat().st_size
    shutil.rmtree(tmp)
    hint = {"version": 0, "size": files + 2, "parts": parts, "sizeInBytes": total, "numOfAddFiles": files}
    (log / "_last_checkpoint").write_text(json.dumps(hint) + "\n")
    # delta-spark refuses a log without the commit file of the checkpoint's version ("Could not find any delta files
    # for version 0"); it holds the table's protocol and metadata only: the files are in the checkpoint alone.
    header = [{"commitInfo": {"timestamp": CREATED_MS, "operation": "CREATE TABLE", "engineInfo": GENERATOR}},
              {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
              {"metaData": {"id": uuid_of(files, -1), "format": {"provider": "parquet", "options": {}},
                            "schemaString": json.dumps(SCHEMA, separators=(",", ":")), "partitionColumns": ["p"],
                            "configuration": {}, "createdTime": CREATED_MS}}]
    (log / f"{0:020d}.json").write_text("".join(json.dumps(a, separators=(",", ":")) + "\n" for a in header))
    return {"checkpoint_s": time.perf_counter() - started, "checkpoint_bytes": total, "parts": parts}
