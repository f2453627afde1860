"""Workloads 7a-7c: DELETE, UPDATE and MERGE INTO on an N-row table, copy-on-write on every system.

Run inside a system's application (bench/app.py calls `run`); Strata V2, delta-spark and Iceberg only.

The table (created untimed before every timed statement: a fresh table per workload, round and system, since the
statement changes it): the same N rows as workload 1 (`app.data`), unpartitioned, written by one append of
`Sizes.dml_files` (100) input slices without a shuffle, so it holds 100 files of N/100 consecutive ids each (the ids
ordered, as in a table clustered by its key). The changed 1% is one contiguous id range of N/100 ids that starts
half a file in (A = N/2 + N/200): it covers the second half of file 50 and the first half of file 51, so every
system, skipping files by their min/max statistics, reads and rewrites 2 of the 100 files, and none can drop a whole
file without reading it (a range aligned with one file would be a whole-file delete, which Iceberg does from
statistics alone and Strata and delta-spark by reading the file: a different operation).

  7a  DELETE FROM t WHERE id >= A AND id < A + N/100
  7b  UPDATE t SET s = concat('updated-', s), amt = amt + 1 WHERE id >= A AND id < A + N/100
  7c  MERGE INTO t USING src ON t.id = src.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *
      src: the N/100 ids of the range with s = 'merged-<id>' and N/1000 new ids [N, N + N/1000), same schema,
      written untimed as Parquet (2 files) and read through a temporary view.

Copy-on-write everywhere: delta-spark with `delta.enableDeletionVectors=false` (its default for a new table is
off, set explicitly), Iceberg with `write.delete.mode`, `write.update.mode`, `write.merge.mode` = copy-on-write;
Strata without `delta.enableDeletionVectors` (it then copies on write). Workloads 8a-8c (bench/dml_dv.py) run the
same statements on the same tables through `run` with merge-on-read properties. Each check must hold: the row counts after the statement, 100 data files before it,
and a commit that removed and added data files but wrote no deletion vector (delta-spark) or delete file (Iceberg).
"""
from __future__ import annotations

import json
import shutil
import time
from dataclasses import replace
from types import ModuleType
from typing import Any

from spec import DML_KEYS

Json = dict[str, Any]
WORKLOADS = DML_KEYS
PROPERTIES = {
    "strata-v2": (),  # no deletion vectors: copy-on-write; the distribution mode comes from app.StrataV1
    "delta": (("delta.enableDeletionVectors", "false"),),
    "iceberg": (("write.delete.mode", "copy-on-write"), ("write.update.mode", "copy-on-write"),
                ("write.merge.mode", "copy-on-write")),
}


def tables(rnd: int) -> tuple[str, ...]:
    return tuple(f"dml_{w}_r{rnd}" for w in WORKLOADS)


def bounds(n: int) -> tuple[int, int, int]:
    """(A, B, inserted): the changed id range [A, B) and the number of new ids MERGE inserts."""
    a = n // 2 + n // 200
    return a, a + n // 100, n // 1000


def statement(workload: str, ref: str, n: int) -> str:
    a, b, _ = bounds(n)
    if workload == "delete":
        return f"DELETE FROM {ref} WHERE id >= {a} AND id < {b}"
    if workload == "update":
        return f"UPDATE {ref} SET s = concat('updated-', s), amt = amt + 1 WHERE id >= {a} AND id < {b}"
    if workload == "merge":
        return (f"MERGE INTO {ref} t USING dml_src src ON t.id = src.id "
                "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    raise ValueError(f"unknown DML workload {workload}")


def expected(workload: str, n: int) -> Json:
    """Rows after the statement, rows carrying its mark (s prefix), and how many of them lie in [A, B)."""
    a, b, inserted = bounds(n)
    changed = b - a
    return {"delete": {"rows": n - changed, "marked": 0, "in_range": 0},
            "update": {"rows": n, "marked": changed, "in_range": changed},
            "merge": {"rows": n + inserted, "marked": changed + inserted, "in_range": changed}}[workload]


MARK = {"delete": "", "update": "updated-", "merge": "merged-"}


def merge_source(app: ModuleType, server: Any, rnd: int) -> None:
    """The MERGE source (untimed): the range's ids with new values plus new ids, as Parquet behind a view."""
    from pyspark.sql import functions as F
    n, spark = server.sizes.rows, server.spark
    a, b, inserted = bounds(n)
    path = server.root / "dml-src" / f"merge_r{rnd}"
    shutil.rmtree(path, ignore_errors=True)
    changed = app.data(spark, a, b - a, 1).withColumn("x", F.col("x") + 1)
    new = app.data(spark, n, inserted, 1)
    src = changed.unionByName(new).withColumn("s", F.concat(F.lit("merged-"), F.col("id").cast("string")))
    src.write.parquet(str(path))
    spark.read.parquet(str(path)).createOrReplaceTempView("dml_src")


def last_commit(server: Any, t: Any, version: int | None = None) -> Json:
    """Data files the statement's commit (or the commit `version`) removed and added, and the deletion vectors or
    delete files it wrote (copy-on-write: none)."""
    if server.system == "iceberg":
        row = server.spark.sql(f"SELECT operation, summary FROM {t.ref}.snapshots ORDER BY committed_at DESC "
                               "LIMIT 1").collect()[0]
        summary = dict(row["summary"])
        return {"removed": int(summary.get("deleted-data-files", 0)), "added": int(summary.get("added-data-files", 0)),
                "delete_files": int(summary.get("added-delete-files", 0)), "operation": row["operation"]}
    logs = t.path / "_delta_log"
    if version is None:
        version = max(int(f.name[:-5]) for f in logs.iterdir() if f.name.endswith(".json") and f.name[:-5].isdigit())
    out: Json = {"version": version, "removed": 0, "added": 0, "deletion_vectors": 0, "operation": None}
    for line in (logs / f"{version:020d}.json").read_text().splitlines():
        action = json.loads(line)
        if "add" in action:
            out["added"] += 1
            out["deletion_vectors"] += action["add"].get("deletionVector") is not None
        elif "remove" in action:
            out["removed"] += 1
        elif "commitInfo" in action:
            out["operation"] = action["commitInfo"].get("operation")
    return out


def commit_ok(commit: Json, merge_on_read: bool) -> bool:
    """Copy-on-write: files removed and no deletion vector or delete file. Merge-on-read: the 2 files holding the
    range get a deletion vector (Strata, delta-spark: each file's entry is removed and added back with its vector)
    or the commit adds delete files and removes no data file (Iceberg)."""
    if not merge_on_read:
        return commit.get("deletion_vectors", 0) == 0 and commit.get("delete_files", 0) == 0 and commit["removed"] > 0
    if "deletion_vectors" in commit:
        return bool(commit["deletion_vectors"] == 2 and commit["removed"] == 2)
    return bool(commit["delete_files"] > 0 and commit["removed"] == 0)


def run(server: Any, workload: str, rnd: int, app: ModuleType, name: str | None = None,
        properties: tuple[tuple[str, str], ...] | None = None, merge_on_read: bool = False) -> Json:
    """Creates the table (untimed), times the one statement, then checks rows and the commit. `workload`: the
    statement (delete, update, merge); `name`: the workload key naming the table (default `workload`);
    `properties`: the table's (default: copy-on-write, PROPERTIES); `merge_on_read`: what the commit must show."""
    from pyspark.sql import functions as F
    e, s, spark = server.engine, server.sizes, server.spark
    n = s.rows
    setup = time.perf_counter()
    props = PROPERTIES[server.system] if properties is None else properties
    t = replace(e.table(f"dml_{name or workload}_r{rnd}", False), properties=props)
    e.drop(t)
    e.create(t)
    e.append(app.data(spark, 0, n, s.dml_files), t)
    files_before = app.written({}, app.listing(t.path), e.log_dir)["data_files"]
    if workload == "merge":
        merge_source(app, server, rnd)
    sql = statement(workload, t.ref, n)
    setup_s = time.perf_counter() - setup
    with app.Measured(server.memory, e, t) as m:
        spark.sql(sql).collect()
    check = time.perf_counter()
    a, b, _ = bounds(n)
    mark = MARK[workload]
    marked = F.col("s").startswith(mark) if mark else F.lit(False)
    row = e.open(t).agg(
        F.count(F.lit(1)).alias("rows"),
        F.sum(F.when(marked, 1).otherwise(0)).alias("marked"),
        F.sum(F.when(marked & (F.col("id") >= a) & (F.col("id") < b), 1).otherwise(0)).alias("in_range"),
        F.sum(F.when((F.col("id") >= a) & (F.col("id") < b), 1).otherwise(0)).alias("range_rows")).collect()[0]
    got = {"rows": int(row["rows"]), "marked": int(row["marked"] or 0), "in_range": int(row["in_range"] or 0)}
    want = expected(workload, n)
    commit = last_commit(server, t)
    mode_ok = commit_ok(commit, merge_on_read)
    range_rows = int(row["range_rows"] or 0)
    ok = (got == want and files_before == s.dml_files and mode_ok
          and range_rows == (0 if workload == "delete" else b - a))
    m.result["statement"] = sql
    m.result["setup_s"] = setup_s  # untimed: the table and the MERGE source
    m.result["commit"] = commit
    m.result["check"] = {"ok": ok, **got, **{f"expected_{k}": v for k, v in want.items()},
                         "range_rows": range_rows, "files_before": files_before,
                         "expected_files_before": s.dml_files,
                         ("merge_on_read" if merge_on_read else "copy_on_write"): mode_ok}
    e.drop(t)
    if workload == "merge":
        spark.catalog.dropTempView("dml_src")
        shutil.rmtree(server.root / "dml-src", ignore_errors=True)
    result: Json = m.result
    result["check_s"] = time.perf_counter() - check  # untimed: the check and the clean-up
    return result
