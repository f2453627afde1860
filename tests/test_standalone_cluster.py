"""Strata on a real Spark standalone cluster: a master and two workers started from the pyspark package itself.

Each worker offers one core, so an application gets two executors in separate JVMs; the Strata jar reaches them
through `spark.jars` (strata.configure_spark). Drivers run in their own processes (tests/cluster_app.py), since
this pytest process already holds a local SparkContext. The cluster's logs and work directories live under pytest's
tmp dir and are printed when the cluster does not come up or a driver fails.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyspark
import pytest
import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder

import strata

APP = Path(__file__).with_name("cluster_app.py")
SPARK_HOME = Path(pyspark.__file__).resolve().parent
READY_TIMEOUT = 90.0
DRIVER_TIMEOUT = 300


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError as e:
        return f"<{e}>"


@dataclass
class Cluster:
    master_url: str
    webui: str
    root: Path
    env: dict[str, str]
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def state(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.webui + "/json/", timeout=5) as resp:
            return dict(json.load(resp))

    def logs(self) -> str:
        """The daemons' logs and the executors' stderr, for failure messages."""
        parts = [f"--- {p.relative_to(self.root)}\n{tail(p)}" for p in sorted(self.root.glob("logs/*.log"))]
        parts += [f"--- {p.relative_to(self.root)}\n{tail(p, 2000)}" for p in sorted(self.root.glob("work*/*/*/stderr"))]
        return "\n".join(parts)

    def run_driver(self, tmp: Path, scenario: str, conf: dict[str, str] | None = None,
                   **paths: str) -> dict[str, Any]:
        """Runs tests/cluster_app.py against this cluster in its own process; its RESULT."""
        markers = tmp / "markers"
        markers.mkdir(exist_ok=True)
        settings = {
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.driver.memory": "512m",
            "spark.executor.memory": "512m",
            "spark.executor.cores": "1",
            "spark.cores.max": "2",
            "spark.task.maxFailures": "3",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.session.timeZone": "UTC",
            "spark.sql.shuffle.partitions": "4",
            "spark.sql.execution.arrow.maxRecordsPerBatch": "2000",
            "spark.sql.warehouse.dir": str(tmp / "spark-warehouse"),
            "spark.driver.extraJavaOptions": f"-Dderby.system.home={tmp}",
            **(conf or {}),
        }
        cfg = {"master": self.master_url, "scenario": scenario, "markers": str(markers),
               "warehouse": str(tmp / "warehouse"), "conf": settings, **paths}
        # Its own process group: on a timeout the driver's JVM goes with it.
        proc = subprocess.Popen([sys.executable, str(APP), json.dumps(cfg)], cwd=tmp, env=self.env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=DRIVER_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
            pytest.fail(f"driver {scenario} timed out after {DRIVER_TIMEOUT}s\n{stderr[-6000:]}\n{self.logs()}")
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # nothing of the driver may outlive it
            except ProcessLookupError:
                pass
        lines = [ln for ln in stdout.splitlines() if ln.startswith("RESULT ")]
        assert proc.returncode == 0 and len(lines) == 1, (
            f"driver {scenario} exited {proc.returncode}\n{stderr[-6000:]}\n{self.logs()}")
        return dict(json.loads(lines[0][len("RESULT "):]))


def daemon(cluster: Cluster, name: str, cls: str, *args: str) -> None:
    log = (cluster.root / "logs" / f"{name}.log").open("wb")
    # spark-class execs the JVM, so the pid is the daemon's; its own session so that executor JVMs and their Python
    # workers (children of the worker) can be killed with it.
    proc = subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), cls, *args], env=cluster.env,
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    log.close()
    cluster.procs.append(proc)


def stop(cluster: Cluster) -> None:
    """Workers first (they stop their executors), then the master; whatever is left of a group is killed."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for proc in reversed(cluster.procs):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 20
        for proc in cluster.procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
    for proc in cluster.procs:  # the groups' other members (executors, Python workers) must be gone too
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("standalone")
    (root / "logs").mkdir()
    (root / "conf").mkdir()  # an empty SPARK_CONF_DIR: no spark-defaults or log4j settings from elsewhere
    bin_dir = str(Path(sys.executable).parent)
    env = dict(os.environ, SPARK_HOME=str(SPARK_HOME), SPARK_CONF_DIR=str(root / "conf"),
               SPARK_LOCAL_IP="127.0.0.1", SPARK_LOG_DIR=str(root / "logs"), SPARK_DAEMON_MEMORY="256m",
               SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable, TZ="UTC",
               PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    port, webui_port = free_port(), free_port()
    cluster = Cluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{webui_port}", root, env)
    try:
        daemon(cluster, "master", "org.apache.spark.deploy.master.Master",
               "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(webui_port))
        for i in (1, 2):
            work = root / f"work{i}"
            work.mkdir()
            daemon(cluster, f"worker{i}", "org.apache.spark.deploy.worker.Worker",
                   "--host", "127.0.0.1", "--webui-port", str(free_port()), "--cores", "1", "--memory", "1g",
                   "--work-dir", str(work), cluster.master_url)
        deadline = time.monotonic() + READY_TIMEOUT
        alive = 0
        while alive < 2:
            dead = [p.args for p in cluster.procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                pytest.fail(f"standalone cluster not ready ({alive} ALIVE workers, exited: {dead})\n{cluster.logs()}")
            try:
                alive = sum(1 for w in cluster.state().get("workers", []) if w.get("state") == "ALIVE")
            except OSError:
                alive = 0
            if alive < 2:
                time.sleep(0.25)
        yield cluster
    finally:
        stop(cluster)


def disk_files(table: Path) -> set[str]:
    """Data files under the table (outside _delta_log), relative; checksum files only beside their data file."""
    files = {str(p.relative_to(table)) for p in table.rglob("*") if p.is_file() and "_delta_log" not in p.parts}
    crc = {f for f in files if f.endswith(".crc")}
    data = files - crc
    for c in crc:
        parent, name = os.path.split(c)
        assert os.path.join(parent, name[1:-len(".crc")]) in data, f"checksum without its data file: {c}"
    return data


def live_files(table: Path) -> set[str]:
    """The files the table's latest version references, relative to the table (delta-rs reads the log)."""
    uris = DeltaTable(str(table)).file_uris()
    return {str(Path(u.removeprefix("file://")).relative_to(table)) for u in uris}


def delta_rs_rows(table: Path) -> list[list[Any]]:
    # delta-rs's DataFusion reader (its pyarrow one refuses tables with deletion vectors).
    result = QueryBuilder().register("t", DeltaTable(str(table))).execute("SELECT id, p FROM t").read_all()
    return sorted([r["id"], r["p"]] for r in pa.table(result).to_pylist())


def expected(start: int, end: int) -> list[list[Any]]:
    return [[i, str(i % 5)] for i in range(start, end)]


def task_markers(markers: Path, tag: str) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(markers.glob(f"{tag}-*.json"))]


def test_v1_and_v2_writes_on_two_executors(cluster: Cluster, tmp_path: Path) -> None:
    v1 = tmp_path / "v1"
    result = cluster.run_driver(tmp_path, "writes", v1_table=str(v1))
    v2 = Path(result["v2_location"].removeprefix("file:"))

    assert result["v1_rows"] == expected(0, 6000)
    assert delta_rs_rows(v1) == expected(0, 6000)
    assert DeltaTable(str(v1)).version() == 1
    assert result["v2_rows"] == expected(0, 5000)
    assert delta_rs_rows(v2) == expected(0, 5000)
    assert DeltaTable(str(v2)).version() == 2  # CREATE TABLE 0, INSERT 1, append 2
    for table in (v1, v2):
        assert disk_files(table) == live_files(table)
    # DML on the cluster, against the same statements applied in Python.
    want = {i: str(i % 5) for i in range(3000) if i % 7 != 0}
    want.update({i: "u" for i in want if i < 100})
    want.update({i: "m" if i in want else str(i % 5) for i in range(2900, 3100)})
    for i in [i for i in want if 2800 <= i < 2900]:
        del want[i]
    dml = Path(result["dml_location"].removeprefix("file:"))
    assert result["dml_rows"] == sorted([i, p] for i, p in want.items())
    assert delta_rs_rows(dml) == result["dml_rows"]
    assert live_files(dml) <= disk_files(dml)
    # The same statements merge-on-read: same rows, deletion vectors in the log, delta-rs reads them alike.
    dv = Path(result["dv_location"].removeprefix("file:"))
    assert result["dv_rows"] == result["dml_rows"]
    assert delta_rs_rows(dv) == result["dv_rows"]
    assert any("deletionVector" in line for f in (dv / "_delta_log").glob("*.json") for line in f.read_text().splitlines()
               if line.startswith('{"add"'))
    # Every write's tasks ran in both executor JVMs (and only there: not in the driver).
    for tag in ("v1save", "v1append", "v2append"):
        tasks = task_markers(tmp_path / "markers", tag)
        assert sorted(t["partition"] for t in tasks) == list(range(8)), tag
        assert len({t["pid"] for t in tasks}) == 2, f"{tag}: tasks ran in {tasks}"
        assert all(t["pid"] != os.getpid() for t in tasks)


def test_executor_killed_during_write_is_retried(cluster: Cluster, tmp_path: Path) -> None:
    """The first attempt of one task kills its executor JVM (SIGKILL) while it has a data file open in the table,
    in a V1 save and in a V2 append: Spark reruns the task, the write commits every row once, and the file the dead
    attempt left behind is deleted."""
    v1 = tmp_path / "v1"
    result = cluster.run_driver(tmp_path, "kill", v1_table=str(v1))
    v2 = Path(result["v2_location"])

    assert result["counts"] == {"v1": [160_000, 160_000], "v2": [160_000, 160_000]}
    for api, table, version in (("v1", v1, 0), ("v2", v2, 1)):
        killed = json.loads((tmp_path / "markers" / f"killed-{api}.json").read_text())
        assert killed["files"], f"{api}: the killed attempt had no file open"
        assert not Path(f"/proc/{killed['pid']}").exists(), f"{api}: the executor JVM is still running"
        dt = DeltaTable(str(table))
        assert dt.version() == version
        ids = sorted(r["id"] for r in dt.to_pyarrow_table(columns=["id"]).to_pylist())
        assert ids == list(range(160_000)), api
        for f in killed["files"]:
            assert not Path(f).exists(), f"{api}: the killed attempt's file {f} is still there"
        assert disk_files(table) == live_files(table), api


def test_failed_job_leaves_table_and_no_files(cluster: Cluster, tmp_path: Path) -> None:
    """A job whose task fails on every attempt: the V1 and the V2 append fail, the tables stay at their last
    version with their rows, and no file of the failed jobs remains."""
    v1 = tmp_path / "v1"
    result = cluster.run_driver(tmp_path, "fail", v1_table=str(v1))
    v2 = Path(result["v2_location"].removeprefix("file:"))

    for api in ("v1", "v2"):
        assert "injected failure in partition 2" in result["errors"].get(api, ""), result["errors"]
    assert result["v1_rows"] == expected(0, 1000)
    assert result["v2_rows"] == expected(0, 1000)
    for table, version in ((v1, 0), (v2, 1)):
        assert DeltaTable(str(table)).version() == version
        assert delta_rs_rows(table) == expected(0, 1000)
        assert disk_files(table) == live_files(table)
