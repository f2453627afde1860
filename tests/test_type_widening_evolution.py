"""Type widening inside nested types by schema evolution, then DROP FEATURE typeWidening (issue 24).

One Strata table and one delta-spark 4.4.0 table (the `peer`) built by the same writes: a `mergeSchema` append whose
struct fields, array elements and map keys/values are of wider types widens them (every widening PROTOCOL.md lists:
delta-spark 4.4's default `typeWidening.allowAutomaticWidening = always`), recorded in `delta.typeChanges` with
`fieldPath`; an append of the old, narrower types is cast; `MERGE WITH SCHEMA EVOLUTION` widens nested types too.
Both logs hold the same schema, and delta-spark reads Strata's table as Strata does (in a non-UTC
session: a DATE field becomes TIMESTAMP_NTZ). Then `drop_feature(typeWidening)` rewrites exactly the files written
before a widening, forgets the type changes and drops the feature; Strata reads every version (those before the drop
as before it), delta-spark reads them as Strata does, and delta-rs, which cannot read typeWidening, reads the result
as Strata does.
"""
from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession

import strata
from delta_spark_peer import Peer, same_step
from table_reads import commit_actions, delta_rs_tuples, log_version, log_versions, session_time_zone, strata_json
from test_type_widening import fields, latest, same_log_state

COLUMNS = "id INT, s STRUCT<x: INT, d: DATE>, arr ARRAY<INT>, m MAP<SMALLINT, INT>, sa ARRAY<STRUCT<z: TINYINT>>, p STRING"
PROPS = "TBLPROPERTIES ('delta.enableTypeWidening' = 'true', 'delta.feature.timestampNtz' = 'supported')"
ROWS = ("(1, named_struct('x', 1, 'd', DATE'2024-02-29'), array(1, NULL), map(1S, 1), array(named_struct('z', 1Y)), "
        "'a'), (2, NULL, NULL, NULL, NULL, 'b')")
# Wider everywhere: int -> bigint and date -> timestamp_ntz in a struct, int -> double in an array (no "same family"
# widening), smallint -> int and int -> bigint in a map, tinyint -> smallint in a struct inside an array.
WIDE = ("SELECT 3 AS id, named_struct('x', 5000000000L, 'd', TIMESTAMP_NTZ'2024-03-01 10:11:12') AS s, "
        "array(1.5D) AS arr, map(70000, 8000000000L) AS m, array(named_struct('z', 300S)) AS sa, 'a' AS p")
NARROW = ("SELECT 4 AS id, named_struct('x', 4, 'd', DATE'2024-01-01') AS s, array(4) AS arr, map(4S, 4) AS m, "
          "array(named_struct('z', 4Y)) AS sa, 'b' AS p")
MERGE = ("MERGE WITH SCHEMA EVOLUTION INTO {t} t USING (SELECT id, s, arr, map(CAST(k AS INT), v) AS m, "
         "array(named_struct('z', z)) AS sa, p FROM VALUES (1, named_struct('x', 10L, 'd', TIMESTAMP_NTZ'2024-05-05 "
         "05:05:05'), array(10D), 10, CAST(10.25 AS DECIMAL(22, 2)), 10, 'a'), (5, NULL, NULL, 5, 5.5BD, 70000, 'b') "
         "AS v(id, s, arr, k, v, z, p)) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")


def file_schemas(path: Path) -> dict[str, pa.Schema]:
    """The Parquet schema of each live file of the table's latest version."""
    live: set[str] = set()
    for v in log_versions(path):
        for a in commit_actions(path, v):
            if "add" in a:
                live.add(a["add"]["path"])
            elif "remove" in a:
                live.discard(a["remove"]["path"])
    return {f: pq.read_schema(path / f).remove_metadata() for f in live}


def protocol_of(path: Path) -> tuple[int, int, list[str], list[str]]:
    p = latest(path, "protocol")
    return (p["minReaderVersion"], p["minWriterVersion"], sorted(p.get("readerFeatures", [])),
            sorted(p.get("writerFeatures", [])))


def peer_error(peer: Peer, **request: Any) -> str:
    """The error delta-spark's df.write of the request gives (empty when it succeeds)."""
    peer.send("write", **request)
    return str(peer.receive().get("error", ""))


def plain(value: Any) -> Any:
    """A value as both Spark (Row, dict) and delta-rs (dict, list of key/value pairs for a map) give it, made equal."""
    if hasattr(value, "asDict"):
        value = value.asDict()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list) and value and all(isinstance(e, tuple) and len(e) == 2 for e in value):
        return {k: plain(v) for k, v in value}
    if isinstance(value, list):
        return [plain(e) for e in value]
    return value


def test_schema_evolution_widens_nested_types_then_drop_feature(spark: SparkSession, peer: Peer,
                                                                tmp_path: Path) -> None:
    mine, theirs = tmp_path / "strata", tmp_path / "delta"
    t, d = f"strata.`{mine}`", f"delta.`{theirs}`"
    spark.sql(f"CREATE TABLE {t} ({COLUMNS}) USING strata PARTITIONED BY (p) {PROPS}")        # 0
    spark.sql(f"INSERT INTO {t} VALUES {ROWS}")                                                 # 1
    strata.write(spark.sql(WIDE), mine, merge_schema=True)                                      # 2
    strata.write(spark.sql(NARROW), mine)                                                       # 3
    peer.call("sql", statements=[f"CREATE TABLE {d} ({COLUMNS}) USING delta PARTITIONED BY (p) {PROPS}",
                                 f"INSERT INTO {d} VALUES {ROWS}"])
    peer.call("write", query=WIDE, path=str(theirs), options={"mergeSchema": "true"})
    # delta-spark's df.write refuses narrower types without mergeSchema (Strata casts, as at the top level); its
    # INSERT casts.
    peer.call("sql", statements=[f"INSERT INTO {d} {NARROW}"])
    for version in range(4):
        same_log_state(mine, theirs, version)
    changes = {f["name"]: [(c["fromType"], c["toType"], c.get("fieldPath")) for c in f["metadata"]
                           .get("delta.typeChanges", [])] for f in fields(mine)}
    assert changes["arr"] == [("integer", "double", "element")]
    assert changes["m"] == [("short", "integer", "key"), ("integer", "long", "value")]
    assert changes["s"] == [] and changes["sa"] == []  # recorded on the struct's own fields
    # The narrower append was cast to the table's types: its file holds the widened ones.
    assert str(pq.read_schema(mine / next(a["add"]["path"] for a in commit_actions(mine, 3) if "add" in a))
               .field("arr").type) == "list<element: double>"

    # Refused alike: a type that is no widening (even with mergeSchema), a wider one without mergeSchema. Nothing
    # is committed.
    bad = NARROW.replace("named_struct('x', 4,", "named_struct('x', 'four',")
    with pytest.raises(strata.StrataError, match="field 's.x': string in the data cannot be written as bigint"):
        strata.write(spark.sql(bad), mine, merge_schema=True)
    with pytest.raises(strata.StrataError,
                       match=r"field 'arr.element': decimal\(2,1\) in the data cannot be written as double"):
        strata.write(spark.sql(NARROW.replace("array(4)", "array(4.5BD)")), mine)
    assert log_version(mine) == 3
    assert peer_error(peer, query=bad, path=str(theirs), options={"mergeSchema": "true"})
    assert peer_error(peer, query=NARROW.replace("array(4)", "array(4.5BD)"), path=str(theirs))

    # MERGE WITH SCHEMA EVOLUTION: Spark asks for each nested widening (bigint -> decimal in a map's value,
    # smallint -> int in an array's struct); Strata commits them in a version of their own before the MERGE's.
    spark.sql(MERGE.format(t=t))
    peer.call("sql", statements=[MERGE.format(t=d)])
    assert fields(mine) == fields(theirs) and protocol_of(mine) == protocol_of(theirs)
    before = log_version(mine)
    assert before == 5  # 4: the ALTER COLUMN TYPEs the MERGE asked for, 5: the MERGE
    with session_time_zone(spark, "America/Los_Angeles") as zone:
        history = [strata_json(spark, mine, v) for v in range(1, before + 1)]
        # delta-spark after the mergeSchema append, after the ALTER the MERGE asked for (older files upcast), after
        # the MERGE (versions 1 and 3 add no new case: CI time).
        assert [history[v - 1] for v in (2, 4, 5)] == peer.read(mine, [2, 4, 5], time_zone=zone)
        assert strata_json(spark, mine) == strata_json(spark, theirs)
    rows = history[-1]
    assert len(rows) == 5 and '"m":{"10":10.25}' in "".join(rows)
    for path in (mine, theirs):  # delta-rs (deltalake 1.6) does not read the typeWidening reader feature
        with pytest.raises(Exception, match="TypeWidening"):
            delta_rs_tuples(path, ["id"])

    # DROP FEATURE: the files written before a widening (their Parquet types differ from those of the MERGE's new
    # file, written after every widening) are rewritten in one commit, and only they; then the type changes go.
    schemas = file_schemas(mine)
    merged = next(a["add"]["path"] for a in commit_actions(mine, log_version(mine)) if "add" in a)
    stale = {f for f, schema in schemas.items() if schema != schemas[merged]}
    assert stale and len(stale) < len(schemas)
    spark.sql(f"CALL strata.system.drop_feature(table => '{mine}', feature => 'typeWidening')")
    reorg = commit_actions(mine, before + 1)
    assert {a["remove"]["path"] for a in reorg if "remove" in a} == stale
    assert all(schema == schemas[merged] for schema in file_schemas(mine).values())
    assert "delta.typeChanges" not in str(fields(mine))
    p = protocol_of(mine)
    assert "typeWidening" not in p[3] and "checkpointProtection" in p[3], p
    # Strata reads every version: those before the drop as it did before it, the drop's as delta-spark does (the
    # rewrite and the last one; those between are empty commits and checkpoints); delta-rs reads the result as Strata.
    with session_time_zone(spark, "America/Los_Angeles") as zone:
        after = [strata_json(spark, mine, v) for v in log_versions(mine)]
        assert after[1:before + 1] == history and all(a == rows for a in after[before:])
        assert [after[before + 1], after[-1]] == peer.read(mine, [before + 1, log_version(mine)], time_zone=zone)
    columns = ["id", "s", "arr", "m", "sa", "p"]
    ours = sorted((tuple(plain(v) for v in r) for r in spark.read.format("strata").load(str(mine))
                   .select(*columns).collect()), key=repr)
    table = DeltaTable(str(mine)).to_pyarrow_table().select(columns).to_pylist()
    assert sorted((tuple(plain(r[c]) for c in columns) for r in table), key=repr) == ours
    assert (3, {"x": 5000000000, "d": dt.datetime(2024, 3, 1, 10, 11, 12)}) in [o[:2] for o in ours]


AUTOMATIC = "spark.databricks.delta.typeWidening.allowAutomaticWidening"


@pytest.mark.parametrize("mode", ["same_family_type", "never"])
def test_allow_automatic_widening_conf_as_delta_spark(spark: SparkSession, peer: Peer, tmp_path: Path,
                                                      mode: str) -> None:
    """delta-spark's conf limits which widenings a `mergeSchema` append applies: each engine, the same appends, the
    same refusals, schemas and rows."""
    mine, theirs = tmp_path / "strata", tmp_path / "delta"
    create = ("CREATE TABLE {t} (id INT, arr ARRAY<INT>) USING {using} TBLPROPERTIES ('delta.enableTypeWidening' = "
              "'true')")
    spark.sql(create.format(t=f"strata.`{mine}`", using="strata"))
    peer.call("sql", statements=[create.format(t=f"delta.`{theirs}`", using="delta")])
    appends = ["SELECT 1L AS id, array(1) AS arr",      # int -> bigint: the same family
               "SELECT 2 AS id, array(2.5D) AS arr",    # int -> double: only with 'always'
               "SELECT 3L AS id, array(3) AS arr" if mode == "same_family_type" else "SELECT 3 AS id, array(3) AS arr"]
    # (the last of the table's own types: delta-spark's df.write refuses a narrower one, which Strata casts)
    spark.conf.set(AUTOMATIC, mode)
    peer.call("sql", statements=[f"SET {AUTOMATIC} = {mode}"])
    try:
        outcomes = [same_step(spark, peer, mine, theirs, lambda: spark.sql(query).write.format("strata")
                              .mode("append").option("mergeSchema", "true").save(str(mine)), "write", query,
                              query=query, path=str(theirs), mode="append", options={"mergeSchema": "true"})
                    for query in appends]
    finally:
        spark.conf.unset(AUTOMATIC)
        peer.call("sql", statements=[f"RESET {AUTOMATIC}"])
    assert outcomes == ([True, False, True] if mode == "same_family_type" else [False, False, True])
    expected = "struct<id:bigint,arr:array<int>>" if mode == "same_family_type" else "struct<id:int,arr:array<int>>"
    assert spark.read.format("strata").load(str(mine)).schema.simpleString() == expected
