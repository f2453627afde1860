"""What a benchmark application measures around an operation: its time, the CPU time and peak resident set size of its
JVM, and the files it wrote (see bench/app.py).
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from systems import Engine, Table, jvm

Json = dict[str, Any]


class Memory:
    """Peak resident set size and CPU time of this application's JVM (the py4j gateway process)."""

    def __init__(self, spark: SparkSession) -> None:
        self.pid = int(jvm(spark).java.lang.management.ManagementFactory.getRuntimeMXBean().getPid())
        self.ticks = os.sysconf("SC_CLK_TCK")

    def cpu_s(self) -> float:
        """User + system CPU seconds the JVM has used so far (all its threads)."""
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / self.ticks  # utime, stime: fields 14 and 15 of stat

    def reset(self) -> None:
        with open(f"/proc/{self.pid}/clear_refs", "w") as f:
            f.write("5")

    def peak_mb(self) -> float:
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        raise RuntimeError("no VmHWM in /proc/<pid>/status")


def listing(path: Path) -> dict[str, tuple[int, int]]:
    found: dict[str, tuple[int, int]] = {}
    if path.exists():
        for dirpath, _, files in os.walk(path):
            for name in files:
                st = os.stat(os.path.join(dirpath, name))
                found[os.path.relpath(os.path.join(dirpath, name), path)] = (st.st_size, st.st_mtime_ns)
    return found


def written(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]], log_dir: str | None) -> Json:
    """Files the operation wrote (new or changed), data and log apart; Hadoop's hidden .crc side files apart."""
    out = {"data_bytes": 0, "data_files": 0, "log_bytes": 0, "log_files": 0, "crc_bytes": 0, "crc_files": 0}
    for rel, (size, mtime) in after.items():
        if before.get(rel) == (size, mtime):
            continue
        base = os.path.basename(rel)
        if base.startswith(".") and base.endswith(".crc"):
            kind = "crc"
        elif (log_dir is not None and rel.startswith(log_dir + os.sep)) or base.startswith("_"):
            kind = "log"  # the transaction log (Parquet: the _SUCCESS marker)
        else:
            kind = "data"
        out[f"{kind}_bytes"] += size
        out[f"{kind}_files"] += 1
    return out


class Measured:
    """Times one operation on a table, with the files it wrote and the JVM's peak RSS meanwhile."""

    def __init__(self, memory: Memory, engine: Engine, t: Table) -> None:
        self.memory, self.engine, self.t = memory, engine, t
        self.result: Json = {}

    def __enter__(self) -> Measured:
        self.before = listing(self.t.path)
        self.memory.reset()
        self.cpu = self.memory.cpu_s()
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.result["seconds"] = time.perf_counter() - self.start
        self.result["cpu_s"] = self.memory.cpu_s() - self.cpu
        self.result["peak_rss_mb"] = self.memory.peak_mb()
        self.result["written"] = written(self.before, listing(self.t.path), self.engine.log_dir)
