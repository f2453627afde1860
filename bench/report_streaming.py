"""The streaming section of latest.md (workload 10, bench/streaming.py) and its chart, streaming.png."""
from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from report_section import workload_intro
from spec import LABELS

Json = dict[str, Any]
KEY = "streaming"
SYSTEMS = ("strata-v1", "delta")
BASE = "delta"
TARGET = 0.6  # issue 16: Strata's sink <= 0.6x delta-spark's (median batch commit latency and total time)
EDGE = 20  # first and last batches compared for flat snapshot loading
PARTS = ("latestOffset", "getBatch", "queryPlanning", "addBatch", "walCommit", "commitOffsets")
med = statistics.median


def per_round(run: Json) -> Json:
    """One round's numbers: medians of its batches (ms), its total time (s)."""
    d = run["durations_ms"]
    return {"add": med(d["addBatch"]), "trigger": med(d["triggerExecution"]), "total": float(run["seconds"])}


def ratios(s: Any, system: str) -> dict[str, float | None]:
    """Median over rounds of (system / delta-spark) within each round, per measure."""
    mine = {r["round"]: per_round(r) for r in s.runs(KEY, system)}
    theirs = {r["round"]: per_round(r) for r in s.runs(KEY, BASE)}
    out: dict[str, float | None] = {}
    for k in ("add", "trigger", "total"):
        vals = [mine[n][k] / theirs[n][k] for n in mine if n in theirs and theirs[n][k] > 0]
        out[k] = med(vals) if vals else None
    return out


def pooled(runs: list[Json], key: str, pick: slice | None = None) -> list[int]:
    return [x for r in runs for x in (r["durations_ms"][key][pick] if pick else r["durations_ms"][key])]


def checkpoint_batches(run: Json) -> tuple[list[int], list[int]]:
    """addBatch of the batches whose commit wrote a checkpoint (version v = batch + 1 in the run's checkpoints) and
    of the others."""
    cps = set(run["checkpoint_versions"])
    adds = run["durations_ms"]["addBatch"]
    return [a for i, a in enumerate(adds) if i + 1 in cps], [a for i, a in enumerate(adds) if i + 1 not in cps]


def fmt(x: float | None, digits: int = 2) -> str:
    return "" if x is None else f"{x:.{digits}f}"


def section(record: Json, s: Any) -> list[str]:
    out = workload_intro(record, KEY)
    if out is None:
        return []
    add = out.append
    add(f"Issue 16's target: Strata's sink at most {TARGET}x delta-spark's (median batch commit latency and total "
        "time). Batch commit latency = `durationMs.addBatch` of each micro-batch (the sink's write and commit); "
        "`triggerExecution` = the whole micro-batch (source offsets, planning, the sink, the query's own offset and "
        "commit logs). Per system: median over every batch of the timed rounds (min-max of the round medians); ratios: "
        "median of the per-round ratios of round medians (totals: of round totals). One run on the machine above, "
        "shared with other jobs: see the load average per round below.")
    add("")
    add("| system | median addBatch ms | / delta-spark | median triggerExecution ms | / delta-spark | total s for "
        "the batches | / delta-spark | checks | CPU s | data written | log written | peak RSS MiB |")
    add("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for system in SYSTEMS:
        runs = s.runs(KEY, system)
        if not runs:
            add(f"| {LABELS[system]} | not run |" + " |" * 10)
            continue
        rounds = [per_round(r) for r in runs]
        r = ratios(s, system) if system != BASE else {"add": None, "trigger": None, "total": None}
        adds, trig = pooled(runs, "addBatch"), pooled(runs, "triggerExecution")
        totals = [x["total"] for x in rounds]
        bad = [x for x in runs if not x["check"]["ok"]]
        checks = (f"rows, ids, commits, one txn per commit in all {len(runs)} rounds" if not bad else
                  "**" + "; ".join(f"round {x['round']}: {json.dumps(x['check'])}" for x in bad) + "**")
        wr = s.written(KEY, system)
        written = ("| |" if wr is None else
                   f"| {wr['data_bytes'] / 2**20:.1f} MiB in {wr['data_files']:.0f} files | "
                   f"{wr['log_bytes'] / 2**20:.1f} MiB in {wr['log_files']:.0f} files |")
        add(f"| {LABELS[system]} | {med(adds):.0f} ({min(x['add'] for x in rounds):.0f}-"
            f"{max(x['add'] for x in rounds):.0f}) | {fmt(r['add'])} | {med(trig):.0f} "
            f"({min(x['trigger'] for x in rounds):.0f}-{max(x['trigger'] for x in rounds):.0f}) | {fmt(r['trigger'])} | "
            f"{med(totals):.1f} ({min(totals):.1f}-{max(totals):.1f}) | {fmt(r['total'])} | {checks} | "
            f"{med(x['cpu_s'] for x in runs):.1f} {written} {med(x['peak_rss_mb'] for x in runs):.0f} |")
    add("")
    strata, delta = s.runs(KEY, "strata-v1"), s.runs(KEY, BASE)
    if strata and delta:
        r = ratios(s, "strata-v1")
        for name, k in (("Median batch commit latency (addBatch)", "add"),
                        ("Median micro-batch (triggerExecution)", "trigger"), ("Total time for the batches", "total")):
            x = r[k]
            if x is not None:
                add(f"- {name}: **{'met' if x <= TARGET else 'missed'}** ({x:.2f}x delta-spark's, target <= "
                    f"{TARGET}x).")
        add("")

    add("Each timed round (ms: medians of its batches; load average: 1 minute, when the system's round started):")
    add("")
    add("| round | system | load avg | batches | median addBatch ms | median triggerExecution ms | total s | "
        "total - sum of triggerExecution s |")
    add("|---|---|---|---|---|---|---|---|")
    for rnd in sorted({x["round"] for x in s.timed if x["workload"] == KEY}):
        for system in SYSTEMS:
            for x in s.runs(KEY, system):
                if x["round"] != rnd:
                    continue
                p = per_round(x)
                outside = x["seconds"] - sum(x["durations_ms"]["triggerExecution"]) / 1000
                add(f"| {rnd} | {LABELS[system]} | {x['loadavg_at_start'][0]:.2f} | {x['batches']} | {p['add']:.0f} | "
                    f"{p['trigger']:.0f} | {p['total']:.1f} | {outside:.1f} |")
    add("")

    systems = [x for x in SYSTEMS if s.runs(KEY, x)]
    if systems:
        add(f"Snapshot loading stays flat: median addBatch (ms) of the first {EDGE} and the last {EDGE} batches of "
            "each timed round (pooled over rounds), and of the batches whose commit also wrote a checkpoint (every "
            "10 commits: versions 10, 20, ...; batch b commits version b + 1) against the others.")
        add("")
        add(f"| system | first {EDGE} | last {EDGE} | last / first | checkpoint commits | other commits | "
            "checkpoints per round |")
        add("|---|---|---|---|---|---|---|")
        for system in systems:
            runs = s.runs(KEY, system)
            first, last = med(pooled(runs, "addBatch", slice(0, EDGE))), med(pooled(runs, "addBatch", slice(-EDGE, None)))
            cp = [a for r in runs for a in checkpoint_batches(r)[0]]
            other = [a for r in runs for a in checkpoint_batches(r)[1]]
            ncp = med(len(r["checkpoint_versions"]) for r in runs)
            add(f"| {LABELS[system]} | {first:.0f} | {last:.0f} | {last / first:.2f} | {fmt(med(cp) if cp else None, 0)} "
                f"| {med(other):.0f} | {ncp:.0f} |")
        add("")
        add("Where a micro-batch's time goes: median ms per part of `durationMs` over every batch of the timed rounds "
            "(the parts need not add up to the median triggerExecution; `other` = median of triggerExecution minus "
            "the parts, per batch).")
        add("")
        add("| system | " + " | ".join(PARTS) + " | other | triggerExecution |")
        add("|---|" + "---|" * (len(PARTS) + 2))
        for system in systems:
            runs = s.runs(KEY, system)
            cells = [f"{med(pooled(runs, k)):.0f}" for k in PARTS]
            rest = [r["durations_ms"]["triggerExecution"][i] - sum(r["durations_ms"][k][i] for k in PARTS)
                    for r in runs for i in range(r["batches"])]
            add(f"| {LABELS[system]} | " + " | ".join(cells) + f" | {med(rest):.0f} | "
                f"{med(pooled(runs, 'triggerExecution')):.0f} |")
        add("")
        add("Per-batch latency against batch number: [streaming.png](streaming.png).")
        add("")
    return out


def chart(record: Json, s: Any, path: Path) -> None:
    """addBatch and triggerExecution of each batch (median over the timed rounds) against the batch number."""
    systems = [x for x in SYSTEMS if s.runs(KEY, x)]
    if not systems:
        return
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"strata-v1": "#1f77b4", "delta": "#2ca02c"}
    fig, ax = plt.subplots(figsize=(11, 5))
    for system in systems:
        runs = s.runs(KEY, system)
        n = min(r["batches"] for r in runs)
        for key, style in (("addBatch", "-"), ("triggerExecution", ":")):
            curve = [med(r["durations_ms"][key][i] for r in runs) / 1000 for i in range(n)]
            ax.plot(range(n), curve, style, color=colors[system], label=f"{LABELS[system]} {key}")
    for v in range(10, 201, 10):
        ax.axvline(v - 1, color="#dddddd", linewidth=0.6, zorder=0)
    ax.set_yscale("log")
    ax.set_xlabel("micro-batch (grey: its commit wrote a checkpoint)")
    ax.set_ylabel("seconds (median over timed rounds), log scale")
    ax.set_title(f"10. Streaming sink, 1,000 rows per micro-batch - run {record['run_id']}, "
                 f"{record['machine']['cpus']} cores")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
