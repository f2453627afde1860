"""The benchmark's rounds (see run.py for the method): its applications started, the 1,000-commit tables built, the
workloads run on every system round after round, workload 6 with its writer applications, every run recorded.
"""
from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from apps import BENCH, App, BenchError
from spec import CONTROL, DELTA_VERSION, ICEBERG_VERSION, STRATA, Sizes, Workload

CACHE = BENCH / "cache"
Json = dict[str, Any]


def rotate(items: tuple[str, ...], k: int) -> tuple[str, ...]:
    k %= len(items)
    return items[k:] + items[:k]


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
