"""DROP FEATURE (issue 24): `CALL strata.system.drop_feature(...)` (Spark's parser has no ALTER TABLE ... DROP
FEATURE) against delta-spark 4.4.0's `ALTER TABLE ... DROP FEATURE` on a table of its own built by the same
statements: after each drop both protocols and table properties must be equal, the rows too; delta-spark and delta-rs
then read Strata's table.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import strata
from delta_spark_peer import Peer
from table_reads import commit_actions, delta_rs_tuples, log_version, log_versions, strata_json


def latest(path: Path, key: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [a[key] for v in log_versions(path) for a in commit_actions(path, v) if key in a]
    return found[-1]


def protocol(path: Path) -> tuple[int, int, list[str], list[str]]:
    p = latest(path, "protocol")
    return (p["minReaderVersion"], p["minWriterVersion"], sorted(p.get("readerFeatures", [])),
            sorted(p.get("writerFeatures", [])))


def properties(path: Path) -> dict[str, str]:
    """The table's properties; the protected version is a version number, which differs between the logs."""
    conf: dict[str, str] = dict(latest(path, "metaData")["configuration"])
    conf.pop("delta.requireCheckpointProtectionBeforeVersion", None)
    return conf


def test_drop_features_as_delta_spark(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    mine, theirs = tmp_path / "strata", tmp_path / "delta"
    t, d = f"strata.`{mine}`", f"delta.`{theirs}`"
    props = ("'delta.enableDeletionVectors' = 'true', 'delta.feature.vacuumProtocolCheck' = 'supported', "
             "'delta.checkpointPolicy' = 'v2', 'delta.enableTypeWidening' = 'true'")
    statements = [
        "CREATE TABLE {t} (id BIGINT, i INT, p STRING) USING {using} PARTITIONED BY (p) TBLPROPERTIES (" + props + ")",
        "INSERT INTO {t} VALUES (1, 10, 'a'), (2, 20, 'a'), (3, 30, 'b')",
        "DELETE FROM {t} WHERE id = 2",
        "ALTER TABLE {t} ALTER COLUMN i TYPE BIGINT",
    ]
    for s in statements:
        spark.sql(s.format(t=t, using="strata"))
    peer.call("sql", statements=[s.format(t=d, using="delta") for s in statements])
    assert any(a.get("add", {}).get("deletionVector") for v in log_versions(mine) for a in commit_actions(mine, v))
    assert protocol(mine) == protocol(theirs)

    # Refused by name: a feature the table lacks, one Strata cannot drop, TRUNCATE HISTORY, checkpointProtection.
    for feature, message in [("rowTracking", "does not support it"), ("appendOnly", "Strata drops only")]:
        with pytest.raises(strata.StrataError, match=message), strata.errors.translate():
            spark.sql(f"CALL strata.system.drop_feature(table => '{mine}', feature => '{feature}')")
    with pytest.raises(strata.StrataError, match="checkpoint protection only"), strata.errors.translate():
        spark.sql(f"CALL strata.system.drop_feature(table => '{mine}', feature => 'typeWidening', "
                  "truncate_history => true)")

    # typeWidening: the file written before the widening is rewritten as BIGINT, the type changes forgotten;
    # v2Checkpoint: the policy back to classic. delta-spark's DROP FEATURE takes 25-50 s each here (three checkpoints
    # and a log cleanup): the other drops are checked against the protocol its rules give (log.FeatureDropSuite).
    for feature in ["typeWidening", "v2Checkpoint"]:
        row = spark.sql(f"CALL strata.system.drop_feature(table => '{mine}', feature => '{feature}')").collect()[0]
        peer.call("sql", statements=[f"ALTER TABLE {d} DROP FEATURE {feature}"])
        assert protocol(mine) == protocol(theirs), feature
        assert (row.min_reader_version, row.min_writer_version) == protocol(mine)[:2]
        assert properties(mine) == properties(theirs), feature
        assert strata_json(spark, mine) == strata_json(spark, theirs), feature
        if feature == "typeWidening":
            schema = json.loads(latest(mine, "metaData")["schemaString"])
            assert "delta.typeChanges" not in json.dumps(schema)
            assert "typeWidening" not in protocol(mine)[3] and "checkpointProtection" in protocol(mine)[3]
    # deletionVectors: the file with a vector rewritten without it; vacuumProtocolCheck through the Python API.
    spark.sql(f"CALL strata.system.drop_feature(table => '{mine}', feature => 'deletionVectors')")
    assert strata.Table.for_path(spark, str(mine)).drop_feature("vacuumProtocolCheck") == log_version(mine)
    assert protocol(mine) == (1, 7, [], ["appendOnly", "checkpointProtection", "invariants"])
    assert properties(mine) == {"delta.checkpointPolicy": "classic"}
    protected = int(latest(mine, "metaData")["configuration"]["delta.requireCheckpointProtectionBeforeVersion"])
    assert protected == log_version(mine) and (mine / "_delta_log" / f"{protected:020d}.checkpoint.parquet").exists()
    live: dict[str, dict[str, Any]] = {}
    for v in log_versions(mine):
        for a in commit_actions(mine, v):
            if "add" in a:
                live[a["add"]["path"]] = a["add"]
            elif "remove" in a:
                live.pop(a["remove"]["path"], None)
    assert live and not any(f.get("deletionVector") for f in live.values())
    with pytest.raises(strata.StrataError, match="checkpointProtection can only be dropped"), strata.errors.translate():
        spark.sql(f"CALL strata.system.drop_feature(table => '{mine}', feature => 'checkpointProtection')")

    # delta-spark and delta-rs read what is left.
    assert strata_json(spark, mine) == peer.read(mine)[0]
    assert delta_rs_tuples(mine, ["id", "i", "p"]) == [(1, 10, "a"), (3, 30, "b")]
