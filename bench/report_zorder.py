"""The Z-order section of latest.md (workload 9, bench/zorder.py): optimize time and files a point query reads."""
from __future__ import annotations

import statistics
from typing import Any

from report_section import workload_intro
from spec import LABELS

Json = dict[str, Any]
KEY = "zorder"
TARGET_REDUCTION = 10.0  # issue 15: >= 10x fewer files read after optimize(zorder_by => array('a', 'b'))
TARGET_TIME = 1.0  # issue 15: Strata's optimize no slower than delta-spark's OPTIMIZE ZORDER BY


def section(record: Json, s: Any) -> list[str]:
    out = workload_intro(record, KEY)
    if out is None:
        return []
    add = out.append
    add(f"Issue 15's targets: at least {TARGET_REDUCTION:.0f}x fewer files read by the point query after Strata's "
        f"Z-order, and Strata's optimize no slower than delta-spark's ({TARGET_TIME:.0f}x). Seconds: median "
        "(min-max) over the timed rounds; ratio: median of the per-round ratios. Files read are counted from each "
        "table's log as a min/max-skipping reader reads them (Strata's own scan planning agrees in every round's "
        "check). One run on the machine above, shared with other jobs (see its load average).")
    add("")
    add("| system | optimize s | / delta-spark | files before -> after | files read before -> after | fewer files "
        "read | checks | CPU s | data written | peak RSS MiB |")
    add("|---|---|---|---|---|---|---|---|---|---|")
    for system in ("strata-v2", "delta"):
        runs = s.runs(KEY, system)
        if not runs:
            add(f"| {LABELS[system]} | not run |" + " |" * 8)
            continue
        secs = [float(r["seconds"]) for r in runs]
        ratio = s.ratio(KEY, system, "delta") if system != "delta" else None
        med = statistics.median
        bad = [r for r in runs if not r["check"]["ok"]]
        checks = f"rows, layout and rewrite in all {len(runs)} rounds" if not bad else "**" + "; ".join(
            f"round {r['round']}: {r['check']}" for r in bad) + "**"
        wr = s.written(KEY, system)
        add(f"| {LABELS[system]} | {med(secs):.2f} ({min(secs):.2f}-{max(secs):.2f}) | "
            f"{'' if ratio is None else f'{ratio:.2f}'} | "
            f"{med(r['files_before'] for r in runs):.0f} -> {med(r['files_after'] for r in runs):.0f} | "
            f"{med(r['files_read_before'] for r in runs):.0f} -> {med(r['files_read_after'] for r in runs):.0f} | "
            f"{med(r['reduction'] for r in runs):.1f}x | {checks} | {med(r['cpu_s'] for r in runs):.1f} | "
            + (f"{wr['data_bytes'] / 2**20:.1f} MiB in {wr['data_files']:.0f} files" if wr else "") +
            f" | {med(r['peak_rss_mb'] for r in runs):.0f} |")
    add("")
    strata = s.runs(KEY, "strata-v2")
    if strata:
        reduction = statistics.median(r["reduction"] for r in strata)
        ratio = s.ratio(KEY, "strata-v2", "delta")
        add(f"- Files read: **{'met' if reduction >= TARGET_REDUCTION else 'missed'}** ({reduction:.1f}x fewer, "
            f"target >= {TARGET_REDUCTION:.0f}x).")
        if ratio is not None:
            add(f"- Optimize time: **{'met' if ratio <= TARGET_TIME else 'missed'}** ({ratio:.2f}x delta-spark's, "
                f"target <= {TARGET_TIME:.0f}x).")
        add("")
    return out
