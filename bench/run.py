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
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, TextIO

import report
from spec import (CONTROL, DEFAULT_DML_ROUNDS, DELTA_JARS, DELTA_VERSION, DELTA_VERSION_REQUESTED, DISTRIBUTION, DRIVER_MEMORY,
                  COMMON_CONF, ICEBERG_JARS, ICEBERG_TABLE_PROPERTIES, ICEBERG_VERSION, MASTER, SETTINGS_NOTES,
                  STRATA, SYSTEMS, WORKLOADS, WRITER_DRIVER_MEMORY, Sizes, Workload)

DEFAULT_SCALE = 0.1  # N = 2,000,000 rows; see the README for how long a default run takes
BENCH = Path(__file__).resolve().parent
CACHE = BENCH / "cache"
Json = dict[str, Any]


class BenchError(Exception):
    pass


class App:
    """A Spark application in a subprocess (its own session and process group), driven through JSON lines."""

    def __init__(self, label: str, role: str, cfg: Json, log: Path, cwd: Path) -> None:
        self.label = label
        self.log_path = log
        read_fd, write_fd = os.pipe()
        self.log: TextIO = open(log, "a")
        env = dict(os.environ, TZ="UTC", PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [sys.executable, str(BENCH / "app.py"), role, json.dumps(dict(cfg, reply_fd=write_fd))],
            stdin=subprocess.PIPE, stdout=self.log, stderr=subprocess.STDOUT, pass_fds=(write_fd,), cwd=cwd,
            env=env, text=True, start_new_session=True)
        os.close(write_fd)
        self.replies = os.fdopen(read_fd)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float) -> Json:
        ready, _, _ = select.select([self.replies], [], [], timeout)
        if not ready:
            raise BenchError(f"{self.label}: no answer within {timeout:.0f} s (log: {self.log_path})")
        line = self.replies.readline()
        if not line:
            raise BenchError(f"{self.label}: the application exited ({self.proc.wait()}) without an answer; "
                             f"its log ({self.log_path}) ends with:\n{tail(self.log_path)}")
        msg: Json = json.loads(line)
        if not msg["ok"]:
            raise BenchError(f"{self.label} failed:\n{msg['error']}\n(log: {self.log_path})")
        result: Json = msg["result"]
        return result

    def call(self, msg: Json, timeout: float = 3600) -> Json:
        self.send(json.dumps(msg))
        return self.receive(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
        self.log.close()


def tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def rotate(items: tuple[str, ...], k: int) -> tuple[str, ...]:
    k %= len(items)
    return items[k:] + items[:k]


def machine() -> Json:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    mem_kb = int(next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
                      if line.startswith("MemTotal")))
    return {"cpus": os.cpu_count(), "cpu_model": cpu, "memory_gib": round(mem_kb / 2**20, 1),
            "kernel": platform.release(), "loadavg_at_start": os.getloadavg()}


class Bench:
    def __init__(self, sizes: Sizes, rounds: int, jars: Path, systems: tuple[str, ...],
                 workloads: tuple[Workload, ...], dml_rounds: int) -> None:
        self.sizes, self.rounds, self.jars, self.dml_rounds = sizes, rounds, jars, dml_rounds
        self.systems, self.workloads = systems, workloads
        self.run_id = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        self.work = CACHE / "work" / self.run_id
        self.logs = CACHE / "logs" / self.run_id
        self.snapshots = CACHE / "snapshots"
        self.apps: dict[str, App] = {}
        self.runs: list[Json] = []
        self.setup: dict[str, Json] = {}
        self.info: dict[str, Json] = {}
        self.writers: list[App] = []
        self.t0 = time.perf_counter()

    def cfg(self, system: str) -> Json:
        return {"system": system, "work": str(self.work / system), "snapshots": str(self.snapshots),
                "jars": str(self.jars), "sizes": self.sizes.to_json()}

    def start(self) -> None:
        for d in (self.logs, self.snapshots):
            d.mkdir(parents=True, exist_ok=True)
        for system in self.systems:  # all start at once; each answers when its session is up
            (self.work / system).mkdir(parents=True, exist_ok=True)
            self.apps[system] = App(system, "serve", self.cfg(system), self.logs / f"{system}.log", self.work / system)
        for system, app in self.apps.items():
            app.receive(600)
            self.info[system] = app.call({"op": "info"})
            print(f"started {system}: Spark {self.info[system]['spark']}, JVM pid {self.info[system]['jvm_pid']}",
                  flush=True)

    def snapshot_keys(self) -> dict[str, str]:
        n = self.sizes.snapshot_commits
        strata_info = next((self.info[s] for s in ("strata-v1", "strata-v2") if s in self.info), {})
        sha = strata_info.get("strata_jar_sha256", "none")[:12]
        keys = {"parquet": f"parquet-spark{self.info['parquet']['spark']}-c{n}", "strata-v1": f"strata-{sha}-c{n}",
                "strata-v2": f"strata-{sha}-c{n}", "delta": f"delta-{DELTA_VERSION}-c{n}",
                "iceberg": f"iceberg-{ICEBERG_VERSION}-c{n}"}
        return {s: k.replace(".", "_").replace("-", "_") for s, k in keys.items()}

    def build_snapshots(self) -> None:
        keys = self.snapshot_keys()
        if any(x in self.systems for x in STRATA):
            for stale in self.snapshots.glob("strata_*"):  # tables of older Strata jars
                if stale.name.startswith(keys["strata-v1"]):
                    continue
                if stale.is_dir():
                    shutil.rmtree(stale, ignore_errors=True)
                else:
                    stale.unlink()
        if not any(w.key == "snapshot" for w in self.workloads):
            return
        for system in self.systems:
            start = time.perf_counter()
            build = system != "strata-v2" or "strata-v1" not in self.systems  # Strata V1 and V2 share a table
            result = self.apps[system].call({"op": "snapshot", "key": keys[system], "build": build})
            self.setup[system] = dict(result, key=keys[system])
            state = "cached" if result["cached"] else f"built in {time.perf_counter() - start:.0f} s"
            print(f"1,000-commit table for {system}: {state}", flush=True)

    def record(self, rnd: int, workload: Workload, system: str, result: Json) -> None:
        run = {"round": rnd, "warmup": rnd == 0, "workload": workload.key, "system": system, **result}
        self.runs.append(run)
        extra = ""
        if "commits_per_s" in result:
            extra = f"  {result['commits_per_s']:.2f} commits/s"
        elif "latencies" in result:
            lat = sorted(result["latencies"])
            extra = f"  median commit {lat[len(lat) // 2]:.3f} s"
        check = result.get("check")
        if check is not None and not check["ok"]:
            extra += f"  CHECK FAILED: {check}"
        print(f"{(time.perf_counter() - self.t0) / 60:5.1f} min  [round {rnd}{' warm-up' if rnd == 0 else ''}] "
              f"{workload.key:13} {system:10} "
              f"{result['seconds']:8.2f} s{extra}", flush=True)

    def concurrent(self, system: str, rnd: int, writers: list[App]) -> Json:
        name = self.apps[system].call({"op": "concurrent_create", "round": rnd})["name"]
        appends = self.sizes.writer_appends if rnd > 0 else self.sizes.writer_warmup_appends
        go = time.monotonic()
        for w in writers:  # the go: one command to each writer, back to back
            w.send(json.dumps({"op": "appends", "table": name, "appends": appends}))
        results = [w.receive(3600) for w in writers]
        spans = [span for r in results for span in r["spans"]]
        elapsed = max(end for _, end in spans) - go
        verify = self.apps[system].call({"op": "concurrent_verify", "round": rnd, "appends": appends})
        return {"seconds": elapsed, "commits_per_s": len(spans) / elapsed,
                "latencies": [end - begin for begin, end in spans],
                "peak_rss_mb": max(r["peak_rss_mb"] for r in results), "cpu_s": sum(r["cpu_s"] for r in results),
                "written": verify.pop("written"),
                "check": verify}

    def round(self, rnd: int) -> None:
        """Workloads 1-5 and 7 on every system."""
        for workload in self.workloads:
            if workload.key == "concurrent" or (workload.few_rounds and rnd > self.dml_rounds):
                continue
            for system in rotate(((CONTROL,) if workload.control else ()) + self.systems, rnd):
                if system == CONTROL:
                    result = self.apps["parquet"].call({"op": "run", "workload": workload.key, "control": True})
                elif system in workload.systems:
                    result = self.apps[system].call({"op": "run", "workload": workload.key, "round": rnd})
                else:
                    continue
                self.record(rnd, workload, system, result)
        for app in self.apps.values():
            app.call({"op": "cleanup", "round": rnd})

    def concurrent_rounds(self) -> None:
        """Workload 6: its writer applications, then its warm-up and timed rounds."""
        workload = next((w for w in self.workloads if w.key == "concurrent"), None)
        if workload is None:
            return
        systems = tuple(x for x in self.systems if x in workload.systems)
        writers = {system: [App(f"{system} writer {k}", "writer", dict(self.cfg(system), writer=k),
                                self.logs / f"{system}-writer{k}.log", self.work / system)
                            for k in range(self.sizes.writers)] for system in systems}
        self.writers = [w for ws in writers.values() for w in ws]
        for w in self.writers:
            w.receive(900)
        print(f"started {len(self.writers)} writer applications for workload 6", flush=True)
        for rnd in range(self.rounds + 1):
            for system in rotate(systems, rnd):
                self.record(rnd, workload, system, self.concurrent(system, rnd, writers[system]))
        for w in self.writers:
            w.send(json.dumps({"op": "stop"}))
        for w in self.writers:
            try:
                w.proc.wait(120)
            except subprocess.TimeoutExpired:
                pass
            w.kill()

    def stop(self, graceful: bool = True) -> None:
        for w in self.writers:
            w.kill()
        for app in self.apps.values():
            if graceful and app.proc.poll() is None:
                try:
                    app.call({"op": "stop"}, timeout=120)
                except BenchError:
                    pass
            app.kill()


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
    args.out.mkdir(parents=True, exist_ok=True)
    json_path = args.out / f"{started.strftime('%Y-%m-%d')}.json"
    n = 2
    while json_path.exists():
        json_path = args.out / f"{started.strftime('%Y-%m-%d')}-{n}.json"
        n += 1
    json_path.write_text(json.dumps(record, indent=1) + "\n")
    report.render(record, json_path.name, args.out)
    print(f"\nraw runs: {json_path}\ntable: {args.out / 'latest.md'}\nchart: {args.out / 'latest.png'}\n"
          f"took {record['duration_s'] / 60:.1f} min")
    if failed:
        print(f"\n{len(failed)} CORRECTNESS CHECK(S) FAILED:", file=sys.stderr)
        for r in record["failed_checks"]:
            print(f"  {r}", file=sys.stderr)
    return 2 if any(r["system"] in STRATA for r in failed) else 0


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
