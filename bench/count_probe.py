"""Where open + count(*) of workload 4's 1,000-commit table goes, path read (V1) against catalog read (V2) (issue 23).

    .venv/bin/python bench/count_probe.py [--commits 1000] [--rounds 15] [--conf k=v ...]

Builds the table once in bench/cache/count-probe/tables/c<commits> (create + one-row appends through the V1 path, as
bench/app.py builds workload 4's table; kept between runs), then in one Spark application, rounds interleaving both
reads: open (the DataFrame), then count(*) split into the optimizer (Spark's V2 push-down builds the scan there),
physical planning and execution, with the Spark jobs each started and the plan's leaf. Prints every round and the
medians. Checks that every count is commits - 1.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

from pyspark.sql import DataFrame, SparkSession

sys.path.insert(0, str(Path(__file__).parent))
from systems import StrataV1, data, session  # noqa: E402

CACHE = Path(__file__).parent / "cache"


def build(spark: SparkSession, work: Path, commits: int) -> Path:
    """The table's path (work/tables/c<commits>), built unless a marker says it is complete."""
    engine = StrataV1(spark, work)
    t = engine.table(f"c{commits}", False)
    marker = t.path.parent / (t.path.name + ".complete")
    if marker.exists():
        return t.path
    shutil.rmtree(t.path, ignore_errors=True)
    engine.create(t)
    for i in range(commits - 1):
        engine.append(data(spark, i, 1, 1), t)
    marker.write_text("built\n")
    return t.path


def timed(spark: SparkSession, label: str, f: Callable[[], Any]) -> tuple[Any, float, int]:
    """f's result, its seconds and the Spark jobs it started."""
    sc = spark.sparkContext
    sc.setJobGroup(label, label)
    start = time.perf_counter()
    out = f()
    seconds = time.perf_counter() - start
    jobs = len(sc.statusTracker().getJobIdsForGroup(label))
    return out, seconds, jobs


def probe(spark: SparkSession, name: str, rnd: int, open_df: Callable[[], DataFrame], expected: int) -> dict[str, Any]:
    df, open_s, open_jobs = timed(spark, f"{name}-open-{rnd}", open_df)
    counted = df.groupBy().count()  # what Dataset.count() plans
    qe = counted._jdf.queryExecution()
    _, optimize_s, optimize_jobs = timed(spark, f"{name}-optimize-{rnd}", qe.optimizedPlan)
    plan, plan_s, plan_jobs = timed(spark, f"{name}-plan-{rnd}", qe.executedPlan)
    rows, run_s, run_jobs = timed(spark, f"{name}-run-{rnd}", lambda: plan.executeCollect())
    count = rows[0].getLong(0)
    if count != expected:
        raise SystemExit(f"{name}: count {count}, expected {expected}")
    leaf = plan.collectLeaves().head().simpleString(2)
    return {"open": open_s, "optimize": optimize_s, "plan": plan_s, "run": run_s,
            "count": optimize_s + plan_s + run_s, "jobs": open_jobs + optimize_jobs + plan_jobs + run_jobs,
            "leaf": leaf[:110]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--conf", action="append", default=[])
    args = ap.parse_args()
    work = CACHE / "count-probe"
    work.mkdir(parents=True, exist_ok=True)
    conf = dict(kv.split("=", 1) for kv in args.conf)
    spark = session("strata-v1", work, CACHE / "jars", work, "4g", conf)
    start = time.perf_counter()
    path = build(spark, work, args.commits)
    print(f"table {path}: ready in {time.perf_counter() - start:.0f} s", flush=True)
    reads: dict[str, Callable[[], DataFrame]] = {
        "V1": lambda: spark.read.format("strata").load(str(path)),
        "V2": lambda: spark.table(f"strata.`{path}`")}
    results: dict[str, list[dict[str, Any]]] = {k: [] for k in reads}
    for rnd in range(args.rounds + 1):  # round 0 warms up
        for name in (list(reads) if rnd % 2 == 0 else list(reversed(reads))):
            r = probe(spark, name, rnd, reads[name], args.commits - 1)
            print(f"round {rnd:2} {name}: open {r['open']:.3f}  optimize {r['optimize']:.3f}  plan {r['plan']:.3f}  "
                  f"run {r['run']:.3f}  count {r['count']:.3f}  jobs {r['jobs']}  {r['leaf']}", flush=True)
            if rnd > 0:
                results[name].append(r)
    for name, rs in results.items():
        med = {k: statistics.median(r[k] for r in rs) for k in ("open", "optimize", "plan", "run", "count")}
        print(f"median {name}: " + "  ".join(f"{k} {v:.3f}" for k, v in med.items())
              + f"  open+count {med['open'] + med['count']:.3f}  jobs {max(r['jobs'] for r in rs)}")
    spark.stop()


if __name__ == "__main__":
    main()
