"""Liquid clustering probe (issue 24; one run, not part of `make bench`): how much an incremental OPTIMIZE of a
clustered table rewrites, and what clustering does to a point query's files.

Table: CLUSTER BY (a, b), delta.targetFileSize 512kb (so OPTIMIZE writes several files); 20 appends of 25,000 rows, a and b pseudo-random in [0, 1,000,000) (Spark's hash of id),
each append one file per task (local[2]). Then, timed one at a time (a 2-core machine shared with other jobs):
  1. OPTIMIZE (everything unclustered)
  2. 2 appends with a in [2,000,000, 2,100,000) (outside every clustered file's range) -> OPTIMIZE
  3. 2 appends over the whole range again -> OPTIMIZE
  4. OPTIMIZE again (nothing new)
Files read by `a = A AND b = B` (`inputFiles()` of Strata's pruned scan) before and after step 1.
Run: .venv/bin/python bench/clustering_probe.py [min cube size, e.g. 2mb; default delta-spark's 100g]
(ZCubes: a cube of at least the min size is stable; new files join the smaller ones.)
"""
from __future__ import annotations

import sys
import tempfile
import time

from pyspark.sql import SparkSession

import strata


def main() -> None:
    work = tempfile.mkdtemp(prefix="clustering-probe-")
    spark = strata.configure_spark(SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                                   .config("spark.sql.shuffle.partitions", "2"), f"{work}/wh").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if len(sys.argv) > 1:
        spark.conf.set("spark.strata.optimize.clustering.minCubeSize", sys.argv[1])
    path = f"{work}/t"
    t = f"strata.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, a BIGINT, b BIGINT, s STRING) USING strata CLUSTER BY (a, b) "
              "TBLPROPERTIES ('delta.targetFileSize' = '512kb')")

    def append(start: int, a_expr: str) -> None:
        spark.sql(f"INSERT INTO {t} SELECT id, {a_expr}, pmod(hash(id, 7), 1000000), concat('s', id) "
                  f"FROM range({start}, {start + 25000})")

    def optimize(label: str) -> None:
        t0 = time.monotonic()
        r = spark.sql(f"CALL strata.system.optimize(table => '{path}')").collect()[0]
        seconds = time.monotonic() - t0
        live = spark.sql(f"CALL strata.system.detail(table => '{path}')").collect()[0].numFiles
        print(f"{label}: files_removed={r.files_removed} files_added={r.files_added} {seconds:.1f}s, "
              f"live files {live}")

    for i in range(20):
        append(i * 25000, "pmod(hash(id, 3), 1000000)")
    probe = spark.sql(f"SELECT a, b FROM {t} WHERE id = 123456").collect()[0]
    q = f"a = {probe.a} AND b = {probe.b}"
    before = len(spark.read.format("strata").load(path).where(q).inputFiles())
    optimize("1. first OPTIMIZE")
    after = len(spark.read.format("strata").load(path).where(q).inputFiles())
    print(f"point query {q}: {before} files read before, {after} after")
    for i in range(2):
        append(1_000_000 + i * 25000, "2000000 + pmod(hash(id, 3), 100000)")
    optimize("2. after 2 non-overlapping appends")
    for i in range(2):
        append(2_000_000 + i * 25000, "pmod(hash(id, 3), 1000000)")
    optimize("3. after 2 appends over the whole range")
    optimize("4. again, nothing new")
    spark.stop()


if __name__ == "__main__":
    main()
