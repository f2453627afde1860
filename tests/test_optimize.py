"""CALL strata.system.optimize against the reference engines: after Strata compacts or Z-orders a table, delta-spark
4.4.0 (one peer application for the module) and delta-rs read the same rows, and delta-spark can RESTORE and VACUUM
it; Strata optimizes tables delta-spark wrote (deletion vectors included) and reads delta-spark's OPTIMIZE output."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from delta_spark_peer import Peer
from table_reads import delta_rs_tuples, strata_json

PARTS = ["a", None, "x/y=z%", "sp ace"]


def as_tuples(json_rows: list[str], columns: list[str]) -> list[tuple[Any, ...]]:
    return sorted((tuple(json.loads(r).get(c) for c in columns) for r in json_rows), key=repr)


def optimize(spark: SparkSession, path: Path, *args: str) -> dict[str, Any]:
    extra = "".join(", " + a for a in args)
    row = spark.sql(f"CALL strata.system.optimize(table => '{path}'{extra})").collect()[0]
    return row.asDict()


def log_commit(path: Path, version: int) -> dict[str, Any]:
    """The commit's actions by kind: {"commitInfo": {...}, "add": [...], "remove": [...]}."""
    out: dict[str, Any] = {"add": [], "remove": []}
    for line in (path / "_delta_log" / f"{version:020d}.json").read_text().splitlines():
        action = json.loads(line)
        for kind in ("add", "remove"):
            if kind in action:
                out[kind].append(action[kind])
        if "commitInfo" in action:
            out["commitInfo"] = action["commitInfo"]
    return out


def live_files(spark: SparkSession, path: Path) -> int:
    row = spark.sql(f"CALL strata.system.detail(table => '{path}')").collect()[0]
    return int(row["numFiles"])


@pytest.fixture
def small_files(spark: SparkSession, tmp_path: Path) -> Iterator[Path]:
    """A Strata table partitioned by p (NULL and escaped values too) of 4 appends: 4 small files per partition."""
    path = tmp_path / "small"
    for i in range(4):
        rows = [(i * 10 + j, (i * 37 + j * 11) % 50, (i * 13 + j * 7) % 50, f"s{i}-{j}", p) for j, p in enumerate(PARTS)]
        df = spark.createDataFrame(rows, "id int, a int, b int, s string, p string")
        df.write.format("strata").mode("append").partitionBy("p").save(str(path))
    yield path


def test_strata_optimized_tables_read_alike_everywhere(spark: SparkSession, peer: Peer, small_files: Path) -> None:
    path, columns = small_files, ["id", "a", "b", "s", "p"]
    before = strata_json(spark, path)
    result = optimize(spark, path)
    assert (result["files_removed"], result["files_added"], result["partitions_optimized"]) == (16, 4, 4)
    for v in result["versions"]:
        commit = log_commit(path, v)
        assert commit["commitInfo"]["operation"] == "OPTIMIZE"
        assert all(not a["dataChange"] for a in commit["add"] + commit["remove"])
    zresult = optimize(spark, path, "zorder_by => array('a', 'b')", "where => \"p = 'a' OR p IS NULL\"")
    assert zresult["partitions_optimized"] == 2 and zresult["groups_committed"] == 2
    params = log_commit(path, zresult["versions"][0])["commitInfo"]["operationParameters"]
    assert params["zOrderBy"] == '["a","b"]' and params["predicate"] == '["((p = \'a\') OR (p IS NULL))"]'
    assert strata_json(spark, path) == before
    assert peer.read(path) == [before]
    assert delta_rs_tuples(path, columns) == as_tuples(before, columns)


def test_delta_spark_restores_and_vacuums_a_table_strata_optimized(
        spark: SparkSession, peer: Peer, small_files: Path) -> None:
    path = small_files
    before = strata_json(spark, path)
    pre = max(int(f.name[:-5]) for f in (path / "_delta_log").glob("*.json"))
    optimize(spark, path)
    assert live_files(spark, path) == 4
    peer.call("sql", statements=[f"RESTORE TABLE delta.`{path}` TO VERSION AS OF {pre}"])
    assert live_files(spark, path) == 16 and strata_json(spark, path) == before
    again = optimize(spark, path)
    assert again["files_removed"] == 16 and again["groups_conflicted"] == 0
    peer.call("sql", statements=[
        "SET spark.databricks.delta.retentionDurationCheck.enabled = false",
        f"VACUUM delta.`{path}` RETAIN 0 HOURS"])
    data_files = [f for f in path.rglob("*.parquet") if "_delta_log" not in f.parts]
    assert len(data_files) == 4, "VACUUM left exactly the live files"
    assert strata_json(spark, path) == before
    assert peer.read(path) == [before]
    assert delta_rs_tuples(path, ["id", "a", "b", "s", "p"]) == as_tuples(before, ["id", "a", "b", "s", "p"])


def test_strata_optimizes_delta_spark_tables_and_reads_delta_spark_optimize(
        spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    dv, zt = tmp_path / "dv", tmp_path / "zt"
    peer.call("sql", statements=[
        f"CREATE TABLE delta.`{dv}` (id INT, s STRING, p INT) USING delta PARTITIONED BY (p) "
        "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",
        *[f"INSERT INTO delta.`{dv}` SELECT id, concat('s', id), id % 2 FROM range({i * 20}, {i * 20 + 20})"
          for i in range(3)],
        f"DELETE FROM delta.`{dv}` WHERE id % 5 = 0",
        f"CREATE TABLE delta.`{zt}` (id INT, a INT, b INT) USING delta",
        *[f"INSERT INTO delta.`{zt}` SELECT id, (id * 7) % 40, (id * 11) % 40 FROM range({i * 50}, {i * 50 + 50})"
          for i in range(3)],
        f"OPTIMIZE delta.`{zt}` ZORDER BY (a, b)"])
    # delta-spark's DELETE marked rows with deletion vectors; Strata's compaction drops them.
    dv_rows = peer.read(dv)[0]
    assert len(dv_rows) == 48
    result = optimize(spark, dv)
    assert result["partitions_optimized"] == 2 and result["groups_conflicted"] == 0
    latest = log_commit(dv, result["versions"][-1])
    assert latest["add"] and all(a.get("deletionVector") is None for a in latest["add"])
    assert strata_json(spark, dv) == dv_rows and peer.read(dv) == [dv_rows]
    assert delta_rs_tuples(dv, ["id", "s", "p"]) == as_tuples(dv_rows, ["id", "s", "p"])
    # delta-spark's Z-order output reads the same in Strata; its commitInfo has the parameters Strata writes.
    z_version = max(int(f.name[:-5]) for f in (zt / "_delta_log").glob("*.json"))
    theirs = log_commit(zt, z_version)["commitInfo"]
    assert theirs["operation"] == "OPTIMIZE"
    assert strata_json(spark, zt) == peer.read(zt)[0]
    ours = log_commit(zt, optimize(spark, zt, "zorder_by => array('a', 'b')")["versions"][0])["commitInfo"]
    assert set(theirs["operationParameters"]) == set(ours["operationParameters"])
    assert ours["operationParameters"]["zOrderBy"] == theirs["operationParameters"]["zOrderBy"]
    assert set(theirs["operationMetrics"]) >= {"numAddedFiles", "numRemovedFiles", "numAddedBytes", "numRemovedBytes"}
    assert set(ours["operationMetrics"]) <= set(theirs["operationMetrics"]) | {"numDeletionVectorsRemoved"}
    assert strata_json(spark, zt) == peer.read(zt)[0]
