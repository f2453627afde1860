"""The deletion vector section of latest.md (workloads 8a-8d, bench/dml_dv.py), beside 7a-7c's copy-on-write."""
from __future__ import annotations

import statistics
from typing import Any

from spec import LABELS

Json = dict[str, Any]
DV_DML = ("delete_dv", "update_dv", "merge_dv")
COW = {"delete_dv": "delete", "update_dv": "update", "merge_dv": "merge"}
READ = "read_dv"
TARGET_DML = 0.7  # issue 14: Strata with vectors <= 0.7x delta-spark's time
TARGET_READ = 1.2  # issue 14: the read after 10 changes <= 1.2x the compacted table's


def cross_ratio(s: Any, workload: str, system: str, base_workload: str, base: str) -> float | None:
    """Median over rounds of (workload on system / base_workload on base) within each round."""
    mine = {r["round"]: float(r["seconds"]) for r in s.runs(workload, system)}
    theirs = {r["round"]: float(r["seconds"]) for r in s.runs(base_workload, base)}
    per_round = [mine[k] / theirs[k] for k in mine if k in theirs and theirs[k] > 0]
    return statistics.median(per_round) if per_round else None


def median_s(s: Any, workload: str, system: str) -> str:
    vals = [float(r["seconds"]) for r in s.runs(workload, system)]
    return f"{statistics.median(vals):.2f} ({min(vals):.2f}-{max(vals):.2f})" if vals else "not run"


def fmt(x: float | None) -> str:
    return "" if x is None else f"{x:.2f}"


def verdict(x: float | None, target: float) -> str:
    if x is None:
        return "not measured"
    return f"**met** ({x:.2f} <= {target})" if x <= target else f"**missed** ({x:.2f} > {target})"


def section(record: Json, s: Any) -> list[str]:
    keys = {w["key"] for w in record["workloads"]}
    if not keys & (set(DV_DML) | {READ}):
        return []
    out: list[str] = []
    add = out.append
    add("## 8. Deletion vectors (merge-on-read) against copy-on-write")
    add("")
    add(f"Issue 14's targets: Strata with deletion vectors at most {TARGET_DML}x delta-spark's time (with its "
        f"vectors) on each statement, and a read after 10 changes at most {TARGET_READ}x the read of the compacted "
        "table. Seconds: median (min-max) over the timed rounds; ratios: median of the per-round ratios. Strata "
        "copy-on-write is workloads 7a-7c of the same run (same table, statement and rounds). These are one run's "
        "figures on the machine above, shared with other jobs (see its load average): differences of a few tenths "
        "of a second are within its noise.")
    add("")
    strata, delta, ice = "strata-v2", "delta", "iceberg"
    add(f"| statement | {LABELS[strata]} vectors s | {LABELS[strata]} copy-on-write s | {LABELS[delta]} vectors s | "
        f"{LABELS[ice]} merge-on-read s | Strata vectors / Strata copy-on-write | Strata vectors / delta-spark "
        f"vectors | Strata vectors / Iceberg merge-on-read | target <= {TARGET_DML}x delta-spark |")
    add("|---|---|---|---|---|---|---|---|---|")
    titles = {w["key"]: w["title"] for w in record["workloads"]}
    for key in DV_DML:
        if key not in keys:
            continue
        cow = COW[key]
        vs_delta = s.ratio(key, strata, delta)
        add(f"| {titles[key]} | {median_s(s, key, strata)} | "
            f"{median_s(s, cow, strata) if cow in keys else 'not run'} | {median_s(s, key, delta)} | "
            f"{median_s(s, key, ice)} | {fmt(cross_ratio(s, key, strata, cow, strata))} | {fmt(vs_delta)} | "
            f"{fmt(s.ratio(key, strata, ice))} | {verdict(vs_delta, TARGET_DML)} |")
    add("")
    peers = [(x, COW[k]) for k in DV_DML for x in (delta, ice) if k in keys and COW[k] in keys]
    if peers:
        add("For reference, each peer's merge-on-read time / its own copy-on-write time (7a-7c): " + "; ".join(
            f"{titles[k].split('.')[0]} {LABELS[x]} {fmt(cross_ratio(s, k, x, COW[k], x))}"
            for k in DV_DML for x in (delta, ice) if k in keys and COW[k] in keys) + ".")
        add("")
    runs = s.runs(READ, strata) if READ in keys else []
    if runs:
        w = next(w for w in record["workloads"] if w["key"] == READ)
        add(f"### {w['title']}")
        add("")
        add(w["definition"] + ".")
        add("")
        ratios = [float(r["ratio"]) for r in runs]
        dv = [float(r["seconds"]) for r in runs]
        comp = [float(r["compacted_s"]) for r in runs]
        bad = [r for r in runs if not r["check"]["ok"]]
        add("| table | read s, median (min-max) of the round medians | CPU s (median) | rows |")
        add("|---|---|---|---|")
        rows = runs[0]["check"]["expected_rows"]
        add(f"| 10 DELETEs with deletion vectors (100 files, 10 with a vector) | {statistics.median(dv):.2f} "
            f"({min(dv):.2f}-{max(dv):.2f}) | {statistics.median(r['cpu_s'] for r in runs):.1f} | {rows:,} |")
        add(f"| compacted: the same live rows, no vectors (100 files) | {statistics.median(comp):.2f} "
            f"({min(comp):.2f}-{max(comp):.2f}) | {statistics.median(r['compacted_cpu_s'] for r in runs):.1f} | "
            f"{rows:,} |")
        add("")
        add(f"Read with vectors / read of the compacted table: **{statistics.median(ratios):.2f}** (per round "
            f"{', '.join(f'{x:.2f}' for x in ratios)}); target <= {TARGET_READ}x: "
            f"{verdict(statistics.median(ratios), TARGET_READ)}. Checks: "
            + (f"vectors, rows and equal results in all {len(runs)} rounds." if not bad else "**" + "; ".join(
                f"round {r['round']}: {r['check']}" for r in bad) + "**"))
        cpu = [r["cpu_s"] / r["compacted_cpu_s"] for r in runs if r["compacted_cpu_s"] > 0]
        if cpu:
            add("")
            add(f"CPU time of the application's JVM per read, with vectors / compacted (median of the per-round "
                f"ratios of the median reads; less sensitive than wall time to other jobs on the machine): "
                f"{statistics.median(cpu):.2f} (per round {', '.join(f'{x:.2f}' for x in cpu)}).")
        changes = [x for r in runs for x in r["changes_s"]]
        add("")
        add(f"The 10 DELETEs themselves (untimed setup; each N/1000 ids in one file, writing one vector): median "
            f"{statistics.median(changes):.2f} s, min {min(changes):.2f} s, max {max(changes):.2f} s over the "
            f"{len(changes)} of the timed rounds.")
        add("")
    return out
