"""Issue 24's small table features against delta-spark 4.4.0 (the `peer`) and delta-rs: delta-spark creates and
changes tables with a feature and Strata reads them identically at every version; Strata writes on them and both
read the result identically; and the reverse where Strata can create the feature.

- domainMetadata: delta-spark's clustered tables (the `delta.clustering` domain, in JSON commits and checkpoints)
  read at every version, Strata's snapshot holds the domain and keeps it through its own append (clustering itself:
  tests/test_clustering.py); a table with only `domainMetadata` is written by both engines.
- inCommitTimestamp: commitInfo first with strictly increasing timestamps in both engines' commits; Strata turning
  them on for an existing table; history and time travel by timestamp in a Los Angeles session against delta-spark.
- variantType: delta-spark's and Strata's VARIANT columns (top level and in arrays), no statistics on them;
  delta-spark's shredded variant files read identically (writing to such a table refused by name).

V2 checkpoints, checkpointProtection, vacuumProtocolCheck and typeWidening: tests/test_checkpoint_features.py.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import strata
from delta_spark_peer import Peer
from table_reads import (commit_actions, delta_rs_tuples, log_version, log_versions, strata_history, strata_json,
                         strata_tuples)


def snapshot_domains(spark: SparkSession, path: Path) -> dict[str, str]:
    """The metadata domains of Strata's latest snapshot (io.strata.log.Snapshot.activeDomains), read in the JVM."""
    jvm: Any = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    log = jvm.io.strata.log.TableLog.forPath(jvm.org.apache.hadoop.fs.Path(str(path)), conf)
    domains = log.snapshot().activeDomains()
    it = domains.iterator()
    result: dict[str, str] = {}
    while it.hasNext():
        pair = it.next()
        result[str(pair._1())] = str(pair._2().configuration())
    return result


def log_domains(path: Path) -> dict[str, str]:
    """The domains the JSON commits leave, replayed by hand (PROTOCOL.md: latest wins, removed ones hidden)."""
    latest: dict[str, dict[str, Any]] = {}
    for v in log_versions(path):
        for a in commit_actions(path, v):
            if "domainMetadata" in a:
                latest[a["domainMetadata"]["domain"]] = a["domainMetadata"]
    return {k: d["configuration"] for k, d in latest.items() if not d["removed"]}


def test_domain_metadata_clustered_table_from_delta_spark(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    path = tmp_path / "clustered"
    d = f"delta.`{path}`"
    peer.call("sql", statements=[
        f"CREATE TABLE {d} (id BIGINT, s STRING) USING delta CLUSTER BY (id) "
        "TBLPROPERTIES ('delta.checkpointInterval' = '2')",
        f"INSERT INTO {d} VALUES (1, 'a'), (2, 'b')",
        f"INSERT INTO {d} VALUES (3, 'c')",
        f"ALTER TABLE {d} CLUSTER BY (s)",
        f"INSERT INTO {d} VALUES (4, 'd')",
        f"DELETE FROM {d} WHERE id = 2",
    ])
    protocol = next(a["protocol"] for a in commit_actions(path, 0) if "protocol" in a)
    assert {"domainMetadata", "clustering"} <= set(protocol["writerFeatures"])
    assert any(p.name.endswith(".checkpoint.parquet") for p in (path / "_delta_log").iterdir())
    assert strata_history(spark, path) == peer.read(path, log_versions(path))
    domains = snapshot_domains(spark, path)
    assert domains == log_domains(path) and json.loads(domains["delta.clustering"])["clusteringColumns"] == [["s"]]
    # Strata writes clustered tables (tests/test_clustering.py): the append keeps the domain, both engines agree.
    strata.write(spark.createDataFrame([(9, "z")], "id long, s string"), path, mode="append")
    assert snapshot_domains(spark, path) == domains
    assert strata_json(spark, path) == peer.read(path)[0]
    assert len(strata_json(spark, path)) == 4


def test_domain_metadata_table_written_by_both(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    # delta-spark creates it with only domainMetadata; Strata appends and deletes; both and delta-rs agree.
    path = tmp_path / "domains"
    d = f"delta.`{path}`"
    peer.call("sql", statements=[
        f"CREATE TABLE {d} (id BIGINT, s STRING) USING delta TBLPROPERTIES ('delta.feature.domainMetadata' = "
        "'supported', 'delta.checkpointInterval' = '3')",
        f"INSERT INTO {d} VALUES (1, 'a'), (2, 'b')",
    ])
    strata.write(spark.createDataFrame([(3, "c"), (4, "d")], "id long, s string"), path, mode="append")
    spark.sql(f"DELETE FROM strata.`{path}` WHERE id = 1")
    assert strata_history(spark, path) == peer.read(path, log_versions(path))
    assert strata_tuples(spark, path) == delta_rs_tuples(path, ["id", "s"]) == [(2, "b"), (3, "c"), (4, "d")]
    # The reverse: Strata creates the feature, delta-spark continues.
    other = tmp_path / "strata_domains"
    spark.sql(f"CREATE TABLE strata.`{other}` (id BIGINT) USING strata "
              "TBLPROPERTIES ('delta.feature.domainMetadata' = 'supported')")
    protocol = next(a["protocol"] for a in commit_actions(other, 0) if "protocol" in a)
    assert "domainMetadata" in protocol["writerFeatures"]
    peer.call("sql", statements=[f"INSERT INTO delta.`{other}` VALUES (7)"])
    spark.sql(f"INSERT INTO strata.`{other}` VALUES (8)")
    assert strata_history(spark, other) == peer.read(other, log_versions(other))


LA = "America/Los_Angeles"


def in_commit_timestamps(path: Path) -> dict[int, int]:
    """commitInfo.inCommitTimestamp of each version that has one; asserts commitInfo is the first action there."""
    stamps: dict[int, int] = {}
    for v in log_versions(path):
        actions = commit_actions(path, v)
        info: dict[str, Any] = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
        if "inCommitTimestamp" in info:
            assert "commitInfo" in actions[0], f"version {v}: commitInfo is not the first action"
            stamps[v] = int(info["inCommitTimestamp"])
    return stamps


def local_text(millis: int, zone: str) -> str:
    """An instant as a zone-less timestamp literal in `zone` (what a user in that session zone types)."""
    import datetime as dt
    from zoneinfo import ZoneInfo
    t = dt.datetime.fromtimestamp(millis / 1000, tz=dt.timezone.utc).astimezone(ZoneInfo(zone))
    return t.strftime("%Y-%m-%d %H:%M:%S.") + f"{millis % 1000:03d}"


def history_millis(rows: list[dict[str, Any]]) -> dict[int, int]:
    import datetime as dt
    result: dict[int, int] = {}
    for r in rows:
        ts = r["timestamp"]
        if isinstance(ts, str):  # delta-spark's DESCRIBE HISTORY as JSON: ISO text with the zone offset
            ts = dt.datetime.fromisoformat(ts.replace("Z", "+00:00"))
        elif ts.tzinfo is None:  # PySpark: naive local time of this (UTC) process
            ts = ts.replace(tzinfo=dt.timezone.utc)
        result[int(r["version"])] = round(ts.timestamp() * 1000)
    return result


def assert_timestamp_time_travel_agrees(spark: SparkSession, peer: Peer, path: Path) -> None:
    """For every version with an in-commit timestamp: time travel to it (and to 1 ms before it) in a Los Angeles
    session gives the same rows in Strata and delta-spark, and both histories show the in-commit timestamps."""
    from table_reads import session_time_zone
    stamps = in_commit_timestamps(path)
    assert stamps
    strata_hist = history_millis([r.asDict() for r in strata.Table.for_path(spark, path).history().collect()])
    peer_hist = history_millis([json.loads(r) for r in peer.call(
        "query", sql=f"DESCRIBE HISTORY delta.`{path}`")["rows"]])
    assert strata_hist == peer_hist
    assert all(strata_hist[v] == ts for v, ts in stamps.items())
    for v, ts in stamps.items():
        # The instant itself, 1 ms after it (not past the latest commit) and 1 ms before it (an earlier version).
        for at in [ts] + ([ts + 1] if v < max(stamps) else []) + ([ts - 1] if v - 1 in stamps else []):
            # delta-spark 4.4.0 in a non-UTC session shifts a TIMESTAMP AS OF literal by the zone offset on these
            # tables (it reported '01:03' in Los Angeles as 17:03 UTC), so its answer for the instant is taken in UTC.
            expected = peer.call("query", sql=f"SELECT * FROM delta.`{path}` TIMESTAMP AS OF "
                                 f"'{local_text(at, 'UTC')}'")["rows"]
            text = local_text(at, LA)
            with session_time_zone(spark, LA):
                got = sorted(spark.read.format("strata").option("timestampAsOf", text).load(str(path))
                             .toJSON().collect())
            assert got == expected, (v, text)


def test_in_commit_timestamps_from_delta_spark_then_strata(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    path = tmp_path / "ict"
    d = f"delta.`{path}`"
    peer.call("sql", statements=[
        f"CREATE TABLE {d} (id BIGINT, s STRING) USING delta TBLPROPERTIES ('delta.enableInCommitTimestamps' = 'true')",
        f"INSERT INTO {d} VALUES (1, 'a')",
        f"INSERT INTO {d} VALUES (2, 'b')",
    ])
    assert strata_history(spark, path) == peer.read(path, log_versions(path))
    before = in_commit_timestamps(path)
    strata.write(spark.createDataFrame([(3, "c")], "id long, s string"), path, mode="append")
    spark.sql(f"UPDATE strata.`{path}` SET s = 'B' WHERE id = 2")
    peer.call("sql", statements=[f"INSERT INTO {d} VALUES (4, 'd')"])
    stamps = in_commit_timestamps(path)
    assert set(stamps) == set(log_versions(path)), "every commit, Strata's too, carries an in-commit timestamp"
    assert [stamps[v] for v in sorted(stamps)] == sorted(stamps.values()) and len(set(stamps.values())) == len(stamps)
    assert all(stamps[v] == before[v] for v in before)
    assert strata_history(spark, path) == peer.read(path, log_versions(path))
    assert strata_tuples(spark, path) == delta_rs_tuples(path, ["id", "s"])
    assert_timestamp_time_travel_agrees(spark, peer, path)


def test_in_commit_timestamps_enabled_by_strata_on_an_existing_table(spark: SparkSession, peer: Peer,
                                                                     tmp_path: Path) -> None:
    path = tmp_path / "ict_enable"
    t = f"strata.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT) USING strata")
    spark.sql(f"INSERT INTO {t} VALUES (1)")
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.enableInCommitTimestamps' = 'true')")
    enabled_at = log_version(path)
    spark.sql(f"INSERT INTO {t} VALUES (2)")
    peer.call("sql", statements=[f"INSERT INTO delta.`{path}` VALUES (3)"])
    spark.sql(f"INSERT INTO {t} VALUES (4)")
    stamps = in_commit_timestamps(path)
    assert sorted(stamps) == list(range(enabled_at, log_version(path) + 1))
    metadata = [a["metaData"] for v in log_versions(path) for a in commit_actions(path, v) if "metaData" in a][-1]
    conf = metadata["configuration"]
    assert conf["delta.inCommitTimestampEnablementVersion"] == str(enabled_at)
    assert conf["delta.inCommitTimestampEnablementTimestamp"] == str(stamps[enabled_at])
    protocol = [a["protocol"] for v in log_versions(path) for a in commit_actions(path, v) if "protocol" in a][-1]
    assert "inCommitTimestamp" in protocol["writerFeatures"]
    assert strata_history(spark, path) == peer.read(path, log_versions(path))
    assert_timestamp_time_travel_agrees(spark, peer, path)


VARIANT_ROWS = ("(1, parse_json('{\"a\": 1, \"b\": [1, 2, {\"c\": \"x\"}]}')), (2, parse_json('\"text\"')), "
                "(3, NULL), (4, parse_json('[1.5, null, true]'))")


def add_stats(path: Path) -> list[dict[str, Any]]:
    return [json.loads(a["add"]["stats"]) for v in log_versions(path) for a in commit_actions(path, v)
            if "add" in a and a["add"].get("stats")]


def test_variant_from_delta_spark_then_strata(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    path = tmp_path / "variant"
    d = f"delta.`{path}`"
    peer.call("sql", statements=[
        f"CREATE TABLE {d} (id BIGINT, v VARIANT) USING delta",
        f"INSERT INTO {d} VALUES {VARIANT_ROWS}",
        f"UPDATE {d} SET v = parse_json('{{\"updated\": true}}') WHERE id = 2",
    ])
    protocol = next(a["protocol"] for a in commit_actions(path, 0) if "protocol" in a)
    assert "variantType" in protocol["readerFeatures"] and "variantType" in protocol["writerFeatures"]
    assert strata_history(spark, path) == peer.read(path, log_versions(path))
    # Strata writes variant values (unshredded): delta-spark reads them back equal.
    spark.sql(f"INSERT INTO strata.`{path}` VALUES (5, parse_json('{{\"k\": [\"v\", 2]}}')), (6, NULL)")
    spark.sql(f"DELETE FROM strata.`{path}` WHERE id = 1")
    assert strata_history(spark, path) == peer.read(path, log_versions(path))
    got = [json.loads(r) for r in strata_json(spark, path, columns=["id"])]
    assert [r["id"] for r in got] == [2, 3, 4, 5, 6]
    # Variant path queries agree too (what users run on them).
    q = "SELECT id, variant_get(v, '$.k[1]', 'int') AS k1, to_json(v) AS j FROM {t} ORDER BY id"
    assert (sorted(spark.sql(q.format(t=f"strata.`{path}`")).toJSON().collect())
            == peer.call("query", sql=q.format(t=d))["rows"])
    # Statistics never describe the variant column's value/metadata binaries.
    for stats in add_stats(path)[-2:]:
        assert "v" not in stats.get("minValues", {}) and "v" not in stats.get("nullCount", {}), stats


def test_variant_table_created_by_strata(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    path = tmp_path / "strata_variant"
    t = f"strata.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v VARIANT, arr ARRAY<VARIANT>) USING strata")
    protocol = next(a["protocol"] for a in commit_actions(path, 0) if "protocol" in a)
    assert protocol["minReaderVersion"] == 3 and "variantType" in protocol["readerFeatures"]
    assert "variantType" in protocol["writerFeatures"]
    spark.sql(f"INSERT INTO {t} SELECT id, v, array(v, NULL) FROM VALUES {VARIANT_ROWS} AS s(id, v)")
    peer.call("sql", statements=[f"INSERT INTO delta.`{path}` VALUES (9, parse_json('9'), array(parse_json('[]')))"])
    spark.sql(f"UPDATE {t} SET v = parse_json('null') WHERE id = 4")
    assert strata_history(spark, path) == peer.read(path, log_versions(path))
    assert len(strata_json(spark, path)) == 5
    # Adding a VARIANT column to a plain table turns the feature on (as a TIMESTAMP_NTZ column does).
    plain = tmp_path / "plain"
    spark.sql(f"CREATE TABLE strata.`{plain}` (id BIGINT) USING strata")
    spark.sql(f"ALTER TABLE strata.`{plain}` ADD COLUMN payload VARIANT")
    spark.sql(f"INSERT INTO strata.`{plain}` VALUES (1, parse_json('{{\"x\": 1}}'))")
    protocol = [a["protocol"] for v in log_versions(plain) for a in commit_actions(plain, v) if "protocol" in a][-1]
    assert "variantType" in protocol["readerFeatures"]
    assert strata_history(spark, plain) == peer.read(plain, log_versions(plain))


def test_shredded_variant_tables_read_as_delta_spark(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    """delta-spark writes shredded variant files (Spark's test-only forced shredding schema); Strata reads them as
    delta-spark does, and refuses to write to the table, naming the feature."""
    import pyarrow.parquet as pq

    path = tmp_path / "shredded"
    t = f"delta.`{path}`"
    confs = ["spark.sql.variant.writeShredding.enabled", "spark.sql.variant.forceShreddingSchemaForTest"]
    try:
        peer.call("sql", statements=[
            f"SET {confs[0]} = true", f"SET {confs[1]} = a int, b string",
            f"CREATE TABLE {t} (i BIGINT, v VARIANT) USING delta TBLPROPERTIES ('delta.enableVariantShredding' = 'true')",
            f"""INSERT INTO {t} SELECT id, CASE WHEN id = 0 THEN parse_json('{{"a": 1, "b": "2", "d": 4.4}}')
                WHEN id = 1 THEN parse_json('{{"a": [1, 2], "b": "hello"}}') ELSE parse_json('{{"A": 1}}') END
                FROM range(0, 3, 1, 1)"""])
    finally:
        peer.call("sql", statements=[f"RESET {c}" for c in confs])
    protocol = [a["protocol"] for v in log_versions(path) for a in commit_actions(path, v) if "protocol" in a][-1]
    assert {"variantShredding", "variantShredding-preview"} & set(protocol["readerFeatures"]), protocol
    # The file is shredded: v has a typed_value group with the forced fields.
    (data,) = [f for f in path.glob("*.parquet")]
    v = pq.read_schema(data).field("v").type
    assert {v.field(k).name for k in range(v.num_fields)} >= {"metadata", "value", "typed_value"}, v

    assert strata_history(spark, path) == peer.read(path, log_versions(path))
    df = spark.read.format("strata").load(str(path))
    rows = df.selectExpr("i", "try_variant_get(v, '$.a', 'int')", "to_json(v)").collect()
    assert sorted(tuple(r) for r in rows) == [
        (0, 1, '{"a":1,"b":"2","d":4.4}'), (1, None, '{"a":[1,2],"b":"hello"}'), (2, None, '{"A":1}')]
    with pytest.raises(Exception, match="variantShredding"):
        spark.sql(f"INSERT INTO strata.`{path}` VALUES (3, parse_json('1'))")
