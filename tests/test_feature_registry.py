"""Ordinary delta-spark statements around table features (issue 42), run step by step in Strata and in the delta-spark
peer: after every step both engines took (or both refused) it, and hold the same rows, schema and protocol."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from delta_spark_peer import Peer, same_step
from table_reads import delta_rs_tuples, strata_tuples


def latest_protocol(path: Path) -> dict[str, Any]:
    """The protocol in force: the last protocol action of the JSON commits (feature lists sorted)."""
    found: dict[str, Any] = {}
    for commit in sorted((path / "_delta_log").glob("*.json")):
        for line in commit.read_text(encoding="utf-8").splitlines():
            action = json.loads(line)
            if "protocol" in action:
                found = action["protocol"]
    return {k: sorted(v) if isinstance(v, list) else v for k, v in found.items()}


def run_both(spark: SparkSession, peer: Peer, tmp_path: Path, steps: list[str]) -> tuple[Path, Path]:
    """Each step ({t}: the table) on Strata's table (strata.`path`) and on delta-spark's (delta.`path`)."""
    mine, theirs = tmp_path / "strata", tmp_path / "delta"
    for i, step in enumerate(steps):
        taken = same_step(spark, peer, mine, theirs,
                          lambda: spark.sql(step.format(t=f"strata.`{mine}`", using="strata")).collect(),
                          "sql", label=(i, step), statements=[step.format(t=f"delta.`{theirs}`", using="delta")])
        assert taken, (i, step)
        assert latest_protocol(mine) == latest_protocol(theirs), (i, step)
    return mine, theirs


def test_explicit_protocol_versions_then_column_mapping(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    """delta-spark's documented way to enable column mapping: protocol versions on CREATE, the mode by ALTER."""
    mine, _ = run_both(spark, peer, tmp_path, [
        "CREATE TABLE {t} (id INT, v STRING) USING {using} "
        "TBLPROPERTIES ('delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')",
        "INSERT INTO {t} VALUES (1, 'a')",
        "ALTER TABLE {t} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
        "INSERT INTO {t} VALUES (2, 'b')",
        "ALTER TABLE {t} RENAME COLUMN v TO `w x`",
        "INSERT INTO {t} VALUES (3, 'c')",
        "DELETE FROM {t} WHERE id = 2",
    ])
    assert latest_protocol(mine) == {"minReaderVersion": 2, "minWriterVersion": 5}
    assert delta_rs_tuples(mine, ["id", "w x"]) == strata_tuples(spark, mine, ["id", "w x"]) == [(1, "a"), (3, "c")]


def test_writer_versions_whose_features_are_not_used(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    """Writer 4 and 6 (change data feed, generated and identity columns) and listed features the table does not use:
    Strata writes such tables as delta-spark does."""
    run_both(spark, peer, tmp_path, [
        "CREATE TABLE {t} (id INT, v STRING) USING {using} TBLPROPERTIES ('delta.minWriterVersion' = '4')",
        "INSERT INTO {t} VALUES (1, 'a')",
        "ALTER TABLE {t} SET TBLPROPERTIES ('delta.minWriterVersion' = '6')",
        "INSERT INTO {t} VALUES (2, 'b')",
        "ALTER TABLE {t} SET TBLPROPERTIES ('delta.feature.changeDataFeed' = 'supported')",
        "UPDATE {t} SET v = 'z' WHERE id = 1",
    ])


def test_column_mapped_partition_column_with_a_dot(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    mine, _ = run_both(spark, peer, tmp_path, [
        "CREATE TABLE {t} (`the key` INT, `p.art` STRING, val STRING) USING {using} PARTITIONED BY (`p.art`) "
        "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
        "INSERT INTO {t} VALUES (1, 'x', 'a'), (2, 'y.z', 'b'), (3, NULL, 'c')",
        "INSERT INTO {t} SELECT `the key` + 10, `p.art`, val FROM {t} WHERE `p.art` = 'x'",
        "DELETE FROM {t} WHERE `p.art` = 'y.z'",
        "UPDATE {t} SET val = 'u' WHERE `p.art` IS NULL",
    ])
    rows = spark.read.format("strata").load(str(mine)).where("`p.art` = 'x'").select("the key").collect()
    assert sorted(r[0] for r in rows) == [1, 11]
    ours = sorted((tuple(r) for r in spark.read.format("strata").load(str(mine)).collect()), key=repr)
    assert delta_rs_tuples(mine, ["the key", "p.art", "val"]) == ours
