"""The benchmark's Spark applications as run.py drives them: each one a subprocess (bench/app.py) in a session and process
group of its own, taking one JSON command a line on stdin and answering one JSON line on a pipe.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, TextIO

BENCH = Path(__file__).resolve().parent
Json = dict[str, Any]


class BenchError(Exception):
    pass


class Timeout(BenchError):
    """An application gave no answer in time (it may still be running)."""


class App:
    """A Spark application in a subprocess (its own session and process group), driven through JSON lines."""

    def __init__(self, label: str, role: str, cfg: Json, log: Path, cwd: Path, script: str = "app.py") -> None:
        self.label = label
        self.log_path = log
        read_fd, write_fd = os.pipe()
        self.log: TextIO = open(log, "a")
        env = dict(os.environ, TZ="UTC", PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [sys.executable, str(BENCH / script), role, json.dumps(dict(cfg, reply_fd=write_fd))],
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
            raise Timeout(f"{self.label}: no answer within {timeout:.0f} s (log: {self.log_path})")
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
