"""`make bench`: Strata (V1 and V2 write paths) against Spark's Parquet writer, delta-spark and Iceberg, side by side.

Method
  * Every system runs in its own long-lived Spark application (bench/app.py, `local[2]`, the same Spark settings,
    data, codec and parallelism; see spec.py), started once before the first round. Start-up is never timed.
  * Round 0 is a warm-up and is discarded; then `--rounds` (default 5) timed rounds. Within a round the workloads
    run one after the other, and each workload runs on every system before the next workload starts, in a system
    order rotated every round, so that slow drifts of the machine spread over all systems.
  * Each workload reports the time of its operation only. Ratios are taken within a round (system / Spark Parquet,
    Strata V1 and V2 / delta-spark and / Iceberg), then their median across rounds is reported.
  * A noop sink (`df.write.format("noop")`, in the Parquet application) is timed on the same data as the data
    generation control: all data is generated on the fly from `spark.range`, the same for every system.
  * Files written by every timed operation (data and log separately) and the peak RSS of the application's JVM
    (VmHWM, reset before each operation) are recorded with each run.
  * Workload 6 runs after the rounds of workloads 1-5, with its own warm-up and timed rounds: 4 writer applications
    per system, started once, get a common go and append; every commit and row must land. Its warm-up round is
    shorter (4 x 5 appends): delta-spark needs minutes for one cold 4 x 25 round on 2 cores.
  * Workloads 7a-7c (DELETE, UPDATE, MERGE; bench/dml.py), then 8a-8d (bench/dml_dv.py) run in each round, on Strata V2,
    delta-spark and Iceberg, each statement on a fresh 100-file table of N rows created untimed just before it.
    Workload 9 (Z-order OPTIMIZE, bench/zorder.py; Strata V2 and delta-spark) likewise, in the same rounds, and
    workload 10 (the streaming sink, bench/streaming.py: 200 micro-batches of 1,000 rows into a path table; Strata
    and delta-spark), whose warm-up round runs 50 micro-batches.
  * Anything that fails (a peer that cannot start, a workload that throws) stops the benchmark with a non-zero exit
    status and the error. Correctness checks (rows and commits after workloads 3, 4, 5, 6 and 7) are recorded with
    every run and shown in latest.md; a failed check of Strata also makes the exit status non-zero, one of a peer
    is a finding about that peer (e.g. Iceberg's Hadoop catalog can lose a concurrent commit on a local file
    system, whose rename is not atomic across processes) and is reported as such.

Knobs
  --scale / BENCH_SCALE   multiplies the row counts of the bulk writes: 1.0 = the issue's N = 20,000,000 rows per
                          append; default DEFAULT_SCALE (N = 2,000,000). Commit counts (50 small appends, 1,000
                          commits, 4 x 25 concurrent appends) do not scale, and they set the floor of a run's length
                          on 2 cores: the committed default run (bench/results/2026-11-23.json) took 58.7 minutes,
                          33 of them delta-spark's (27 in workload 6, about 5 minutes a round).
  --rounds / BENCH_ROUNDS timed rounds after the warm-up (default 5).
  --dml-rounds / BENCH_DML_ROUNDS  timed rounds of workloads 7-10 (default 3, at most --rounds): each of its statements
                          needs a fresh table of N rows, built untimed, so they cost more wall time than they show.
  --out                   results folder (default bench/results; workloads with a result set of their own, run alone,
                          bench/results/<set>: zorder, streaming): <date>.json (every raw run), latest.md, latest.png.
  --workloads / --systems development subsets (the results are marked partial). Without --systems, only Spark
                          Parquet and the systems the chosen workloads run are started.

Usage: .venv/bin/python bench/run.py [--scale S] [--rounds R]      (or: make bench SCALE=S ROUNDS=R)

Metadata at scale (a log of 100,000 or 1,000,000 live files; issue 23) is a set apart, with its own driver and
applications: bench/scale.py (make bench-scale FILES=100000,1000000; results in bench/results/scale/).

Code: run.py (options, the run's record and report), rounds.py (the rounds), apps.py (the applications' processes).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import report
from apps import BENCH, BenchError
from rounds import CACHE, Bench
from spec import (DEFAULT_DML_ROUNDS, DELTA_JARS, DELTA_VERSION, DELTA_VERSION_REQUESTED, DISTRIBUTION, DRIVER_MEMORY,
                  COMMON_CONF, ICEBERG_JARS, ICEBERG_TABLE_PROPERTIES, ICEBERG_VERSION, MASTER, SETTINGS_NOTES,
                  STRATA, SYSTEMS, WORKLOADS, WRITER_DRIVER_MEMORY, Sizes, Workload)

DEFAULT_SCALE = 0.1  # N = 2,000,000 rows; see the README for how long a default run takes
Json = dict[str, Any]


def machine() -> Json:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    mem_kb = int(next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
                      if line.startswith("MemTotal")))
    return {"cpus": os.cpu_count(), "cpu_model": cpu, "memory_gib": round(mem_kb / 2**20, 1),
            "kernel": platform.release(), "loadavg_at_start": os.getloadavg()}


def check_jars(jars: Path) -> None:
    missing = [j for j in DELTA_JARS + ICEBERG_JARS if not (jars / j).is_file()]
    if missing:
        raise BenchError(f"peer jars missing in {jars}: {', '.join(missing)} (`make bench-jars` fetches them)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=float(os.environ.get("BENCH_SCALE") or DEFAULT_SCALE))
    ap.add_argument("--rounds", type=int, default=int(os.environ.get("BENCH_ROUNDS") or 5))
    ap.add_argument("--dml-rounds", type=int,
                    default=int(os.environ.get("BENCH_DML_ROUNDS") or DEFAULT_DML_ROUNDS),
                    help=f"timed rounds of workloads 7, 8 (DML), at most --rounds (default {DEFAULT_DML_ROUNDS})")
    ap.add_argument("--out", type=Path, help="results folder (default bench/results, or bench/results/<set> for "
                                             "workloads with a result set of their own run alone)")
    ap.add_argument("--jars", type=Path, default=CACHE / "jars")
    ap.add_argument("--systems", help="development only: a comma-separated subset (parquet always runs); "
                                      "the results are marked partial")
    ap.add_argument("--workloads", help="development only: a comma-separated subset of "
                                        + ",".join(w.key for w in WORKLOADS) + "; the results are marked partial")
    args = ap.parse_args()
    if args.rounds < 1 or args.dml_rounds < 1:
        ap.error("--rounds and --dml-rounds must be at least 1")
    dml_rounds = min(args.dml_rounds, args.rounds)
    systems: tuple[str, ...] = SYSTEMS
    workloads: tuple[Workload, ...] = WORKLOADS
    if args.systems:
        wanted = set(args.systems.split(",")) | {"parquet"}
        if wanted - set(SYSTEMS):
            ap.error(f"unknown systems {wanted - set(SYSTEMS)}")
        systems = tuple(x for x in SYSTEMS if x in wanted)
    if args.workloads:
        wanted = set(args.workloads.split(","))
        if "scale" in wanted:
            ap.error("the metadata-scale set runs apart: make bench-scale FILES=... (bench/scale.py)")
        if wanted - {w.key for w in WORKLOADS}:
            ap.error(f"unknown workloads {wanted - {w.key for w in WORKLOADS}}")
        workloads = tuple(w for w in WORKLOADS if w.key in wanted)
        if not args.systems:  # start only the applications the chosen workloads use (Spark Parquet always)
            used = {"parquet"} | {x for w in workloads for x in w.systems}
            systems = tuple(x for x in SYSTEMS if x in used)
    if args.out is None:
        sets = {w.results for w in workloads}
        args.out = BENCH / "results" / sets.pop() if len(sets) == 1 and workloads != WORKLOADS else BENCH / "results"

    sizes = Sizes.of(args.scale)
    check_jars(args.jars)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # clean up the applications on `kill`
    shutil.rmtree(CACHE / "work", ignore_errors=True)  # what an interrupted run left
    bench = Bench(sizes, args.rounds, args.jars, systems, workloads, dml_rounds)
    started = dt.datetime.now(dt.timezone.utc)
    host = machine()
    print(f"benchmark {bench.run_id}: scale {args.scale} (N = {sizes.rows:,} rows), {args.rounds} rounds after a "
          f"warm-up, systems {', '.join(systems)}; logs in {bench.logs}", flush=True)
    try:
        bench.start()
        bench.build_snapshots()
        for rnd in range(args.rounds + 1):
            bench.round(rnd)
        bench.concurrent_rounds()
    except BaseException:
        bench.stop(graceful=False)
        print(f"\nBENCHMARK FAILED (logs in {bench.logs})", file=sys.stderr, flush=True)
        raise
    bench.stop()
    shutil.rmtree(bench.work, ignore_errors=True)
    host["loadavg_at_end"] = os.getloadavg()

    strata_info = next((bench.info[s] for s in STRATA if s in bench.info), {})
    record: Json = {
        "benchmark": "strata-vs-parquet-delta-iceberg",
        "run_id": bench.run_id,
        "started": started.isoformat(timespec="seconds"),
        "duration_s": round(time.perf_counter() - bench.t0, 1),
        "scale": args.scale,
        "default_scale": DEFAULT_SCALE,
        "sizes": sizes.to_json(),
        "rounds": args.rounds,
        "dml_rounds": dml_rounds,
        "partial": systems != SYSTEMS or workloads != WORKLOADS,
        "systems_run": list(systems),
        "warmup_rounds": 1,
        "machine": host,
        "versions": {
            "spark": bench.info["parquet"]["spark"], "java": bench.info["parquet"]["java"],
            "python": bench.info["parquet"]["python"], "strata": strata_info.get("strata", "not run"),
            "strata_jar_sha256": strata_info.get("strata_jar_sha256", "not run"), "strata_commit": git_commit(),
            "delta_spark": DELTA_VERSION, "delta_spark_requested": DELTA_VERSION_REQUESTED,
            "iceberg": ICEBERG_VERSION,
        },
        "settings": {"master": MASTER, "driver_memory": DRIVER_MEMORY, "writer_driver_memory": WRITER_DRIVER_MEMORY,
                     "spark_conf": COMMON_CONF, "v2_distribution_mode": {"unpartitioned": DISTRIBUTION[False],
                                                                         "partitioned": DISTRIBUTION[True]},
                     "iceberg_table_properties": ICEBERG_TABLE_PROPERTIES,
                     "peak_memory": "VmHWM (peak resident set size) of the application's JVM, reset before each "
                                    "timed operation; workload 6: the largest of its 4 writers",
                     "notes": list(SETTINGS_NOTES)},
        "workloads": [{"key": w.key, "title": w.title, "definition": w.definition, "systems": list(w.systems),
                       "not_applicable": w.not_applicable} for w in workloads],
        "setup": bench.setup,
        "runs": bench.runs,
    }
    failed = [r for r in bench.runs if "check" in r and not r["check"]["ok"]]
    record["failed_checks"] = [{k: r[k] for k in ("round", "workload", "system", "check")} for r in failed]
    json_path = save_record(args.out, started, record)
    report.render(record, json_path.name, args.out)
    print(f"\nraw runs: {json_path}\ntable: {args.out / 'latest.md'}\nchart: {args.out / 'latest.png'}\n"
          f"took {record['duration_s'] / 60:.1f} min")
    if failed:
        print(f"\n{len(failed)} CORRECTNESS CHECK(S) FAILED:", file=sys.stderr)
        for r in record["failed_checks"]:
            print(f"  {r}", file=sys.stderr)
    return 2 if any(r["system"] in STRATA for r in failed) else 0


def save_record(out: Path, started: dt.datetime, record: dict[str, Any]) -> Path:
    """Writes a run's raw record as `<out>/<date>.json` (`<date>-2.json`, ... when the day has one already)."""
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / f"{started.strftime('%Y-%m-%d')}.json"
    n = 2
    while json_path.exists():
        json_path = out / f"{started.strftime('%Y-%m-%d')}-{n}.json"
        n += 1
    json_path.write_text(json.dumps(record, indent=1) + "\n")
    return json_path


def git_commit() -> str:
    try:
        head = subprocess.run(["git", "-C", str(BENCH.parent), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(BENCH.parent), "status", "--porcelain", "--", "jvm", "python"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + (" (+ uncommitted changes in jvm/ or python/)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
