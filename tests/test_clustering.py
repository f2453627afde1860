"""Liquid clustering (issue 24) against delta-spark 4.4.0 (the `peer`) and delta-rs: tables delta-spark creates
with CLUSTER BY and changes are read by Strata identically, and Strata inserts into and OPTIMIZEs them (only the
files not yet clustered); tables Strata clusters (CREATE ... CLUSTER BY in both catalogs, writeTo().clusterBy(),
ALTER TABLE ... CLUSTER BY) are continued by delta-spark: inserts, OPTIMIZE, DESCRIBE DETAIL's clusteringColumns.
The deterministic races are in jvm/spark/src/test/scala/io/strata/catalog/ClusteringSuite.scala."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import strata

from delta_spark_peer import Peer
from table_reads import delta_rs_tuples, strata_json

COLUMNS = ["id", "k", "v"]


def rows_sql(table: str, start: int, end: int) -> str:
    return (f"INSERT INTO {table} SELECT id, concat('k', id % 5), CAST(id * 3 AS INT) "
            f"FROM range({start}, {end})")


def log_state(path: Path) -> tuple[dict[str, dict[str, Any]], list[list[str]] | None]:
    """The live add actions by path and the clustering columns of the `delta.clustering` domain, replayed from
    the JSON commits (these tables stay below a checkpoint)."""
    adds: dict[str, dict[str, Any]] = {}
    columns: list[list[str]] | None = None
    for commit in sorted((path / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                adds[action["add"]["path"]] = action["add"]
            elif "remove" in action:
                adds.pop(action["remove"]["path"], None)
            elif "domainMetadata" in action and action["domainMetadata"]["domain"] == "delta.clustering":
                d = action["domainMetadata"]
                columns = None if d["removed"] else json.loads(d["configuration"])["clusteringColumns"]
    return adds, columns


def unclustered(path: Path) -> int:
    return sum(1 for a in log_state(path)[0].values() if a.get("clusteringProvider") != "liquid")


def detail(peer: Peer, path: Path) -> dict[str, Any]:
    row: dict[str, Any] = json.loads(peer.call("query", sql=f"DESCRIBE DETAIL delta.`{path}`")["rows"][0])
    return row


def optimize(spark: SparkSession, path: Path, full: bool = False) -> dict[str, Any]:
    result: dict[str, Any] = spark.sql(
        f"CALL strata.system.optimize(table => '{path}', full => {str(full).lower()})").collect()[0].asDict()
    return result


def cube_tags(path: Path, tag: str) -> set[str | None]:
    return {a.get("tags", {}).get(tag) for a in log_state(path)[0].values()}


def same_everywhere(spark: SparkSession, peer: Peer, path: Path) -> list[str]:
    ours = strata_json(spark, path)
    assert peer.read(path) == [ours]
    assert delta_rs_tuples(path, COLUMNS) == sorted(
        (tuple(json.loads(r)[c] for c in COLUMNS) for r in ours), key=repr)
    return ours


def test_delta_spark_clustered_table_read_written_and_optimized_by_strata(
        spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    path = tmp_path / "theirs"
    d = f"delta.`{path}`"
    peer.call("sql", statements=[
        f"CREATE TABLE {d} (id BIGINT, k STRING, v INT) USING delta CLUSTER BY (id)",
        rows_sql(d, 0, 100), rows_sql(d, 100, 200), f"OPTIMIZE {d}",
        f"ALTER TABLE {d} CLUSTER BY (k, id)", rows_sql(d, 200, 250)])
    assert log_state(path)[1] == [["k"], ["id"]]
    same_everywhere(spark, peer, path)
    s = f"strata.`{path}`"
    info = spark.sql(f"DESCRIBE TABLE {s}").collect()
    names = [r[0] for r in info]
    assert "# Clustering Information" in names
    assert [r[0] for r in info[names.index("# Clustering Information") + 2:]] == ["k", "id"]

    spark.sql(rows_sql(s, 250, 300))
    pending = unclustered(path)
    old = {p for p, a in log_state(path)[0].items() if a.get("tags", {}).get("ZCUBE_ZORDER_BY") == '["id"]'}
    assert pending >= 2 and old  # delta-spark's insert after the change and Strata's; its cube by (id)
    result = optimize(spark, path)
    # As delta-spark's: the cube by (id), no longer the table's columns, is left to OPTIMIZE FULL.
    assert result["files_removed"] == pending and result["groups_conflicted"] == 0 and old <= set(log_state(path)[0])
    assert cube_tags(path, "ZCUBE_ZORDER_CURVE") == {None, "hilbert"}  # delta-spark tags no curve
    before = set(log_state(path)[0])
    # delta-spark's statement through Strata's session extension: the (id) cube and the small (k, id) cube just made
    full = spark.sql(f"OPTIMIZE {s} FULL").collect()[0].asDict()
    assert full["files_removed"] == len(before) and full["groups_conflicted"] == 0
    after, _ = log_state(path)
    assert all(a.get("clusteringProvider") == "liquid" and a["tags"]["ZCUBE_ZORDER_BY"] == '["k","id"]'
               and a["tags"]["ZCUBE_ZORDER_CURVE"] == "hilbert" for a in after.values())
    commit = last_commit(path)[0]["commitInfo"]
    assert commit["operation"] == "OPTIMIZE" and commit["operationParameters"]["clusterBy"] == '["k","id"]'
    ours = same_everywhere(spark, peer, path)
    assert len(ours) == 300 and optimize(spark, path)["files_removed"] == 0  # nothing left to cluster

    # delta-spark's OPTIMIZE FULL: reclusters its new files with Strata's small cube; the same rows everywhere.
    peer.call("sql", statements=[rows_sql(d, 300, 320), f"OPTIMIZE {d} FULL"])
    theirs = last_commit(path)[0]["commitInfo"]
    # both write the flags as JSON booleans
    assert theirs["operationParameters"]["isFull"] is True and commit["operationParameters"]["isFull"] is True
    assert theirs["operationParameters"]["auto"] is False and commit["operationParameters"]["auto"] is False
    assert {a["remove"]["path"] for a in last_commit(path) if "remove" in a} >= set(after)
    assert detail(peer, path)["clusteringColumns"] == ["k", "id"] and unclustered(path) == 0
    assert len(same_everywhere(spark, peer, path)) == 320


def test_strata_clustered_tables_continued_by_delta_spark(
        spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    # The strata catalog (a path table) with CREATE ... CLUSTER BY, then ALTER TABLE ... CLUSTER BY.
    path = tmp_path / "ours"
    s = f"strata.`{path}`"
    spark.sql(f"CREATE TABLE {s} (id BIGINT, k STRING, v INT) USING strata CLUSTER BY (id)")
    spark.sql(rows_sql(s, 0, 100))
    spark.sql(rows_sql(s, 100, 200))
    assert log_state(path)[1] == [["id"]]
    assert optimize(spark, path)["files_added"] == 1 and unclustered(path) == 0
    spark.sql(f"ALTER TABLE {s} CLUSTER BY (v, k)")
    assert strata.Table.for_path(spark, str(path)).detail().clustering_columns == ("v", "k")
    d = f"delta.`{path}`"
    peer.call("sql", statements=[rows_sql(d, 200, 260), f"OPTIMIZE {d}"])
    assert detail(peer, path)["clusteringColumns"] == ["v", "k"] and unclustered(path) == 0
    assert len(same_everywhere(spark, peer, path)) == 260
    # delta-spark's OPTIMIZE left Strata's cube by (id) alone (other columns: only its OPTIMIZE FULL takes them);
    # so does Strata's (one small cube of the current columns: nothing to do); FULL (Python's full=True) takes both.
    files = log_state(path)[0]
    assert {a["tags"]["ZCUBE_ZORDER_BY"] for a in files.values()} == {'["id"]', '["v","k"]'}
    assert optimize(spark, path)["files_removed"] == 0
    assert strata.Table.for_path(spark, str(path)).optimize(full=True).files_removed == len(files)
    assert cube_tags(path, "ZCUBE_ZORDER_BY") == {'["v","k"]'} and cube_tags(path, "ZCUBE_ZORDER_CURVE") == {"hilbert"}
    assert optimize(spark, path)["files_removed"] == 0 and len(same_everywhere(spark, peer, path)) == 260

    # The session catalog: CREATE ... CLUSTER BY, then CLUSTER BY NONE; writeTo().clusterBy() on the strata catalog.
    spark.sql("DROP TABLE IF EXISTS default.clustered_events")
    spark.sql("CREATE TABLE default.clustered_events (id BIGINT, k STRING, v INT) USING strata CLUSTER BY (k)")
    rows = spark.sql("DESCRIBE TABLE EXTENDED default.clustered_events").collect()
    location = Path([r[1] for r in rows if r[0] == "Location"][0].removeprefix("file:"))
    assert log_state(location)[1] == [["k"]]
    spark.sql(rows_sql("default.clustered_events", 0, 30))
    assert detail(peer, location)["clusteringColumns"] == ["k"]
    spark.sql("ALTER TABLE default.clustered_events CLUSTER BY NONE")
    assert log_state(location)[1] == [] and detail(peer, location)["clusteringColumns"] == []
    spark.sql("DROP TABLE default.clustered_events")

    written = tmp_path / "written"
    spark.range(40).selectExpr("id", "concat('k', id % 5) AS k", "CAST(id * 3 AS INT) AS v") \
        .writeTo(f"strata.`{written}`").clusterBy("k", "id").create()
    assert log_state(written)[1] == [["k"], ["id"]]
    assert detail(peer, written)["clusteringColumns"] == ["k", "id"]
    assert len(same_everywhere(spark, peer, written)) == 40
    # Column mapping and a nested column: the domain names the physical path, delta-spark shows the logical one.
    mapped = tmp_path / "mapped"
    spark.sql(f"CREATE TABLE strata.`{mapped}` (id BIGINT, s STRUCT<k: STRING>) USING strata CLUSTER BY (s.k) "
              "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    [[outer, inner]] = log_state(mapped)[1] or [["", ""]]
    assert outer.startswith("col-") and inner.startswith("col-")
    assert detail(peer, mapped)["clusteringColumns"] == ["s.k"]
    # Strata's cube by s.k is one of the current columns for delta-spark too: its OPTIMIZE (every cube stable)
    # leaves it and clusters its own new file only.
    spark.sql(f"INSERT INTO strata.`{mapped}` SELECT id, named_struct('k', concat('k', id % 5)) FROM range(0, 50)")
    assert optimize(spark, mapped)["files_added"] == 1
    [ours] = log_state(mapped)[0].values()
    assert ours["tags"]["ZCUBE_ZORDER_BY"] == '["s.k"]'
    m = f"delta.`{mapped}`"
    threshold = "spark.databricks.delta.optimize.clustering.mergeStrategy.minCubeSize.threshold"
    peer.call("sql", statements=[f"INSERT INTO {m} SELECT id, named_struct('k', 'x') FROM range(50, 60)",
                                 f"SET {threshold}=1", f"OPTIMIZE {m}", f"RESET {threshold}"])
    after = log_state(mapped)[0]
    assert ours["path"] in after and len(after) == 2 and unclustered(mapped) == 0
    # ALTER TABLE ... CLUSTER BY on an unclustered table upgrades its protocol; delta-spark sees the columns.
    plain = tmp_path / "plain"
    spark.sql(f"CREATE TABLE strata.`{plain}` (id BIGINT, k STRING) USING strata")
    spark.sql(f"ALTER TABLE strata.`{plain}` CLUSTER BY (id)")
    assert detail(peer, plain)["clusteringColumns"] == ["id"]
    assert {"clustering", "domainMetadata"} <= set(detail(peer, plain)["tableFeatures"])
    # DataFrameWriter.clusterBy on a path write is refused by name (the catalog defines clustering).
    with pytest.raises(Exception, match="clusterBy"):
        spark.range(3).write.format("strata").clusterBy("id").save(str(tmp_path / "path_write"))
    assert not (tmp_path / "path_write" / "_delta_log").exists()


def last_commit(path: Path) -> list[dict[str, Any]]:
    latest = max(int(f.stem) for f in (path / "_delta_log").glob("*.json"))
    return [json.loads(line) for line in (path / "_delta_log" / f"{latest:020d}.json").read_text().splitlines()]


def test_zcubes_shared_with_delta_spark(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    """delta-spark's incremental clustering and Strata's agree on ZCubes: each leaves the other's stable cubes and
    reclusters only the new files (Strata's along the Hilbert curve, as delta-spark's); with the default min cube size
    (100g) both merge small cubes."""
    path = tmp_path / "cubes"
    d, s = f"delta.`{path}`", f"strata.`{path}`"
    peer.call("sql", statements=[f"CREATE TABLE {d} (id BIGINT, k STRING, v INT) USING delta CLUSTER BY (id, k)",
                                 rows_sql(d, 0, 100), rows_sql(d, 100, 200), f"OPTIMIZE {d}"])
    theirs = log_state(path)[0]
    [cube] = {a["tags"]["ZCUBE_ID"] for a in theirs.values()}
    assert all(a["clusteringProvider"] == "liquid" and a["tags"]["ZCUBE_ZORDER_BY"] == '["id","k"]'
               for a in theirs.values())
    # An append over the whole range; every cube stable: Strata's OPTIMIZE rewrites the new files only.
    spark.sql(rows_sql(s, 0, 200))
    new = set(log_state(path)[0]) - set(theirs)
    spark.conf.set("spark.strata.optimize.clustering.minCubeSize", "1")
    try:
        assert optimize(spark, path)["files_removed"] == len(new)
        assert optimize(spark, path, full=True)["files_removed"] == 0  # FULL too: both cubes stable, same columns
    finally:
        spark.conf.unset("spark.strata.optimize.clustering.minCubeSize")
    assert {a["remove"]["path"] for a in last_commit(path) if "remove" in a} == new
    ours = {p: a for p, a in log_state(path)[0].items() if p not in theirs}
    assert set(theirs) <= set(log_state(path)[0]) and len({a["tags"]["ZCUBE_ID"] for a in ours.values()}) == 1
    assert all(a["tags"]["ZCUBE_ZORDER_BY"] == '["id","k"]' and a["tags"]["ZCUBE_ZORDER_CURVE"] == "hilbert"
               for a in ours.values())
    assert len(same_everywhere(spark, peer, path)) == 400
    # The same from delta-spark's side: its OPTIMIZE with every cube stable leaves both cubes.
    threshold = "spark.databricks.delta.optimize.clustering.mergeStrategy.minCubeSize.threshold"
    peer.call("sql", statements=[rows_sql(d, 0, 200), f"SET {threshold}=1", f"OPTIMIZE {d}", f"RESET {threshold}"])
    removed = {a["remove"]["path"] for a in last_commit(path) if "remove" in a}
    assert removed and not removed & (set(theirs) | set(ours))
    assert len(same_everywhere(spark, peer, path)) == 600
    # Default sizes: three small cubes, nothing new; Strata merges them into one, as delta-spark would.
    files = log_state(path)[0]
    assert len({a["tags"]["ZCUBE_ID"] for a in files.values()}) == 3 and cube in {a["tags"]["ZCUBE_ID"] for a in
                                                                                  files.values()}
    assert optimize(spark, path)["files_removed"] == len(files)
    merged = log_state(path)[0]
    assert len({a["tags"]["ZCUBE_ID"] for a in merged.values()}) == 1
    peer.call("sql", statements=[f"OPTIMIZE {d}"])  # one cube, nothing new: delta-spark leaves it too
    assert set(log_state(path)[0]) == set(merged) and len(same_everywhere(spark, peer, path)) == 600
