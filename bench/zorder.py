"""Workload 9: Z-order OPTIMIZE and a two-column point query (issue 15).

Run inside a system's application (bench/app.py calls `run`); Strata V2 and delta-spark.

The table (untimed, fresh per round and system): N rows (workload 1's N) in 100 files, unpartitioned, written by one
append of 100 input slices without a shuffle: id, a and b (independent pseudo-random ints in [0, 1,000,000): Spark's
`hash` of id with two seeds, the same on every system), s (a short string) and x (a double). Every file then spans
the whole range of a and b, so a point query on both reads all 100 files.

Timed: the optimize alone, with the same target file size on both systems, a hundredth of the table's bytes (so
both write about 100 files again and the files read below compare like with like):

  Strata       CALL strata.system.optimize(table => 't', zorder_by => array('a', 'b'), target_file_size => T)
  delta-spark  SET spark.databricks.delta.optimize.maxFileSize = T; OPTIMIZE delta.`t` ZORDER BY (a, b)

Files read by the point query `a = A AND b = B` (A, B: the values of row id = N/3) before and after, counted from
the table's log the way both readers skip files: a live file is read unless its min/max statistics of a or b
exclude the value (a file without statistics is read). Strata's own scan is also asked (the splits of its planned
scan, through py4j) and must agree. The check: rows unchanged (count and sums of id, a, b), 100 files before, the
point query's count unchanged, and the commit a rewrite (dataChange=false adds and removes).
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from spec import ZORDER_KEYS

Json = dict[str, Any]
WORKLOADS = ZORDER_KEYS
FILES = 100
COLUMNS = "id BIGINT, a INT, b INT, s STRING, x DOUBLE"


def tables(rnd: int) -> tuple[str, ...]:
    return (f"zorder_r{rnd}",)


def data(spark: Any, n: int) -> Any:
    from pyspark.sql import functions as F
    return spark.range(0, n, 1, FILES).select(
        F.col("id"),
        F.pmod(F.hash(F.col("id"), F.lit(17)), F.lit(1_000_000)).cast("int").alias("a"),
        F.pmod(F.hash(F.col("id"), F.lit(91)), F.lit(1_000_000)).cast("int").alias("b"),
        F.concat(F.lit("name-"), (F.col("id") % 50000).cast("string")).alias("s"),
        (F.col("id") / 3.0).alias("x"))


def live_files(path: Path) -> list[Json]:
    """The table's live add actions, from its JSON commits (these tables have 3 commits: no checkpoint)."""
    logs = path / "_delta_log"
    live: dict[str, Json] = {}
    for f in sorted(logs.glob("*.json")):
        if not f.name[:-5].isdigit():
            continue
        for line in f.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                live[action["add"]["path"]] = action["add"]
            elif "remove" in action:
                live.pop(action["remove"]["path"], None)
    return list(live.values())


def files_read(path: Path, point: dict[str, int]) -> int:
    """Files a reader skipping by min/max statistics reads for `col = value AND ...`."""
    count = 0
    for add in live_files(path):
        stats = json.loads(add.get("stats") or "{}")
        lo, hi = stats.get("minValues", {}), stats.get("maxValues", {})
        if all(c not in lo or c not in hi or lo[c] <= v <= hi[c] for c, v in point.items()):
            count += 1
    return count


def strata_scan_files(spark: Any, query: str) -> int:
    """Files Strata's planned scan of `query` reads (its input splits), through py4j."""
    jdf = spark.sql(query)._jdf
    plan = jdf.queryExecution().executedPlan()
    found: set[str] = set()

    def walk(node: Any) -> None:
        name = node.getClass().getSimpleName()
        if name == "AdaptiveSparkPlanExec":
            walk(node.executedPlan())
            return
        if name == "BatchScanExec":
            for p in node.batch().planInputPartitions():
                for f in p.files():
                    found.add(f.filePath().toString())
        if "QueryStageExec" in name:
            walk(node.plan())
        children = node.children()
        for i in range(children.size()):
            walk(children.apply(i))

    walk(plan)
    return len(found)


def commit(path: Path) -> Json:
    logs = path / "_delta_log"
    version = max(int(f.name[:-5]) for f in logs.glob("*.json") if f.name[:-5].isdigit())
    out: Json = {"version": version, "added": 0, "removed": 0, "data_change": False, "operation": None}
    for line in (logs / f"{version:020d}.json").read_text().splitlines():
        action = json.loads(line)
        for kind, key in (("add", "added"), ("remove", "removed")):
            if kind in action:
                out[key] += 1
                out["data_change"] |= bool(action[kind]["dataChange"])
        if "commitInfo" in action:
            out["operation"] = action["commitInfo"].get("operation")
            out["parameters"] = action["commitInfo"].get("operationParameters")
    return out


def run(server: Any, workload: str, rnd: int, app: ModuleType) -> Json:
    from pyspark.sql import functions as F
    e, s, spark = server.engine, server.sizes, server.spark
    n = s.rows
    setup = time.perf_counter()
    t = e.table(f"zorder_r{rnd}", False)
    e.drop(t)
    spark.sql(f"CREATE TABLE {t.ref} ({COLUMNS}) USING {e.fmt}{e.properties(t)}")
    e.append(data(spark, n), t)
    files_before = len(live_files(t.path))
    total_bytes = sum(int(a["size"]) for a in live_files(t.path))
    target = max(1, total_bytes // FILES)
    probe = data(spark, n).where(F.col("id") == n // 3).collect()[0]
    point = {"a": int(probe["a"]), "b": int(probe["b"])}
    query = f"SELECT count(*) FROM {t.ref} WHERE a = {point['a']} AND b = {point['b']}"

    def summary() -> tuple[int, int, int, int, int]:
        row = e.open(t).agg(F.count(F.lit(1)), F.sum("id"), F.sum("a"), F.sum("b")).collect()[0]
        return (int(row[0]), int(row[1]), int(row[2]), int(row[3]), int(spark.sql(query).collect()[0][0]))

    before = summary()
    read_before = files_read(t.path, point)
    scan_before = strata_scan_files(spark, query) if server.system.startswith("strata") else None
    if server.system == "delta":
        spark.conf.set("spark.databricks.delta.optimize.maxFileSize", str(target))
        statement = f"OPTIMIZE {t.ref} ZORDER BY (a, b)"
    else:
        statement = (f"CALL strata.system.optimize(table => '{t.path}', zorder_by => array('a', 'b'), "
                     f"target_file_size => {target})")
    setup_s = time.perf_counter() - setup
    with app.Measured(server.memory, e, t) as m:
        spark.sql(statement).collect()
    check = time.perf_counter()
    after = summary()
    read_after = files_read(t.path, point)
    scan_after = strata_scan_files(spark, query) if server.system.startswith("strata") else None
    files_after = len(live_files(t.path))
    c = commit(t.path)
    scan_ok = scan_before is None or (scan_before, scan_after) == (read_before, read_after)
    ok = (before == after and files_before == FILES and c["operation"] == "OPTIMIZE" and not c["data_change"]
          and c["removed"] == FILES and scan_ok and after[4] >= 1)
    m.result.update({
        "statement": statement, "target_file_size": target, "table_bytes": total_bytes, "point": point,
        "files_before": files_before, "files_after": files_after, "files_read_before": read_before,
        "files_read_after": read_after, "reduction": read_before / max(1, read_after),
        "scan_files_before": scan_before, "scan_files_after": scan_after, "commit": c, "setup_s": setup_s,
        "check": {"ok": ok, "rows_unchanged": before == after, "rows": after[0], "point_rows": after[4],
                  "files_before": files_before, "expected_files_before": FILES, "rewrite": not c["data_change"],
                  "scan_agrees": scan_ok}})
    if server.system == "delta":
        spark.conf.unset("spark.databricks.delta.optimize.maxFileSize")
    e.drop(t)
    m.result["check_s"] = time.perf_counter() - check
    result: Json = m.result
    return result
