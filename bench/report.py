"""Turns one benchmark record (bench/results/<date>.json) into bench/results/latest.md and latest.png.

run.py calls render() after a run; `python bench/report.py bench/results/<date>.json` re-renders an older record.
"""
from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import report_dv
import report_streaming
import report_zorder
from spec import CONTROL, LABELS, PEERS, STRATA, SYSTEMS

Json = dict[str, Any]
BULK = ("append", "part100", "part1000", "overwrite", "snapshot")
DML = ("delete", "update", "merge")
DV_DML = report_dv.DV_DML
ROW_LEVEL = DML + DV_DML


def metric(run: Json) -> float:
    """The number a round contributes for its system: seconds; for workload 3 the round's median commit latency."""
    if run["workload"] == "small_appends":
        return float(statistics.median(run["latencies"]))
    return float(run["seconds"])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo, hi = int(pos), min(int(pos) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


class Summary:
    def __init__(self, record: Json) -> None:
        self.record = record
        self.timed = [r for r in record["runs"] if not r["warmup"]]
        self.by: dict[tuple[str, str], list[Json]] = defaultdict(list)
        for r in self.timed:
            self.by[(r["workload"], r["system"])].append(r)

    def runs(self, workload: str, system: str) -> list[Json]:
        return sorted(self.by.get((workload, system), []), key=lambda r: r["round"])

    def values(self, workload: str, system: str) -> list[float]:
        return [metric(r) for r in self.runs(workload, system)]

    def ratio(self, workload: str, system: str, base: str) -> float | None:
        """Median over rounds of (system / base) within each round."""
        mine = {r["round"]: metric(r) for r in self.runs(workload, system)}
        theirs = {r["round"]: metric(r) for r in self.runs(workload, base)}
        per_round = [mine[k] / theirs[k] for k in mine if k in theirs and theirs[k] > 0]
        return statistics.median(per_round) if per_round else None

    def median_of(self, workload: str, system: str, key: str) -> float | None:
        vals = [float(r[key]) for r in self.runs(workload, system) if key in r]
        return statistics.median(vals) if vals else None

    def written(self, workload: str, system: str) -> Json | None:
        runs = [r["written"] for r in self.runs(workload, system) if "written" in r]
        if not runs:
            return None
        return {k: statistics.median(w[k] for w in runs) for k in runs[0]}


def fmt_ratio(x: float | None) -> str:
    return "" if x is None else f"{x:.2f}"


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def markdown(record: Json, json_name: str, s: Summary) -> str:
    sizes, v, m = record["sizes"], record["versions"], record["machine"]
    out: list[str] = []
    add = out.append
    add("# Strata against Spark Parquet, delta-spark and Iceberg")
    add("")
    add(f"Run `{record['run_id']}` ({record['started']}), {record['duration_s'] / 60:.1f} min; raw runs in "
        f"[{json_name}]({json_name}); chart [latest.png](latest.png). Regenerate with `make bench` "
        f"(`make bench SCALE=1` for the issue's 20M rows).")
    add("")
    if record.get("partial"):
        add(f"> **Partial run (development):** systems {', '.join(record['systems_run'])}; workloads "
            f"{', '.join(w['key'] for w in record['workloads'])}.")
        add("")
    if record["rounds"] < 5 or record["scale"] != record["default_scale"]:
        add(f"> **Not a default run:** scale {record['scale']} (default {record['default_scale']}), "
            f"{record['rounds']} timed round(s) (default 5).")
        add("")
    if record["failed_checks"]:
        add(f"> **{len(record['failed_checks'])} correctness check(s) failed** (rows or commits missing after the "
            "workload; round 0 is the warm-up):")
        for f in record["failed_checks"]:
            add(f"> - round {f['round']}, {f['workload']}, {LABELS[f['system']]}: `{json.dumps(f['check'])}`")
        if any(f["system"] == "iceberg" and f["workload"] == "concurrent" for f in record["failed_checks"]):
            add(">")
            add("> Iceberg's Hadoop catalog commits a version by renaming a new `vN.metadata.json` into place after "
                "checking that it does not exist yet; on a local file system that rename is not atomic against "
                "other processes, so two writers can both \"win\" version N and one commit disappears without an "
                "error. Iceberg documents the Hadoop catalog as safe only on file systems with atomic rename.")
        add("")
    add(f"N = **{sizes['rows']:,} rows** per bulk append (scale {record['scale']}; scale 1 = 20,000,000), "
        f"{record['rounds']} timed rounds after 1 discarded warm-up round"
        + (f" (workloads 7: {record['dml_rounds']})" if record.get("dml_rounds", record["rounds"]) != record["rounds"]
           else "") + ", systems interleaved in an order rotated "
        "every round. Times are wall-clock seconds of the operation alone (median, min, max over the timed "
        "rounds); CPU s is the CPU time the system's JVM(s) used meanwhile (median; workload 6: its 4 writers "
        "together). "
        "Ratios are computed within each round, then their median is shown: below 1 means faster than the "
        "reference.")
    add("")
    add(f"Machine: {m['cpus']} cores ({m['cpu_model']}), {m['memory_gib']} GiB, Linux {m['kernel']}; load average "
        f"{m['loadavg_at_start'][0]:.2f} at start, {m['loadavg_at_end'][0]:.2f} at end. Versions: Spark {v['spark']}, "
        f"Java {v['java']}, Python {v['python']}, Strata {v['strata']} (jar sha256 {v['strata_jar_sha256'][:12]}, "
        f"commit {v['strata_commit']}), delta-spark {v['delta_spark']}, Iceberg {v['iceberg']}.")
    if v["delta_spark"] != v["delta_spark_requested"]:
        add("")
        add(f"delta-spark {v['delta_spark_requested']} (asked for by the issue) is not on Maven Central; "
            f"{v['delta_spark']} is its newest 4.4.x release there and is what ran.")
    add("")

    add("## Ratios at a glance")
    add("")
    add("Median per-round time ratio of Strata to each reference (workload 3: median commit latency; "
        "workload 6: time for all 100 commits; workload 10: time for all 200 micro-batches).")
    add("")
    add("| workload | V1 / Parquet | V2 / Parquet | V1 / delta-spark | V2 / delta-spark | V1 / Iceberg | "
        "V2 / Iceberg |")
    add("|---|---|---|---|---|---|---|")
    for w in record["workloads"]:
        cells = []
        for base in ("parquet",) + PEERS:
            for mine in STRATA:
                applies = base in w["systems"] and mine in w["systems"]
                cells.append(fmt_ratio(s.ratio(w["key"], mine, base)) if applies else "n/a")
        order = [cells[0], cells[1], cells[2], cells[3], cells[4], cells[5]]
        add(f"| {w['title']} | " + " | ".join(order) + " |")
    add("")

    for w in record["workloads"]:
        key = w["key"]
        if key in (report_dv.READ, report_zorder.KEY, report_streaming.KEY):
            continue  # in the deletion vector, Z-order and streaming sections
        add(f"## {w['title']}")
        add("")
        add(w["definition"] + ".")
        add("")
        has_control = bool(s.runs(key, CONTROL))
        head = "| system | median s | min s | max s | / Parquet | / delta-spark | / Iceberg |"
        extra_head, extra_sep = "", ""
        if key == "small_appends":
            head = ("| system | median commit s | p95 commit s | min, max of round medians | / Parquet | "
                    "/ delta-spark | / Iceberg |")
        if key == "snapshot":
            extra_head, extra_sep = " open s | count s |", "---|---|"
        if key == "concurrent":
            extra_head, extra_sep = " commits/s (min-max) | median commit s | checks |", "---|---|---|"
        if key in DML:
            extra_head, extra_sep = " data files removed / added (commit) | checks |", "---|---|"
        if key in DV_DML:
            extra_head, extra_sep = (" files removed / added (commit; with a vector, or delete files) | checks |",
                                     "---|---|")
        add(head + extra_head + " CPU s | data written | log written | peak RSS MiB |")
        add("|---|---|---|---|---|---|---|" + extra_sep + "---|---|---|---|")
        for system in ((CONTROL,) if has_control else ()) + SYSTEMS:
            label = LABELS[system]
            if system != CONTROL and system not in w["systems"]:
                cols = 6 + extra_head.count("|") + 4
                na = w["not_applicable"]
                add(f"| {label} | {na.get(system, 'n/a') if isinstance(na, dict) else na} |" + " |" * (cols - 1))
                continue
            runs = s.runs(key, system)
            if not runs:
                if not record.get("partial"):
                    raise SystemExit(f"no timed runs of {key} on {system}: the record is incomplete")
                add(f"| {label} | not run (partial run) |")
                continue
            vals = s.values(key, system)
            ratios = [fmt_ratio(s.ratio(key, system, b)) if b in w["systems"] and b != system else ""
                      for b in ("parquet",) + PEERS]
            if key == "small_appends":
                pooled = [x for r in runs for x in r["latencies"]]
                first = (f"| {label} | {statistics.median(pooled):.3f} | {percentile(pooled, 0.95):.3f} | "
                         f"{min(vals):.3f}, {max(vals):.3f} |")
            else:
                first = f"| {label} | {statistics.median(vals):.2f} | {min(vals):.2f} | {max(vals):.2f} |"
            row = first + " " + " | ".join(ratios) + " |"
            if key == "snapshot":
                row += f" {s.median_of(key, system, 'open_s'):.2f} | {s.median_of(key, system, 'count_s'):.2f} |"
            if key == "concurrent":
                cps = [r["commits_per_s"] for r in runs]
                pooled = [x for r in runs for x in r["latencies"]]
                bad = [r for r in runs if not r["check"]["ok"]]
                checks = f"all commits and rows in all {len(runs)} rounds" if not bad else "**" + "; ".join(
                    f"round {r['round']}: {r['check']['commits']}/{r['check']['expected_commits']} commits, "
                    f"{r['check']['rows']:,}/{r['check']['expected_rows']:,} rows" for r in bad) + "**"
                row += (f" {statistics.median(cps):.2f} ({min(cps):.2f}-{max(cps):.2f}) | "
                        f"{statistics.median(pooled):.3f} | {checks} |")
            if key in ROW_LEVEL:
                removed = statistics.median(r["commit"]["removed"] for r in runs)
                added = statistics.median(r["commit"]["added"] for r in runs)
                mode = "merge-on-read" if key in DV_DML else "copy-on-write"
                bad = [r for r in runs if not r["check"]["ok"]]
                checks = f"rows, files and {mode} in all {len(runs)} rounds" if not bad else "**" + "; ".join(
                    f"round {r['round']}: {json.dumps(r['check'])}" for r in bad) + "**"
                marks = statistics.median(r["commit"].get("deletion_vectors", r["commit"].get("delete_files", 0))
                                          for r in runs)
                row += f" {removed:.0f} / {added:.0f}{f' ({marks:.0f})' if key in DV_DML else ''} | {checks} |"
            cpu = s.median_of(key, system, "cpu_s")
            row += f" {cpu:.1f} |" if cpu is not None else " |"
            wr = s.written(key, system)
            if key == "snapshot":
                row += " (a read) | (a read) |"
            elif wr is None:
                row += " | |"
            else:
                row += (f" {fmt_bytes(wr['data_bytes'])} in {wr['data_files']:.0f} files |"
                        f" {fmt_bytes(wr['log_bytes'])} in {wr['log_files']:.0f} files |")
            peak = s.median_of(key, system, "peak_rss_mb")
            row += f" {peak:.0f} |" if peak is not None else " |"
            add(row)
        add("")
        if key in ROW_LEVEL:
            spent = [(r["setup_s"], r["check_s"]) for r in s.timed if r["workload"] == key and "setup_s" in r]
            if spent:
                add(f"Untimed around each statement (median over systems and rounds): table (and MERGE source) "
                    f"{statistics.median(x for x, _ in spent):.1f} s, check and clean-up "
                    f"{statistics.median(y for _, y in spent):.1f} s.")
                add("")
        if key == "small_appends":
            add("Median latency (s) against commit number (version), over the timed rounds; checkpoints are written "
                "after versions 10, 20, ... by Strata and delta-spark.")
            add("")
            systems = [x for x in SYSTEMS if x in w["systems"] and s.runs(key, x)]
            add("| commit | " + " | ".join(LABELS[x] for x in systems) + " |")
            add("|---|" + "---|" * len(systems))
            curves = {x: latency_curve(s, x) for x in systems}
            for i in range(len(curves[systems[0]])):
                add(f"| {i + 1} | " + " | ".join(f"{curves[x][i]:.3f}" for x in systems) + " |")
            add("")
        if key == "snapshot":
            builds = record["setup"]
            add("Setup (untimed): " + "; ".join(
                f"{LABELS[x]} {'cached' if b['cached'] else 'built in %.0f s' % b['built_s']}"
                for x, b in builds.items()) + ".")
            add("")

    out.extend(report_dv.section(record, s))
    out.extend(report_zorder.section(record, s))
    out.extend(report_streaming.section(record, s))
    add("## Settings")
    add("")
    spark_version = record["versions"]["spark"]
    for note in record["settings"]["notes"]:
        add(f"- {note.replace('{spark}', spark_version)}")
    add(f"- Peak memory: {record['settings']['peak_memory']}.")
    add("- Files written: files new or changed in the table's directory after the timed operation; log = "
        "`_delta_log/` (Strata, delta-spark), `metadata/` (Iceberg), `_SUCCESS` (Spark Parquet); Hadoop's hidden "
        "`.crc` side files are counted apart in the JSON.")
    add("- Workloads 7 (DML): data files removed / added are counted in the statement's commit (the `remove` and "
        "`add` actions of its `_delta_log` version; Iceberg: the snapshot summary's `deleted-data-files` and "
        "`added-data-files`); its check also requires 100 data files before the statement and no deletion vector "
        "(delta-spark) or delete file (Iceberg) in the commit.")
    if any(w["key"] == report_streaming.KEY for w in record["workloads"]):
        add("- Workload 10 (streaming): the input files are written once per application, untimed; each round's table is "
            "created empty (version 0) and its checkpoint directory is new; the warm-up round runs 50 micro-batches "
            "on 50 files of its own. `spark.sql.streaming.numRecentProgressUpdates` is raised for the query so that "
            "every batch's progress is kept.")
    add("")
    return "\n".join(out)


def latency_curve(s: Summary, system: str) -> list[float]:
    runs = s.runs("small_appends", system)
    return [statistics.median(r["latencies"][i] for r in runs) for i in range(len(runs[0]["latencies"]))]


def chart(record: Json, s: Summary, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"noop": "#bbbbbb", "parquet": "#555555", "strata-v1": "#1f77b4", "strata-v2": "#6baed6",
              "delta": "#2ca02c", "iceberg": "#ff7f0e"}
    fig, axes = plt.subplots(1, 3, figsize=(18, 5.5), gridspec_kw={"width_ratios": [3, 1.4, 1]})
    ax = axes[0]
    systems = (CONTROL,) + SYSTEMS
    width = 0.8 / len(systems)
    for i, system in enumerate(systems):
        xs, meds, lo, hi = [], [], [], []
        for j, key in enumerate(BULK + DML + DV_DML):
            vals = s.values(key, system)
            if not vals:
                continue
            med = statistics.median(vals)
            xs.append(j + (i - len(systems) / 2 + 0.5) * width)
            meds.append(med)
            lo.append(med - min(vals))
            hi.append(max(vals) - med)
        ax.bar(xs, meds, width, yerr=[lo, hi], capsize=2, label=LABELS[system], color=colors[system])
    short = {"append": "1. append", "part100": "2a. append,\n100 partitions", "part1000": "2b. append,\n1,000 partitions",
             "overwrite": "5. overwrite\none partition", "snapshot": "4. open + count,\n1,000 commits",
             "delete": "7a. DELETE 1%", "update": "7b. UPDATE 1%", "merge": "7c. MERGE 1%\n+ 0.1% inserts",
             "delete_dv": "8a. DELETE 1%\nmerge-on-read", "update_dv": "8b. UPDATE 1%\nmerge-on-read",
             "merge_dv": "8c. MERGE\nmerge-on-read"}
    ax.set_xticks(range(len(BULK + DML + DV_DML)), [short[k] for k in BULK + DML + DV_DML], fontsize=8)
    if any(s.values(k, x) for k in BULK + DML + DV_DML for x in systems):
        ax.set_yscale("log")
    ax.set_ylabel("seconds (median, min-max), log scale")
    ax.set_title(f"Bulk writes (N = {record['sizes']['rows']:,} rows), snapshot load, DML")
    ax.legend(fontsize=8)

    ax = axes[1]
    for system in STRATA + PEERS:
        if not s.runs("small_appends", system):
            continue
        curve = latency_curve(s, system)
        ax.plot(range(1, len(curve) + 1), curve, marker=".", label=LABELS[system], color=colors[system])
    if not ax.lines:
        ax.text(0.5, 0.5, "not run", ha="center", transform=ax.transAxes)
    ax.set_xlabel("commit number")
    ax.set_ylabel("seconds (median over rounds)")
    ax.set_title("3. One-row append latency")
    if ax.lines:
        ax.legend(fontsize=8)

    ax = axes[2]
    names = [x for x in STRATA + PEERS if s.runs("concurrent", x)]
    cps = [[r["commits_per_s"] for r in s.runs("concurrent", x)] for x in names]
    meds = [statistics.median(c) for c in cps]
    ax.bar(range(len(names)), meds, yerr=[[m - min(c) for m, c in zip(meds, cps)],
                                          [max(c) - m for m, c in zip(meds, cps)]],
           capsize=3, color=[colors[x] for x in names])
    ax.set_xticks(range(len(names)), [LABELS[x] for x in names], fontsize=8, rotation=15)
    ax.set_ylabel("commits per second (median, min-max)")
    ax.set_title("6. 4 writers x 25 appends")
    fig.suptitle(f"Strata vs Spark Parquet, delta-spark, Iceberg - run {record['run_id']}, scale {record['scale']}, "
                 f"{record['rounds']} rounds, {record['machine']['cpus']} cores")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def render(record: Json, json_name: str, out: Path) -> None:
    s = Summary(record)
    (out / "latest.md").write_text(markdown(record, json_name, s))
    chart(record, s, out / "latest.png")
    report_streaming.chart(record, s, out / "streaming.png")


if __name__ == "__main__":
    src = Path(sys.argv[1])
    render(json.loads(src.read_text()), src.name, src.parent)
