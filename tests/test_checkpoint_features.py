"""Issue 24's checkpoint and maintenance table features against delta-spark 4.4.0 (the `peer`) and delta-rs, as in
tests/test_table_features.py:

- v2Checkpoint: delta-spark's UUID-named checkpoints (Parquet and JSON top level, read with the commits gone) and
  Strata's (`delta.checkpointPolicy = 'v2'`) read by delta-spark alone.
- checkpointProtection (delta-spark's DROP FEATURE) and cleanup_log; vacuumProtocolCheck and VACUUM; typeWidening
  reads of files written before ALTER COLUMN ... TYPE.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import strata
from delta_spark_peer import Peer
from table_reads import commit_actions, delta_rs_tuples, log_versions, strata_history, strata_json, strata_tuples


@pytest.mark.parametrize("top_level", ["parquet", "json"])
def test_v2_checkpoints_from_delta_spark(spark: SparkSession, peer: Peer, tmp_path: Path, top_level: str) -> None:
    path = tmp_path / f"v2_{top_level}"
    d = f"delta.`{path}`"
    peer.call("sql", statements=[
        f"SET spark.databricks.delta.checkpointV2.topLevelFileFormat = {top_level}",
        f"CREATE TABLE {d} (id BIGINT, p STRING) USING delta PARTITIONED BY (p) "
        "TBLPROPERTIES ('delta.checkpointPolicy' = 'v2', 'delta.checkpointInterval' = '2')",
        f"INSERT INTO {d} VALUES (1, 'a'), (2, 'b')",
        f"INSERT INTO {d} VALUES (3, 'a')",
        f"DELETE FROM {d} WHERE id = 1",
        f"INSERT INTO {d} VALUES (4, 'c')",
        "SET spark.databricks.delta.checkpointV2.topLevelFileFormat = parquet",
    ])
    log = path / "_delta_log"
    uuid_named = [f.name for f in log.iterdir() if ".checkpoint." in f.name and f.name.count(".") == 3]
    assert any(n.endswith(f".{top_level}") for n in uuid_named), sorted(f.name for f in log.iterdir())
    assert strata_history(spark, path) == peer.read(path, log_versions(path))
    # Read from the checkpoint alone: the commits it covers moved away (a fresh JVM view of the table).
    latest_rows = peer.read(path)[0]
    newest = max(int(n.split(".")[0]) for n in uuid_named)
    hidden = tmp_path / f"hidden_{top_level}"
    hidden.mkdir()
    for v in range(newest + 1):
        (log / f"{v:020d}.json").rename(hidden / f"{v:020d}.json")
    (log / "_last_checkpoint").unlink(missing_ok=True)
    copy = tmp_path / f"v2_copy_{top_level}"
    import shutil
    shutil.copytree(path, copy)
    assert strata_json(spark, copy) == latest_rows
    for f in hidden.iterdir():
        f.rename(log / f.name)
    # Strata writes on it (classic single-file checkpoints are allowed there); delta-spark and delta-rs agree.
    spark.sql(f"INSERT INTO strata.`{path}` VALUES (5, 'a'), (6, 'd')")
    spark.sql(f"DELETE FROM strata.`{path}` WHERE id = 3")
    assert strata_history(spark, path) == peer.read(path, log_versions(path))
    assert strata_tuples(spark, path, ["id", "p"]) == delta_rs_tuples(path, ["id", "p"])


def test_checkpoint_protection_and_vacuum_protocol_check(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    # delta-spark's DROP FEATURE protects the history before the drop (checkpointProtection).
    path = tmp_path / "protected"
    d = f"delta.`{path}`"
    peer.call("sql", statements=[
        f"CREATE TABLE {d} (id BIGINT) USING delta TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",
        f"INSERT INTO {d} VALUES (1), (2), (3)",
        f"DELETE FROM {d} WHERE id = 2",
        f"ALTER TABLE {d} DROP FEATURE deletionVectors",
    ])
    protocols = [a["protocol"] for v in log_versions(path) for a in commit_actions(path, v) if "protocol" in a]
    if "checkpointProtection" not in protocols[-1].get("writerFeatures", []):
        pytest.fail(f"delta-spark's DROP FEATURE did not add checkpointProtection: {protocols[-1]}")
    boundary = int([a["metaData"] for v in log_versions(path) for a in commit_actions(path, v) if "metaData" in a][-1]
                   ["configuration"]["delta.requireCheckpointProtectionBeforeVersion"])
    assert strata_history(spark, path) == peer.read(path, log_versions(path))
    spark.sql(f"INSERT INTO strata.`{path}` VALUES (4)")
    before = sorted(f.name for f in (path / "_delta_log").iterdir())
    spark.conf.set("spark.strata.logCleanup.retentionCheck.enabled", "false")
    try:
        result = strata.Table.for_path(spark, path).cleanup_log(retention_hours=0)
    finally:
        spark.conf.unset("spark.strata.logCleanup.retentionCheck.enabled")
    after = sorted(f.name for f in (path / "_delta_log").iterdir())
    # All of the history below the boundary goes in one cleanup, or none of it.
    assert result.oldest_version >= boundary or before == after, (result, boundary)
    assert strata_json(spark, path) == peer.read(path)[0]

    # vacuumProtocolCheck: VACUUM checks the writer protocol; a writer feature Strata lacks refuses it, reads go on.
    other = tmp_path / "vacuum_check"
    peer.call("sql", statements=[
        f"CREATE TABLE delta.`{other}` (id BIGINT, s STRING DEFAULT 'x') USING delta TBLPROPERTIES "
        "('delta.feature.vacuumProtocolCheck' = 'supported', 'delta.feature.allowColumnDefaults' = 'supported')",
        f"INSERT INTO delta.`{other}` (id) VALUES (1)",
    ])
    assert strata_json(spark, other) == peer.read(other)[0]
    with pytest.raises(strata.ProtocolError, match="allowColumnDefaults"):
        strata.Table.for_path(spark, other).vacuum(retention_hours=168)


def test_type_widening_reads_files_from_before_the_widening(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    path = tmp_path / "widened"
    d = f"delta.`{path}`"
    peer.call("sql", statements=[
        f"CREATE TABLE {d} (i INT, s SMALLINT, f FLOAT, m DECIMAL(5, 2), dt DATE) USING delta "
        "TBLPROPERTIES ('delta.enableTypeWidening' = 'true')",
        f"INSERT INTO {d} VALUES (1, 2, 1.5, 123.45, DATE'2024-02-29'), (NULL, NULL, NULL, NULL, NULL)",
        f"ALTER TABLE {d} ALTER COLUMN i TYPE BIGINT",
        f"ALTER TABLE {d} ALTER COLUMN s TYPE INT",
        f"ALTER TABLE {d} ALTER COLUMN f TYPE DOUBLE",
        f"ALTER TABLE {d} ALTER COLUMN m TYPE DECIMAL(10, 4)",
        f"INSERT INTO {d} VALUES (9000000000, 70000, 1e300, 123456.7891, DATE'2024-03-01')",
    ])
    protocol = [a["protocol"] for v in log_versions(path) for a in commit_actions(path, v) if "protocol" in a][-1]
    assert "typeWidening" in protocol["readerFeatures"]
    assert strata_history(spark, path) == peer.read(path, log_versions(path))
    # Filters over the widened columns skip files by their old statistics without losing rows.
    for where in ["i = 1", "i > 5000000000", "m = 123.45", "f > 1e200", "s < 3"]:
        q = f"SELECT * FROM {{t}} WHERE {where}"
        assert (sorted(spark.sql(q.format(t=f"strata.`{path}`")).toJSON().collect())
                == peer.call("query", sql=q.format(t=d))["rows"]), where
    # Strata writes the widened table (the new types), delta-spark reads it back as Strata does.
    strata.write(spark.sql("SELECT 9000000001L AS i, 70001 AS s, 2.5D AS f, CAST(1.2345 AS DECIMAL(10, 4)) AS m, "
                           "CAST(NULL AS DATE) AS dt"), path, mode="append")
    assert strata_json(spark, path) == peer.read(path)[0]


def test_v2_checkpoints_written_by_strata(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    import shutil
    path = tmp_path / "strata_v2"
    t = f"strata.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, p STRING) USING strata PARTITIONED BY (p) "
              "TBLPROPERTIES ('delta.checkpointPolicy' = 'v2', 'delta.checkpointInterval' = '2')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT INTO {t} VALUES (3, 'a')")
    spark.sql(f"DELETE FROM {t} WHERE id = 1")
    log = path / "_delta_log"
    uuid_named = [f.name for f in log.iterdir() if ".checkpoint." in f.name and f.name.count(".") == 3]
    assert uuid_named and not any(f.name.endswith(".checkpoint.parquet") for f in log.iterdir())
    protocol = next(a["protocol"] for a in commit_actions(path, 0) if "protocol" in a)
    assert "v2Checkpoint" in protocol["readerFeatures"] and "v2Checkpoint" in protocol["writerFeatures"]
    # delta-spark reads Strata's V2 checkpoint alone (the commits it covers gone from a copy of the table).
    copy = tmp_path / "strata_v2_copy"
    shutil.copytree(path, copy)
    newest = max(int(n.split(".")[0]) for n in uuid_named)
    for v in range(newest + 1):
        (copy / "_delta_log" / f"{v:020d}.json").unlink()
    assert peer.read(copy)[0] == strata_json(spark, path)
    peer.call("sql", statements=[f"INSERT INTO delta.`{path}` VALUES (4, 'c')"])
    assert strata_history(spark, path) == peer.read(path, log_versions(path))
    assert strata_tuples(spark, path, ["id", "p"]) == delta_rs_tuples(path, ["id", "p"])
