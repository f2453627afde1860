"""Workloads 8a-8d: DELETE, UPDATE and MERGE INTO as merge-on-read (deletion vectors), and a read after 10 changes.

Run inside a system's application (bench/app.py calls `run`).

8a-8c run workloads 7a-7c's statements on 7a-7c's tables (bench/dml.py: same data, same 100-file layout, same
changed range, same MERGE source; a fresh table per workload, round and system, built untimed) through `dml.run`,
with merge-on-read table properties instead of copy-on-write ones:

  Strata V2    `delta.enableDeletionVectors=true`: the statement writes deletion vectors (SQL through the catalog)
  delta-spark  `delta.enableDeletionVectors=true` (its DELETE, UPDATE and MERGE then write deletion vectors)
  Iceberg      `format-version=2`, `write.delete.mode`, `write.update.mode`, `write.merge.mode` = merge-on-read
               (position delete files)

Their check: 7's row checks, and a commit that wrote vectors (Strata, delta-spark: the entries of the 2 files that
hold the range removed and added back, each with a `deletionVector`) or delete files and removed no data file
(Iceberg: the snapshot summary's `added-delete-files`, `deleted-data-files`). Strata's copy-on-write times for the
side by side are 7a-7c's of the same run.

8d (Strata V2 only): a table with deletion vectors built as 7's (N rows, 100 files of N/100 consecutive ids), then
10 DELETEs (untimed, each timed apart for the record) of N/1000 consecutive ids each, a quarter into files
5, 15, ..., 95: 10 files get a vector. Then a table without vectors holding the same live rows in the same layout
(the same 100 input slices minus the deleted ids: 100 files), written untimed. Timed: a full read of each
(`count(*)`, sums of id, k, x, amt and length(s), max of d and ts: every column of every live row, nothing a
footer or statistics could answer), READS times each, alternating, after one untimed read of each; the round's
figure is the median of each, and the ratio of the two. The read opens the table (`spark.table`: the log replay,
12 commits against 2, is part of it). The check: the 10 commits each wrote one vector and removed one entry, both
reads agree, the live row count is N - 10 N/1000, and both tables hold 100 data files.
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import replace
from types import ModuleType
from typing import Any

import dml
from spec import DV_KEYS

Json = dict[str, Any]
WORKLOADS = DV_KEYS
STATEMENT = {"delete_dv": "delete", "update_dv": "update", "merge_dv": "merge"}
PROPERTIES = {
    "strata-v2": (("delta.enableDeletionVectors", "true"),),
    "delta": (("delta.enableDeletionVectors", "true"),),
    "iceberg": (("format-version", "2"), ("write.delete.mode", "merge-on-read"), ("write.update.mode", "merge-on-read"),
                ("write.merge.mode", "merge-on-read")),
}
CHANGES = 10  # 8d: DELETEs before the read
READS = 3  # 8d: timed reads of each table per round
COMPACTED = "dml_read_dv_compacted"


def tables(rnd: int) -> tuple[str, ...]:
    return tuple(f"dml_{w}_r{rnd}" for w in WORKLOADS) + (f"{COMPACTED}_r{rnd}",)


def changed_ranges(n: int, files: int) -> list[tuple[int, int]]:
    """8d's deleted id ranges: N/1000 ids a quarter into files 5, 15, ..., 95."""
    per_file, width = n // files, max(1, n // 1000)
    firsts = [(5 + i * files // CHANGES) * per_file + per_file // 4 for i in range(CHANGES)]
    return [(lo, lo + width) for lo in firsts]


def full_read(df: Any) -> tuple[Any, ...]:
    from pyspark.sql import functions as F
    row = df.agg(F.count(F.lit(1)), F.sum("id"), F.sum("k"), F.sum("x"), F.sum("amt"), F.sum(F.length("s")),
                 F.max("d"), F.max("ts")).collect()[0]
    return tuple(row)


def same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Equal results; the double sum (x) may differ in its last bits with the order of the additions."""
    return all(math.isclose(x, y, rel_tol=1e-12) if isinstance(x, float) else x == y for x, y in zip(a, b))


def read_after_changes(server: Any, rnd: int, app: ModuleType) -> Json:
    from pyspark.sql import functions as F
    e, s, spark = server.engine, server.sizes, server.spark
    n, files = s.rows, s.dml_files
    setup = time.perf_counter()
    t = replace(e.table(f"dml_read_dv_r{rnd}", False), properties=PROPERTIES[server.system])
    e.drop(t)
    e.create(t)
    e.append(app.data(spark, 0, n, files), t)
    files_before = app.written({}, app.listing(t.path), e.log_dir)["data_files"]
    ranges = changed_ranges(n, files)
    changes_s: list[float] = []
    for lo, hi in ranges:
        start = time.perf_counter()
        spark.sql(f"DELETE FROM {t.ref} WHERE id >= {lo} AND id < {hi}").collect()
        changes_s.append(time.perf_counter() - start)
    last = dml.last_commit(server, t)["version"]
    commits = [dml.last_commit(server, t, v) for v in range(last - CHANGES + 1, last + 1)]
    vectors_ok = all(c["deletion_vectors"] == 1 and c["removed"] == 1 and c["added"] == 1 for c in commits)
    c = replace(e.table(f"{COMPACTED}_r{rnd}", False), properties=())
    e.drop(c)
    e.create(c)
    deleted = F.lit(False)
    for lo, hi in ranges:
        deleted = deleted | ((F.col("id") >= lo) & (F.col("id") < hi))
    e.append(app.data(spark, 0, n, files).where(~deleted), c)
    compacted_files = app.written({}, app.listing(c.path), e.log_dir)["data_files"]
    first = (full_read(e.open(t)), full_read(e.open(c)))  # untimed
    setup_s = time.perf_counter() - setup

    times: dict[str, list[float]] = {"dv": [], "compacted": []}
    cpu: dict[str, list[float]] = {"dv": [], "compacted": []}
    results: dict[str, set[tuple[Any, ...]]] = {"dv": {first[0]}, "compacted": {first[1]}}
    server.memory.reset()
    for i in range(READS):
        order = (("dv", t), ("compacted", c)) if (rnd + i) % 2 == 0 else (("compacted", c), ("dv", t))
        for kind, table in order:
            cpu0, start = server.memory.cpu_s(), time.perf_counter()
            results[kind].add(full_read(e.open(table)))
            times[kind].append(time.perf_counter() - start)
            cpu[kind].append(server.memory.cpu_s() - cpu0)
    dv_s, compacted_s = statistics.median(times["dv"]), statistics.median(times["compacted"])

    live = n - sum(hi - lo for lo, hi in ranges)
    dv_rows = {r[0] for r in results["dv"]}
    agree = all(same(first[0], r) for r in results["compacted"] | results["dv"])
    ok = (vectors_ok and agree and dv_rows == {live} and files_before == files and compacted_files == files)
    result: Json = {
        "seconds": dv_s, "compacted_s": compacted_s, "ratio": dv_s / compacted_s,
        "reads_s": times["dv"], "compacted_reads_s": times["compacted"],
        "cpu_s": statistics.median(cpu["dv"]), "compacted_cpu_s": statistics.median(cpu["compacted"]),
        "peak_rss_mb": server.memory.peak_mb(), "changes_s": changes_s, "setup_s": setup_s,
        "statement": f"DELETE FROM t WHERE id >= lo AND id < lo + {ranges[0][1] - ranges[0][0]}, lo in "
                     f"{[lo for lo, _ in ranges]}",
        "commits": commits,
        "check": {"ok": ok, "rows": sorted(dv_rows), "expected_rows": live, "results_agree": agree,
                  "vector_per_commit": vectors_ok, "files_before": files_before, "compacted_files": compacted_files,
                  "expected_files": files, "result": [str(v) for v in first[0]]},
    }
    e.drop(t)
    e.drop(c)
    return result


def run(server: Any, workload: str, rnd: int, app: ModuleType) -> Json:
    if workload == "read_dv":
        return read_after_changes(server, rnd, app)
    return dml.run(server, STATEMENT[workload], rnd, app, name=workload, properties=PROPERTIES[server.system],
                   merge_on_read=True)
