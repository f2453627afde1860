"""Turns one metadata-scale record (bench/results/scale/<date>.json, bench/scale.py) into bench/results/scale/latest.md.

scale.py calls render() after a run; `python bench/report_scale.py bench/results/scale/<date>.json` re-renders one.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from scale_log import APPENDS, LATER_APPENDS, PARTITIONS, POINT_PARTITION, REAL_ROWS, ROWS_PER_FILE
from spec import DELTA_VERSION

Json = dict[str, Any]
LABELS = {"strata": "Strata", "delta": f"delta-spark {DELTA_VERSION}"}
ANSWERS = {"cold": "rows", "warm": "rows", "input_files": "files", "point": "rows", "count": "rows"}


def plural(n: int, unit: str) -> str:
    """`n` rows / files, singular for 1."""
    return f"{n:,} {unit[:-1] if n == 1 else unit}"


def op(record: Json, table: Json, engine: str, key: str) -> Json | None:
    e = table["engines"].get(engine)
    return None if e is None else e["ops"].get(key)


def seconds(r: Json | None) -> str:
    if r is None:
        return "not run"
    if r["status"] == "ok":
        return f"{r['seconds']:.2f}"
    if r["status"] == "timeout":
        return f"**timeout** ({r['seconds']:.0f} s)"
    if r["status"] == "oom":
        return "**OutOfMemoryError**"
    if r["status"] == "skipped":
        return f"skipped ({r['reason']})"
    return f"**{r['status']}**" + ("" if r.get("seconds") is None else f" after {r['seconds']:.1f} s")


def ratio(a: Json | None, b: Json | None) -> float | None:
    if a is None or b is None or a["status"] != "ok" or b["status"] != "ok" or b["seconds"] <= 0:
        return None
    return float(a["seconds"]) / float(b["seconds"])


def fmt_ratio(x: float | None) -> str:
    return "" if x is None else f"{x:.2f}"


def answer(key: str, r: Json | None, want: Json) -> str:
    if r is None or r["status"] != "ok":
        return ""
    if key.startswith(("append", "empty_append")):
        return f"version {r['version']}"
    text = plural(r["value"], ANSWERS[key])
    if r.get("scan_files") is not None:
        text += f", {plural(r['scan_files'], 'files')} scanned"
    if r.get("input_files") is not None:
        text += f", inputFiles() {r['input_files']:,}"
    scanned = r.get("scan_files")
    wrong = r["value"] != want.get(key) or (key == "point" and scanned not in (None, want["point_files"]))
    return f"**{text}**" if wrong else text


def expectation(key: str, want: Json) -> str:
    if key == "point":
        return f"{want['point']} row, {want['point_files']} file"
    return "" if key not in want else plural(want[key], ANSWERS[key])


def rss(r: Json | None) -> str:
    return "" if r is None or r.get("peak_rss_mb") is None else f"{r['peak_rss_mb']:.0f}"


def section(record: Json, table: Json) -> list[str]:
    files, want = table["files"], table["expected"]
    out = [f"## F = {files:,} live files", ""]
    add = out.append
    if "setup_error" in table:
        add(f"The table could not be built:\n\n```\n{table['setup_error']}\n```\n")
        return out
    s = table["setup"]
    ckpt = sum(v for k, v in s["log_bytes"].items() if ".checkpoint" in k)
    if s.get("layout") == "checkpoint":
        add(f"Log: only a checkpoint at version 0, {s['parts']} parts, {ckpt / 2**20:.1f} MiB (written by a Spark "
            f"job in {s['checkpoint_s']:.1f} s, bench/scale_checkpoint.py), and `_last_checkpoint`; "
            + ("cached from an earlier run." if s.get("cached") else "built by this run.")
            + f" Point query: id = {table['point_id']:,}.")
    else:
        add(f"Log: commit 0 {s['json_bytes'] / 2**20:.1f} MiB (JSON), Strata's checkpoint at version "
            f"{s['checkpoint_version']} {ckpt / 2**20:.1f} MiB (written in {s['checkpoint_s']:.1f} s, peak RSS "
            f"{s['checkpoint_peak_rss_mb']:.0f} MiB, driver memory {s['prepare_memory']}); "
            + ("cached from an earlier run." if s.get("cached") else "built by this run.")
            + f" Point query: id = {table['point_id']:,}.")
    add("")
    engines = [e for e in record["engines"] if e in table["engines"]]
    head = ["operation"] + [f"{LABELS[e]} s" for e in engines]
    if engines == ["strata", "delta"]:
        head.append("Strata / delta-spark")
    head += [f"{LABELS[e]} answer" for e in engines] + ["expected"] + [f"{LABELS[e]} peak RSS MiB" for e in engines]
    add("| " + " | ".join(head) + " |")
    add("|" + "---|" * len(head))
    for o in record["operations"]:
        key = o["key"]
        rs = [op(record, table, e, key) for e in engines]
        row = [o["title"]] + [seconds(r) for r in rs]
        if engines == ["strata", "delta"]:
            row.append(fmt_ratio(ratio(rs[0], rs[1])))
        row += [answer(key, r, want) for r in rs] + [expectation(key, want)] + [rss(r) for r in rs]
        add("| " + " | ".join(row) + " |")
    add("")
    add("One-row append on the table of F files against the same append on an empty table (same application, same "
        "schema): the cost of the big log per commit. The 1st append to the F-file table is also the application's "
        "first write (write path class loading and JIT warm-up), which the empty table's appends, run after, no "
        f"longer pay: the later row (the median of appends 2 to {1 + LATER_APPENDS}, each timed alone, alternating "
        "between the two tables) is the like-for-like comparison.")
    add("")
    add("| append | " + " | ".join(f"{LABELS[e]}: F files s | empty s | F files / empty" for e in engines) + " |")
    add("|---|" + "---|---|---|" * len(engines))
    for n, (big, empty) in enumerate(APPENDS, 1):
        cells = []
        for e in engines:
            b, m = op(record, table, e, big), op(record, table, e, empty)
            cells += [seconds(b), seconds(m), fmt_ratio(ratio(b, m))]
        add(f"| {'1st' if n == 1 else f'2 to {1 + LATER_APPENDS}, median'} | " + " | ".join(cells) + " |")
    add("")
    for e in engines:
        ops = table["engines"][e]["ops"]
        peaks = [r["peak_rss_mb"] for r in ops.values() if r.get("peak_rss_mb") is not None]
        bad = {k: r["status"] for k, r in ops.items() if r["status"] != "ok"}
        apps = table["engines"][e]["applications"]
        add(f"- {LABELS[e]}: driver peak RSS {max(peaks):.0f} MiB" if peaks else f"- {LABELS[e]}: no RSS measured")
        out[-1] += (f" (largest over its operations; heap limit {apps[0]['max_heap_mb']:.0f} MiB)" if apps else "")
        out[-1] += "; OutOfMemoryError: " + ("**yes**" if "oom" in bad.values() else "no")
        out[-1] += ("; every operation answered" if not bad else
                    "; " + ", ".join(f"{k}: {v}" for k, v in bad.items()))
        if len(apps) > 1:
            out[-1] += f"; {len(apps)} applications (a fresh one before {apps[-1]['first_operation']})"
        out[-1] += "."
    add("")
    return out


def findings(record: Json) -> list[str]:
    out: list[str] = []
    for table in record["tables"]:
        want = table["expected"]
        for e, data in table["engines"].items():
            for key, r in data["ops"].items():
                if r["status"] == "ok" and key in ANSWERS and r["value"] != want[key]:
                    out.append(f"- F = {table['files']:,}, {LABELS[e]}, {key}: answered {r['value']:,}, expected "
                               f"{want[key]:,}.")
                if key == "point" and r["status"] == "ok" and r.get("scan_files") not in (None, want["point_files"]):
                    out.append(f"- F = {table['files']:,}, {LABELS[e]}, point query: scanned {r['scan_files']:,} "
                               f"files, expected {want['point_files']} (statistics skipping).")
    return out


def markdown(record: Json, json_name: str) -> str:
    m, v = record["machine"], record["versions"]
    out = ["# Metadata at scale: Strata against delta-spark", ""]
    add = out.append
    add(f"Run `{record['run_id']}` ({record['started']}), {record['duration_s'] / 60:.1f} min; raw results in "
        f"[{json_name}]({json_name}). Regenerate with `make bench-scale "
        + ("SCALE=1 " if record["settings"].get("state") == "distributed" else "")
        + f"FILES={','.join(map(str, record['files']))}` (bench/scale.py; the issue's sizes are "
        "`FILES=100000,1000000`, the default; `SCALE=1`: 10,000,000 files on the distributed state).")
    add("")
    add(f"Machine: {m['cpus']} cores ({m['cpu_model']}), {m['memory_gib']} GiB, Linux {m['kernel']}; load average "
        f"{m['loadavg_at_start'][0]:.2f} at start, {m['loadavg_at_end'][0]:.2f} at end (shared with other jobs: "
        f"times are indicative). Versions: Spark {v.get('spark', '?')}, Java {v.get('java', '?')}, Strata "
        f"{v.get('strata', '?')} (jar sha256 {v.get('strata_jar_sha256', '?')[:12]}, commit {v['strata_commit']}), "
        f"delta-spark {v['delta_spark']}.")
    add("")
    st = record["settings"]
    if st.get("layout") == "checkpoint":
        logged = (f"a checkpoint at version 0 of {st['parts']} parts holding protocol (1, 2), metaData (id LONG, "
                  f"v STRING, p INT, partitioned by p) and F adds in {PARTITIONS:,} partitions (F/{PARTITIONS:,} files "
                  "each) with statistics of id and v, written by a Spark job (bench/scale_checkpoint.py); commit 0's "
                  "JSON holds only protocol and metaData (delta-spark needs that file); both engines read that log.")
    else:
        logged = ("commit 0 with protocol (1, 2), metaData (id LONG, v STRING, p INT, partitioned by p) and F adds "
                  f"in {PARTITIONS:,} partitions (F/{PARTITIONS:,} files each) with statistics of id and v, written by "
                  "Python (bench/scale_log.py), then a checkpoint at version 0 written by Strata; both engines read "
                  "that log.")
    add(f"The table: {logged} Only the "
        f"files of partition p = {POINT_PARTITION} exist ({REAL_ROWS:,} rows each, real sizes and statistics in the "
        f"log); the others are log entries only ({ROWS_PER_FILE:,} records, 32-128 MiB). Each engine runs in a fresh "
        f"Spark application per F, `{st['master']}`, `spark.driver.memory={st['driver_memory']}`, "
        f"`{st['jvm_options']}` (an OutOfMemoryError ends the application and is recorded); Strata reads and writes "
        "through `format(\"strata\")`, delta-spark through `format(\"delta\")` (its session extension and catalog). "
        f"Each operation is timed alone, with a timeout of {st['timeout_s']:.0f} s; peak RSS is the VmHWM of the "
        "application's JVM, reset before each operation.")
    add("")
    add("- cold: `load(path).where(\"p = -1\").count()` as the application's first action (snapshot load, class "
        "loading and JIT warm-up included); warm: the same again in the same application.")
    add(f"- inputFiles(): `len(load(path).where(\"p = {POINT_PARTITION}\").inputFiles())`; F/{PARTITIONS:,} is the "
        "right answer (the files of one partition).")
    add(f"- point query: `where(\"p = {POINT_PARTITION} AND id = X\").count()` with X in one file; files scanned = "
        "the `numFiles` metric of the scan; inputFiles() of the same DataFrame (untimed) alongside.")
    add("- appends: one row (`df.write.format(...).mode(\"append\").partitionBy(\"p\")`, a real Parquet file) into "
        "partition p = 0 (the application's first write), then one to an empty table of the same schema (created "
        f"untimed); then appends 2 to {1 + LATER_APPENDS} to each, alternating between the two tables, each timed "
        "alone: their medians.")
    add("- count(*): `load(path).count()` of the whole table; most data files do not exist, so only an engine that "
        "answers from the log's numRecords answers (a reader of the files fails).")
    if st.get("state") == "distributed":
        add(f"- Strata's file state: distributed (`{json.dumps(st['strata_conf'])}`): each operation's file state is "
            "reconstructed and pruned by Spark jobs over the checkpoint parts and commits; the one-row appends commit "
            "over the version's head (protocol, metadata, application versions: no file state on the driver; from "
            f"Strata commit 0ca13cc on, before which writes built the state on the driver). Log layout: {st['layout']} "
            f"({st['parts']} checkpoint parts).")
    add("")
    wrong = findings(record)
    if wrong:
        add("Answers that differ from the expected ones (also in bold below):")
        add("")
        out.extend(wrong)
        add("")
        add("`inputFiles()` answers from the relation's file index as planned; the files a query's scan reads are in "
            "its `files scanned` (the scan's own count), which can be fewer.")
        add("")
    for table in record["tables"]:
        out.extend(section(record, table))
    return "\n".join(out) + "\n"


def render(record: Json, json_name: str, out: Path) -> None:
    (out / "latest.md").write_text(markdown(record, json_name))


if __name__ == "__main__":
    src = Path(sys.argv[1])
    render(json.loads(src.read_text()), src.name, src.parent)
