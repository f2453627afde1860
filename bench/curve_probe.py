"""Curve probe (issue 24; one run, not part of `make bench`): files read by a two-column point query and by
single-column range queries after liquid clustering along the Hilbert curve (what CLUSTER BY (a, b) OPTIMIZE does
now, as delta-spark) against the Z-order layout it used before (the same code with the Z curve: OPTIMIZE zorder_by
of a twin unclustered table; same range-id bucketing, same sample, same number of files), and unclustered.

Tables: 500,000 rows in 40 files, a and b pseudo-random in [0, 1,000,000) (Spark's hash of id), `delta.targetFileSize`
512kb (as bench/clustering_probe.py). Queries: `a = A AND b = B` for 20 rows' values; `a BETWEEN x AND x + w` and the
same on b for 10 values of x each, w = 1% and 10% of the domain. Files read: `inputFiles()` of Strata's pruned scan.
Run: .venv/bin/python bench/curve_probe.py
"""
from __future__ import annotations

import json
import tempfile
import time

from pyspark.sql import SparkSession

import strata

ROWS = "SELECT id, pmod(hash(id, 3), 1000000) AS a, pmod(hash(id, 7), 1000000) AS b, concat('s', id) AS s " \
       "FROM range(0, 500000, 1, 40)"


def main() -> None:
    work = tempfile.mkdtemp(prefix="curve-probe-")
    spark = strata.configure_spark(SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                                   .config("spark.sql.shuffle.partitions", "2")
                                   .config("spark.ui.showConsoleProgress", "false"), f"{work}/wh").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    props = "TBLPROPERTIES ('delta.targetFileSize' = '512kb')"
    layouts = {"hilbert (CLUSTER BY)": ("CLUSTER BY (a, b)", None),
               "z-order (before)": ("", ["a", "b"]),
               "unclustered": ("", None)}
    paths: dict[str, str] = {}
    for name, (cluster, zorder) in layouts.items():
        path = f"{work}/{len(paths)}"
        paths[name] = path
        spark.sql(f"CREATE TABLE strata.`{path}` (id BIGINT, a BIGINT, b BIGINT, s STRING) USING strata {cluster} "
                  f"{props}")
        spark.sql(f"INSERT INTO strata.`{path}` {ROWS}")
        if cluster or zorder:
            t0 = time.monotonic()
            r = strata.Table.for_path(spark, path).optimize(zorder_by=zorder)
            print(f"{name}: OPTIMIZE {r.files_removed} -> {r.files_added} files, {time.monotonic() - t0:.1f}s")
    probes = spark.sql(f"SELECT a, b FROM strata.`{paths['unclustered']}` WHERE id % 25000 = 7").collect()
    queries: dict[str, list[str]] = {"point a = A AND b = B": [f"a = {p.a} AND b = {p.b}" for p in probes]}
    for col in ("a", "b"):
        for pct in (1, 10):
            w = 10000 * pct
            queries[f"range on {col}, {pct}%"] = [f"{col} BETWEEN {x} AND {x + w}"
                                                 for x in range(0, 1000000 - w, (1000000 - w) // 10)][:10]
    results: dict[str, dict[str, float]] = {}
    for name, path in paths.items():
        df = spark.read.format("strata").load(path)
        total = len(df.inputFiles())
        results[name] = {"files": total}
        for label, qs in queries.items():
            results[name][label] = sum(len(df.where(q).inputFiles()) for q in qs) / len(qs)
    labels = ["files"] + list(queries)
    print("| layout | " + " | ".join(labels) + " |")
    print("|---" * (len(labels) + 1) + "|")
    for name, r in results.items():
        print(f"| {name} | " + " | ".join(f"{r[x]:.1f}" if x != "files" else str(int(r[x])) for x in labels) + " |")
    print(json.dumps(results))
    spark.stop()


if __name__ == "__main__":
    main()
