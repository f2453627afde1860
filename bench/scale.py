"""`make bench-scale`: metadata at scale (issue 23), Strata against delta-spark on a table of F live files.

Method
  * The table (bench/scale_log.py): a synthetic log of F live files in 1,000 partitions (commit 0: protocol (1, 2),
    metaData, F adds with statistics), written by Python, then a checkpoint at version 0 written by Strata. Only the
    F/1000 files of partition p = 5 exist (so that a point query has rows to count). Built once per F and cached in
    bench/cache/scale/<F>/ (a rerun reuses it; --regenerate rebuilds). Both engines read the same log: each gets its
    own hard-linked copy, since the appends below add commits.
  * Each engine (Strata through `format("strata")`, delta-spark through `format("delta")`) runs in a fresh Spark
    application per F (bench/scale_app.py: `local[2]`, `spark.driver.memory` 2g, the benchmark's common settings;
    the JVM exits on its first OutOfMemoryError). Its operations, in this order, each timed alone:
      cold         `load(path).where("p = -1").count()`: the application's first action (snapshot load included)
      warm         the same again in the same application
      input_files  `len(load(path).where("p = 5").inputFiles())` (F/1000 expected: the files of one partition)
      point        `load(path).where("p = 5 AND id = X").count()`, X in one file only (1 row, 1 file expected)
      append_1, empty_append_1        a one-row append (`df.write.format(...).mode("append")`, a real Parquet file),
                                      then the same on an empty table of the same schema, created untimed just before
      append_2, empty_append_2        appends 2 to 10 to each, alternating between the tables: their medians
      count        `load(path).count()`, the whole table's count(*): answered from the log's numRecords (both
                   engines can); an engine that reads the files fails (most do not exist)
  * Recorded per operation: seconds, CPU seconds and peak RSS (VmHWM, reset before) of the application's JVM, its
    answer and the expected one, files the scans read (their `numFiles` metric), files written. A failure is a result:
    `error` (an exception), `oom` (OutOfMemoryError), `timeout` (no answer within --timeout; the application is
    killed) or `died`; after an `oom`, `timeout` or `died`, the rest of the operations on the big table are `skipped`
    and the empty-table appends run in a fresh application.

Knobs
  --files / FILES      comma-separated F values (multiples of 1,000; default 100000,1000000, the issue's sizes)
  SCALE=1              the distributed-state run: F = 10,000,000, --layout checkpoint, --state distributed
  --layout             json (commit 0 + Strata's checkpoint, default) or checkpoint (a multi-part checkpoint only,
                       written by a Spark job: bench/scale_checkpoint.py); --parts its parts (default 10)
  --state              Strata's file state: driver (the default threshold) or distributed (threshold 0); results of
                       the distributed state go to bench/results/scale-distributed
  --timeout / OP_TIMEOUT  seconds per operation (default 600)
  --engines            development: a subset of strata,delta
  --driver-memory      development: the engines' spark.driver.memory (default 2g)
  --regenerate         rebuild the cached tables of these F values
  --out                results folder (default bench/results/scale): <date>.json (raw) and latest.md

Usage: .venv/bin/python bench/scale.py --files 2000,20000      (or: make bench-scale FILES=2000,20000)
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any

import report_scale
from apps import BENCH, App, BenchError, Timeout
from rounds import CACHE
from run import git_commit, machine, save_record
from scale_app import JVM_OPTIONS
from scale_log import GENERATOR, OPERATIONS, check_files, expected, point_id
from spec import COMMON_CONF, DELTA_JARS, DELTA_VERSION, DRIVER_MEMORY, MASTER

Json = dict[str, Any]
ENGINES = ("strata", "delta")
MEMORY = "2g"
PREPARE_TIMEOUT = 4 * 3600.0
FATAL = ("oom", "timeout", "died")
# Strata's session settings per file-state path (docs/architecture.md, "Table state": the distributed state)
STATE_CONF = {"driver": {}, "distributed": {"spark.strata.state.distributedThreshold.files": "0"}}


class Scale:
    def __init__(self, args: argparse.Namespace, engines: tuple[str, ...]) -> None:
        self.args, self.engines = args, engines
        self.run_id = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        self.work = CACHE / "work" / f"scale-{self.run_id}"
        self.logs = CACHE / "logs" / f"scale-{self.run_id}"
        self.apps: list[App] = []
        self.t0 = time.perf_counter()

    def say(self, text: str) -> None:
        print(f"{(time.perf_counter() - self.t0) / 60:5.1f} min  {text}", flush=True)

    def app(self, label: str, role: str, cfg: Json, timeout: float = 600) -> App:
        a = App(label, role, dict(cfg, jars=str(self.args.jars)), self.logs / f"{label}.log", self.work, "scale_app.py")
        self.apps.append(a)
        try:
            a.receive(timeout)
        except BenchError:
            a.kill()
            raise
        return a

    def table(self, files: int) -> Json:
        """The cached table of `files` files, built if missing (or of another generator, or --regenerate)."""
        base = table_dir(files, self.args)
        marker = base / "complete.json"
        if marker.exists() and not self.args.regenerate:
            info: Json = json.loads(marker.read_text())
            if info.get("generator") == GENERATOR:
                self.say(f"F = {files:,}: cached table in {base}")
                return dict(info, cached=True)
        shutil.rmtree(base, ignore_errors=True)
        base.mkdir(parents=True)
        self.say(f"F = {files:,}: generating the table in {base}")
        cfg = {"engine": "strata", "work": str(self.work / f"prepare-{files}"), "memory": DRIVER_MEMORY,
               "table": str(base / "table"), "files": files, "layout": self.args.layout, "parts": self.args.parts}
        a = self.app(f"prepare-{files}", "prepare", cfg)
        try:
            info = dict(a.call({"op": "prepare"}, PREPARE_TIMEOUT), generator=GENERATOR,
                        prepare_memory=DRIVER_MEMORY)
            a.send(json.dumps({"op": "stop"}))
            a.proc.wait(120)
        finally:
            a.kill()
        marker.write_text(json.dumps(info, indent=1) + "\n")
        self.say(f"F = {files:,}: data {info['data_s']:.1f} s, commit 0 ({info['json_bytes'] / 2**20:.1f} MiB) "
                 f"{info['json_s']:.1f} s, Strata's checkpoint {info['checkpoint_s']:.1f} s")
        return dict(info, cached=False)

    def call(self, a: App, jvm_pid: int, key: str) -> Json:
        """One operation; a timeout, a death or an OutOfMemoryError becomes its result."""
        pos = a.log_path.stat().st_size
        try:
            result = a.call({"op": "run", "key": key}, self.args.timeout)
        except Timeout as e:
            peak = vm_hwm(jvm_pid)  # reset before the operation: the operation's peak
            a.kill()
            return {"status": "timeout", "seconds": self.args.timeout, "peak_rss_mb": peak, "error": str(e)[-4000:]}
        except BenchError as e:  # it exited, or its answer was not a result
            a.kill()
            status = "oom" if "OutOfMemoryError" in log_since(a, pos) else "died"
            return {"status": status, "seconds": None, "peak_rss_mb": None, "error": str(e)[-4000:]}
        if result["status"] == "error" and "OutOfMemoryError" in log_since(a, pos):
            result["status"] = "oom"
        return result

    def engine(self, engine: str, files: int, table: Path) -> Json:
        """The operations of one engine on its own copy of the table of `files` files."""
        work = self.work / f"{engine}-{files}"
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(table, work / "table", copy_function=os.link)  # the log is only read or added to
        cfg = {"engine": engine, "work": str(work), "memory": self.args.driver_memory, "table": str(work / "table"),
               "empty": str(work / "empty"), "files": files,
               "conf": STATE_CONF[self.args.state] if engine == "strata" else {}}
        out: Json = {"ops": {}, "applications": []}
        a: App | None = None
        pid = 0
        failed: dict[bool, str] = {}  # group (big table or not) -> why its remaining operations are skipped
        for op in OPERATIONS:
            if op.big in failed:
                out["ops"][op.key] = {"status": "skipped", "reason": failed[op.big]}
                continue
            if a is None:  # the first, or a fresh one after a fatal failure
                label = f"{engine}-{files}-{len(out['applications'])}"
                try:
                    a = self.app(label, "serve", cfg)
                    info = a.call({"op": "info"})
                except BenchError as e:
                    a = None
                    out["ops"][op.key] = {"status": "error", "error": f"the application did not start: {e}"[-4000:]}
                    failed[op.big] = "the application did not start"
                    continue
                out["applications"].append(dict(info, first_operation=op.key, log=str(self.logs / f"{label}.log")))
                pid = int(info["jvm_pid"])
            r = self.call(a, pid, op.key)
            out["ops"][op.key] = r
            self.say(f"F = {files:,}  {engine:6} {op.key:15} {describe(r)}")
            if r["status"] in FATAL or r.get("jvm_alive") is False:
                failed[op.big] = f"after {op.key}: {r['status']}"
                a.kill()
                a = None
        if a is not None:
            stop(a)
        shutil.rmtree(work, ignore_errors=True)
        return out

    def stop(self) -> None:
        for a in self.apps:
            a.kill()


def table_dir(files: int, args: argparse.Namespace) -> Path:
    """The cached table of `files` files in the chosen layout."""
    return CACHE / "scale" / (str(files) if args.layout == "json" else f"{files}-checkpoint-{args.parts}")


def describe(r: Json) -> str:
    if r["status"] == "skipped":
        return f"skipped ({r['reason']})"
    secs = "" if r.get("seconds") is None else f"{r['seconds']:8.2f} s"
    extra = "".join(f"  {k} {r[k]}" for k in ("value", "scan_files", "input_files", "version") if k in r)
    rss = "" if r.get("peak_rss_mb") is None else f"  peak RSS {r['peak_rss_mb']:.0f} MiB"
    return f"{secs}{extra}{rss}" + ("" if r["status"] == "ok" else f"  {r['status'].upper()}")


def vm_hwm(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(line.split()[1]) / 1024 for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return None


def log_since(a: App, pos: int) -> str:
    with open(a.log_path, errors="replace") as f:
        f.seek(pos)
        return f.read()


def stop(a: App) -> None:
    try:
        a.send(json.dumps({"op": "stop"}))
        a.proc.wait(120)
    except Exception:
        pass
    a.kill()


def versions(tables: list[Json]) -> Json:
    """Spark, Java and Strata as the applications reported them."""
    infos = [a for t in tables for e in t["engines"].values() for a in e["applications"]]
    out: Json = {"strata_commit": git_commit(), "delta_spark": DELTA_VERSION}
    for info in infos:
        for key in ("spark", "java", "python", "strata", "strata_jar_sha256"):
            if key in info:
                out.setdefault(key, info[key])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    big = os.environ.get("SCALE") == "1"  # the 10,000,000-file run: checkpoint only, distributed state
    ap.add_argument("--files", default=os.environ.get("FILES") or ("10000000" if big else "100000,1000000"))
    ap.add_argument("--layout", choices=("json", "checkpoint"), default="checkpoint" if big else "json",
                    help="json: commit 0 + Strata's checkpoint; checkpoint: a multi-part checkpoint only")
    ap.add_argument("--parts", type=int, default=10, help="checkpoint parts of the checkpoint layout (default 10)")
    ap.add_argument("--state", choices=tuple(STATE_CONF), default="distributed" if big else "driver",
                    help="Strata's file state: driver (default threshold) or distributed (threshold forced to 0)")
    ap.add_argument("--timeout", type=float, default=float(os.environ.get("OP_TIMEOUT") or 600))
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--regenerate", action="store_true")
    ap.add_argument("--driver-memory", default=MEMORY, help=f"development only (default {MEMORY}, the issue's)")
    ap.add_argument("--out", type=Path, default=None,
                    help="results folder (default bench/results/scale, or scale-distributed with --state distributed)")
    ap.add_argument("--jars", type=Path, default=CACHE / "jars")
    args = ap.parse_args()
    if args.out is None:
        args.out = BENCH / "results" / ("scale" if args.state == "driver" else "scale-distributed")
    sizes = [int(x.replace("_", "")) for x in args.files.split(",") if x]
    for f in sizes:
        try:
            check_files(f)
        except ValueError as e:
            ap.error(str(e))
    engines = tuple(x for x in ENGINES if x in args.engines.split(","))
    if set(args.engines.split(",")) - set(ENGINES) or not engines:
        ap.error(f"--engines: a subset of {','.join(ENGINES)}")
    missing = [j for j in DELTA_JARS if not (args.jars / j).is_file()]
    if "delta" in engines and missing:
        raise BenchError(f"peer jars missing in {args.jars}: {', '.join(missing)} (`make bench-jars` fetches them)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    scale = Scale(args, engines)
    scale.logs.mkdir(parents=True, exist_ok=True)
    scale.work.mkdir(parents=True, exist_ok=True)
    started = dt.datetime.now(dt.timezone.utc)
    host = machine()
    print(f"metadata-scale benchmark {scale.run_id}: F = {', '.join(f'{f:,}' for f in sizes)}; engines "
          f"{', '.join(engines)}; logs in {scale.logs}", flush=True)
    tables: list[Json] = []
    try:
        for files in sizes:
            entry: Json = {"files": files, "expected": expected(files), "point_id": point_id(), "engines": {}}
            tables.append(entry)
            try:
                entry["setup"] = scale.table(files)
            except BenchError as e:
                entry["setup_error"] = str(e)[-4000:]
                scale.say(f"F = {files:,}: the table could not be built; skipped (see the record)")
                continue
            for engine in engines:
                entry["engines"][engine] = scale.engine(engine, files, table_dir(files, args) / "table")
    finally:
        scale.stop()
        shutil.rmtree(scale.work, ignore_errors=True)
    host["loadavg_at_end"] = os.getloadavg()
    record: Json = {
        "benchmark": "strata-metadata-scale",
        "run_id": scale.run_id,
        "started": started.isoformat(timespec="seconds"),
        "duration_s": round(time.perf_counter() - scale.t0, 1),
        "files": sizes,
        "engines": list(engines),
        "machine": host,
        "versions": versions(tables),
        "settings": {"master": MASTER, "driver_memory": args.driver_memory, "prepare_driver_memory": DRIVER_MEMORY,
                     "layout": args.layout, "parts": args.parts, "state": args.state,
                     "strata_conf": STATE_CONF[args.state],
                     "jvm_options": JVM_OPTIONS, "spark_conf": COMMON_CONF, "timeout_s": args.timeout,
                     "generator": GENERATOR},
        "operations": [{"key": o.key, "title": o.title, "big_table": o.big} for o in OPERATIONS],
        "tables": tables,
    }
    json_path = save_record(args.out, started, record)
    report_scale.render(record, json_path.name, args.out)
    print(f"\nraw runs: {json_path}\ntable: {args.out / 'latest.md'}\ntook {record['duration_s'] / 60:.1f} min")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
