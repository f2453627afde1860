"""The delta-spark 4.4.0 peer as one long-lived application for the run (the `peer` fixture of conftest.py;
tests/peers/delta_spark_job.py `serve`): run SQL there (`peer.call("sql", statements=[...])`, e.g. VACUUM / RESTORE / OPTIMIZE on delta.`path`)
and read a table's rows at versions (`peer.read(path, versions)`), without a JVM start per request."""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from pyspark.sql import SparkSession

from table_reads import strata_json

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT / "build" / "peers"
T = TypeVar("T")
REPLY = "@@delta-spark-peer@@ "  # tests/peers/delta_spark_job.py REPLY


def delta_jars() -> str:
    jars = sorted(str(p) for p in PEERS.glob("delta-*.jar"))
    assert len(jars) == 2, f"delta-spark jars missing in {PEERS}: run `make peer-jars`"
    return ",".join(jars)


class Peer:
    """The delta-spark application: requests go to its stdin, replies come back on stdout (see serve())."""

    def __init__(self, log: Path) -> None:
        self.log = log
        env = dict(os.environ, STRATA_DELTA_JARS=delta_jars())
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "tests" / "peers" / "delta_spark_job.py"), "serve"], env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log.open("w", encoding="utf-8"), text=True)
        self.replies: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(REPLY):
                self.replies.put(line[len(REPLY):])
        self.replies.put(None)

    def send(self, op: str, **fields: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = 900) -> dict[str, Any]:
        try:
            line = self.replies.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"delta-spark peer: no reply in {timeout}s\n{self.stderr_tail()}") from None
        assert line is not None, f"delta-spark peer exited\n{self.stderr_tail()}"
        reply: dict[str, Any] = json.loads(line)
        return reply

    def call(self, op: str, **fields: Any) -> dict[str, Any]:
        """A request that must succeed."""
        self.send(op, **fields)
        reply = self.receive()
        assert "error" not in reply, reply
        return reply

    def beside(self, op: str, work: Callable[[], T], **fields: Any) -> tuple[dict[str, Any], T]:
        """A request that must succeed, run by the peer while `work` runs here: (the reply, what `work` returned).
        The reply is taken even when `work` fails, so that the next request does not receive it."""
        self.send(op, **fields)
        try:
            mine = work()
        finally:
            reply = self.receive()
        assert "error" not in reply, reply
        return reply, mine

    def read(self, path: Path, versions: list[int] | None = None, time_zone: str = "UTC") -> list[list[str]]:
        rows: list[list[str]] = self.call("read", path=str(path), versions=versions, time_zone=time_zone)["rows"]
        return rows

    def input_files(self, path: Path, condition: str) -> list[str]:
        """`inputFiles()` of delta-spark's `load(path).where(condition)`."""
        files: list[str] = self.call("input_files", path=str(path), condition=condition)["files"]
        return files

    def stream(self, source: dict[str, Any], sink: dict[str, Any], checkpoint: Path) -> tuple[list[int], list[str]]:
        """One Trigger.AvailableNow run of a delta-spark stream (serve()'s "stream"): source and sink are
        {"format", "path"[, "schema", "options"]}; returns the input rows of each micro-batch and the sink's rows."""
        reply = self.call("stream", source={**source, "path": str(source["path"])},
                          sink={**sink, "path": str(sink["path"])}, checkpoint=str(checkpoint))
        return reply["batches"], reply["rows"]

    def stderr_tail(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-4000:]

    def stop(self) -> None:
        try:
            self.send("stop")
            self.proc.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


def same_step(spark: SparkSession, peer: Peer, mine: Path, theirs: Path, ours: Callable[[], Any], op: str,
              label: Any = None, **request: Any) -> bool:
    """One step of a test that drives both engines alike: `ours` runs it on Strata's table `mine`, the peer request
    (`op`, `request`) on delta-spark's table `theirs`. Both engines take it or both refuse it, and after it both
    tables hold the same rows and the same schema. Returns whether the step was taken; `label` names it in failures."""
    error = None
    try:
        ours()
    except Exception as e:  # recorded: delta-spark must refuse the same step
        error = str(e).strip().splitlines()[0][:300]
    peer.send(op, **request)
    reply = peer.receive()
    assert (error is None) == ("error" not in reply), (label, error, reply.get("error"))
    exists = (mine / "_delta_log").exists()
    assert (strata_json(spark, mine) if exists else []) == peer.read(theirs)[0], label
    if exists:
        schema = spark.read.format("strata").load(str(mine)).schema.simpleString()
        assert schema == peer.call("query", sql=f"SELECT * FROM delta.`{theirs}` LIMIT 0")["schema"], label
    return error is None


def start_peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Peer]:
    """For the session-scoped ``peer`` fixture of conftest.py."""
    p = Peer(tmp_path_factory.mktemp("delta_spark_peer") / "delta_spark.log")
    yield p
    p.stop()
