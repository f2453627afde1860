"""restore, checkpoint and cleanup_log against the reference engines: after each procedure the delta-spark 4.4.0 peer
(one application for the module, tests/delta_spark_peer.py) and delta-rs read the same rows as Strata at every version
still in the log; delta-spark RESTOREs tables Strata wrote and restored, and Strata restores tables delta-spark wrote.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession

import strata
from delta_spark_peer import Peer
from table_reads import delta_rs_tuples, log_version, strata_json, strata_tuples


COLUMNS = ["id", "v"]


def strata_rows(spark: SparkSession, path: Path, version: int | None = None) -> list[str]:
    return strata_json(spark, path, version, COLUMNS)


def delta_rs_rows(path: Path) -> list[tuple[Any, ...]]:
    return delta_rs_tuples(path, COLUMNS)


def call(spark: SparkSession, sql: str) -> dict[str, Any]:
    return spark.sql(sql).collect()[0].asDict()


def assert_same_everywhere(spark: SparkSession, peer: Peer, path: Path, versions: list[int]) -> None:
    """delta-spark reads every version in `versions` as Strata does; delta-rs reads the latest alike."""
    mine = [strata_rows(spark, path, v) for v in versions]
    assert peer.read(path, versions=versions) == mine
    assert DeltaTable(str(path)).version() == versions[-1] == log_version(path)
    assert delta_rs_rows(path) == strata_tuples(spark, path, COLUMNS)


def test_strata_restore_read_alike_and_delta_spark_restores_it(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = f"strata.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING) USING strata TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'c')")  # v1
    spark.sql(f"DELETE FROM {t} WHERE id = 2")  # v2: a deletion vector
    spark.sql(f"INSERT OVERWRITE {t} VALUES (9, 'z')")  # v3
    r = call(spark, f"CALL strata.system.restore(table => '{path}', version => 2)")
    assert (r["version"], r["restored_version"], r["files_removed"]) == (4, 2, 1) and r["files_added"] >= 1
    assert strata_rows(spark, path) == strata_rows(spark, path, 2)
    assert_same_everywhere(spark, peer, path, [2, 4])
    # delta-spark restores the table Strata restored; Strata reads the result as delta-spark does
    peer.call("sql", statements=[f"RESTORE TABLE delta.`{path}` TO VERSION AS OF 1"])
    assert strata_rows(spark, path) == strata_rows(spark, path, 1)
    assert_same_everywhere(spark, peer, path, [5])
    history = spark.sql(f"CALL strata.system.history('{path}')").collect()
    assert [(h.operation, h.operationParameters.get("version")) for h in history[:2]] == [("RESTORE", "1"),
                                                                                          ("RESTORE", "2")]
    assert history[1].operationMetrics["numRestoredFiles"] == str(r["files_added"])


def test_strata_restores_what_delta_spark_wrote(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    path = tmp_path / "d"
    t = f"delta.`{path}`"
    peer.call("sql", statements=[
        f"CREATE TABLE {t} (id BIGINT, v STRING) USING delta TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",
        f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'c')",  # v1
        f"DELETE FROM {t} WHERE id = 1",  # v2: a deletion vector
        f"UPDATE {t} SET v = 'x' WHERE id = 3",  # v3: another vector, a new file
        f"ALTER TABLE {t} ADD COLUMNS (w INT)",  # v4
    ])
    r = strata.Table.for_path(spark, str(path)).restore(version=2)  # the Python API: the same CALL
    assert (r.version, r.restored_version) == (5, 2)
    assert spark.read.format("strata").load(str(path)).columns == COLUMNS  # the schema of version 2
    assert_same_everywhere(spark, peer, path, [2, 5])
    assert strata_rows(spark, path) == strata_rows(spark, path, 2) == ['{"id":2,"v":"b"}', '{"id":3,"v":"c"}']


def test_delta_spark_reads_after_checkpoint_and_cleanup_log(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    path = tmp_path / "c"
    t = f"strata.`{path}`"
    # (delta-spark time travels only within delta.deletedFileRetentionDuration of the commit times)
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING) USING strata TBLPROPERTIES ('delta.checkpointInterval' = '3', "
              "'delta.deletedFileRetentionDuration' = 'interval 365 days')")
    for i in range(1, 6):
        spark.sql(f"INSERT INTO {t} VALUES ({i}, 'v{i}')")  # v1..v5; checkpoint at 3
    c = call(spark, f"CALL strata.system.checkpoint('{path}')")
    assert c["version"] == 5 and Path(c["checkpoint_file"].removeprefix("file:")).exists()
    # versions 0..4 committed 40 days ago (commit times are the files' modification times), 5 now
    old = time.time() - 40 * 86400
    for v in range(5):
        os.utime(path / "_delta_log" / f"{v:020d}.json", (old + v, old + v))
    r = strata.Table.for_path(spark, str(path)).cleanup_log()
    assert r == strata.LogCleanupResult(commits_deleted=3, checkpoints_deleted=0, oldest_version=3)
    assert sorted(f.name for f in (path / "_delta_log").glob("*.json"))[0] == f"{3:020d}.json"
    assert_same_everywhere(spark, peer, path, [3, 5])
    peer.send("read", path=str(path), versions=[2])
    assert "error" in peer.receive()  # delta-spark cannot rebuild a cleaned-up version either
    # delta-spark writes on top: version 6 is a checkpoint, after which delta-spark cleans the log up itself (its rule
    # deletes everything before checkpoint 5, since commit 4 is expired); then it restores to a retained version
    peer.call("sql", statements=[f"INSERT INTO delta.`{path}` VALUES (6, 'v6')",
                                 f"RESTORE TABLE delta.`{path}` TO VERSION AS OF 5"])
    assert strata_rows(spark, path) == strata_rows(spark, path, 5)
    assert_same_everywhere(spark, peer, path, [7])
    with pytest.raises(Exception, match="Version 3 of .* is no longer available"):
        strata_rows(spark, path, 3)
    assert call(spark, f"CALL strata.system.cleanup_log('{path}')")["oldest_version"] == 5


def _gate(spark: SparkSession, name: str) -> tuple[Any, int]:
    """A SQL function `name` (always TRUE) whose first call, in a Spark task, tells the test it is running and then
    waits until the test says go: the statement using it has read the table and not yet committed. A local socket
    carries both messages (blocking reads, no sleeps); a marker file makes later calls and task retries pass."""
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(600)
    port = server.getsockname()[1]
    marker = f"/tmp/strata-gate-{os.getpid()}-{port}"

    def gate(_: Any) -> bool:
        import os as _os
        import socket as _socket

        try:
            _os.close(_os.open(marker, _os.O_CREAT | _os.O_EXCL))
        except FileExistsError:
            return True
        with _socket.create_connection(("127.0.0.1", port), timeout=600) as s:
            s.sendall(b"ready")
            s.recv(2)  # "go"
        return True

    spark.udf.register(name, gate, "boolean")
    return server, port


def _race(spark: SparkSession, statement: str, gate_name: str, rival: Any) -> BaseException | None:
    """Runs `statement` (which calls the gate) on a thread; when the gate fires, runs `rival`, then lets it commit.
    Returns the statement's error, or None."""
    import threading

    server, _ = _gate(spark, gate_name)
    outcome: dict[str, BaseException] = {}

    def run() -> None:
        try:
            with strata.errors.translate():
                spark.sql(statement).collect()
        except BaseException as e:  # noqa: BLE001 (handed to the test)
            outcome["error"] = e

    thread = threading.Thread(target=run)
    thread.start()
    conn, _ = server.accept()
    with conn:
        assert conn.recv(5) == b"ready"
        rival()
        conn.sendall(b"go")
    thread.join(600)
    server.close()
    assert not thread.is_alive()
    return outcome.get("error")


@pytest.mark.parametrize("statement", ["DELETE", "UPDATE", "MERGE"])
def test_dv_change_racing_a_delta_spark_restore(spark: SparkSession, peer: Peer, tmp_path: Path, statement: str) -> None:
    """Issue 30, defect 1: delta-spark RESTOREs the table (the file comes back with the smaller vector {10}, row 1
    visible again) between a Strata statement's read and its commit. Committing on top would keep row 1 and not
    row 2, which no serial order gives: Strata must raise a typed conflict and lose nothing. Then every engine reads
    the restored table alike, and the statement run again gives the serial result."""
    path = tmp_path / "t"
    t = f"strata.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING) USING strata "
              "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    spark.range(0, 20, 1, 1).selectExpr("id", "concat('v', id) AS v").write.format("strata").mode("append").save(str(path))
    spark.sql(f"DELETE FROM {t} WHERE id = 10")
    k = log_version(path)
    spark.sql(f"DELETE FROM {t} WHERE id = 1")
    gate = f"strata_gate_{statement.lower()}"
    sql = {
        "DELETE": f"DELETE FROM {t} WHERE id IN (1, 2) AND {gate}(id)",
        "UPDATE": f"UPDATE {t} SET v = 'u' WHERE id IN (1, 2) AND {gate}(id)",
        "MERGE": f"MERGE INTO {t} AS t USING (SELECT id FROM VALUES (1), (2) AS s(id) WHERE {gate}(id)) AS s "
                 "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = 'm'",
    }[statement]
    error = _race(spark, sql, gate,
                  lambda: peer.call("sql", statements=[f"RESTORE TABLE delta.`{path}` TO VERSION AS OF {k}"]))
    assert isinstance(error, strata.errors.ConcurrentModificationError), error
    assert log_version(path) == k + 2  # the restore, nothing after it
    restored = [json.dumps({"id": i, "v": f"v{i}"}, separators=(",", ":")) for i in range(20) if i != 10]
    assert strata_rows(spark, path) == sorted(restored)
    assert_same_everywhere(spark, peer, path, [k, k + 2])
    spark.sql(sql.replace(f" AND {gate}(id)", "").replace(f" WHERE {gate}(id)", ""))
    expected = {"DELETE": None, "UPDATE": "u", "MERGE": "m"}[statement]
    assert [r for r in strata_tuples(spark, path, COLUMNS) if r[0] in (1, 2)] == (
        [] if expected is None else [(1, expected), (2, expected)])
    assert_same_everywhere(spark, peer, path, [k + 3])
