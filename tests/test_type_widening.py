"""Type widening written by Strata (issue 24): ALTER TABLE ... ALTER COLUMN c TYPE <wider> on a Strata table, the same
statements run by delta-spark 4.4.0 (the `peer`) on a table of its own. After each statement both logs must hold the
same protocol and schema (`delta.typeChanges` included), delta-spark must read Strata's table as Strata does at every
version, and delta-rs must read it too. Writes after a widening (appends, DML, OPTIMIZE) write the new type.
Reads of delta-spark's widened tables: tests/test_checkpoint_features.py.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

import strata
from delta_spark_peer import Peer
from table_reads import commit_actions, delta_rs_tuples, log_version, log_versions, session_time_zone, strata_json

COLUMNS = "b TINYINT, s SMALLINT, i INT, l BIGINT, f FLOAT, dt DATE, m DECIMAL(5, 2), p STRING"
ROWS = ("(1, 2, 3, 4, 1.5, DATE'2024-02-29', 123.45, 'a'), "
        "(NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'b')")
WIDENINGS = ["b TYPE SMALLINT", "b TYPE INT", "s TYPE INT", "i TYPE BIGINT", "l TYPE DECIMAL(22, 1)",
             "f TYPE DOUBLE", "dt TYPE TIMESTAMP_NTZ", "m TYPE DECIMAL(10, 4)", "s TYPE DOUBLE"]


def latest(path: Path, key: str, version: int | None = None) -> dict[str, Any]:
    """The latest `protocol` or `metaData` action of the table's log (up to `version`)."""
    found: list[dict[str, Any]] = [a[key] for v in log_versions(path) if version is None or v <= version
                                   for a in commit_actions(path, v) if key in a]
    return found[-1]


def fields(path: Path, version: int | None = None) -> list[dict[str, Any]]:
    schema: dict[str, Any] = json.loads(latest(path, "metaData", version)["schemaString"])
    return list(schema["fields"])


def same_log_state(mine: Path, theirs: Path, version: int | None = None) -> None:
    """Strata's protocol and schema (types, nullability, field metadata) equal delta-spark's (at `version`)."""
    p, q = latest(mine, "protocol", version), latest(theirs, "protocol", version)
    assert (p["minReaderVersion"], p["minWriterVersion"]) == (q["minReaderVersion"], q["minWriterVersion"])
    assert sorted(p.get("readerFeatures", [])) == sorted(q.get("readerFeatures", []))
    assert sorted(p.get("writerFeatures", [])) == sorted(q.get("writerFeatures", []))
    assert fields(mine, version) == fields(theirs, version), version


def parquet_types(path: Path, version: int) -> list[dict[str, str]]:
    """The Parquet physical/logical type of each column of every file added at `version`."""
    out = []
    for a in commit_actions(path, version):
        if "add" in a:
            schema = pq.read_schema(path / a["add"]["path"])
            out.append({n: str(schema.field(n).type) for n in schema.names})
    return out


def test_alter_column_type_widens_as_delta_spark(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    mine, theirs = tmp_path / "strata", tmp_path / "delta"
    t, d = f"strata.`{mine}`", f"delta.`{theirs}`"
    spark.sql(f"CREATE TABLE {t} ({COLUMNS}) USING strata PARTITIONED BY (p)")
    spark.sql(f"INSERT INTO {t} VALUES {ROWS}")
    peer.call("sql", statements=[f"CREATE TABLE {d} ({COLUMNS}) USING delta PARTITIONED BY (p)",
                                 f"INSERT INTO {d} VALUES {ROWS}"])

    # Not enabled: refused naming the property, as delta-spark refuses it.
    with pytest.raises(strata.StrataError, match="delta.enableTypeWidening"), strata.errors.translate():
        spark.sql(f"ALTER TABLE {t} ALTER COLUMN i TYPE BIGINT")
    peer.send("sql", statements=[f"ALTER TABLE {d} ALTER COLUMN i TYPE BIGINT"])
    assert "error" in peer.receive()

    # delta-spark wants timestampNtz enabled by hand before a column becomes TIMESTAMP_NTZ (Strata would add it).
    enable = "SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true', 'delta.feature.timestampNtz' = 'supported')"
    spark.sql(f"ALTER TABLE {t} {enable}")
    for change in WIDENINGS:
        spark.sql(f"ALTER TABLE {t} ALTER COLUMN {change}")
    # One peer round trip for all of them (CI time); both logs then compare version by version.
    peer.call("sql", statements=[f"ALTER TABLE {d} {enable}"] + [f"ALTER TABLE {d} ALTER COLUMN {c}" for c in WIDENINGS])
    for version in range(1, log_version(mine) + 1):
        same_log_state(mine, theirs, version)
    assert [c["fromType"] + ">" + c["toType"] for f in fields(mine) if f["name"] == "b"
            for c in f["metadata"]["delta.typeChanges"]] == ["byte>short", "short>integer"]

    # Not widenings: refused naming both types, nothing committed; delta-spark refuses each too. Spark's analyzer
    # refuses what it cannot upcast (BIGINT -> INT); Strata what Spark upcasts but Delta does not (BIGINT -> DOUBLE).
    before = log_version(mine)
    for change in ["i TYPE INT", "s TYPE STRING", "m TYPE DECIMAL(10, 2)", "l TYPE DECIMAL(21, 2)", "i TYPE DOUBLE",
                   "i TYPE FLOAT", "b TYPE FLOAT", "p TYPE INT"]:
        with pytest.raises(Exception, match="not a widening|NOT_SUPPORTED_CHANGE_COLUMN") as refused:
            spark.sql(f"ALTER TABLE {t} ALTER COLUMN {change}")
        if change in ("i TYPE DOUBLE", "i TYPE FLOAT"):
            assert "Cannot change column 'i'" in str(refused.value) and "BIGINT to" in str(refused.value)
            peer.send("sql", statements=[f"ALTER TABLE {d} ALTER COLUMN {change}"])
            assert "not supported for changing column i from BIGINT" in peer.receive()["error"], change
    assert log_version(mine) == before

    # Writes after the widenings write the new types: an append of values only the new types hold, DML, OPTIMIZE.
    wide = ("(70000, 3000000000, 9000000000, 123456789012345678901.5, 1e300, TIMESTAMP_NTZ'2024-03-01 10:11:12', "
            "123456.7891, 'a')")
    spark.sql(f"INSERT INTO {t} VALUES {wide}")
    appended = parquet_types(mine, log_version(mine))
    assert appended and all(f["b"] == "int32" and f["s"] == "double" and f["i"] == "int64" and
                            f["l"] == "decimal128(22, 1)" and f["f"] == "double" and f["dt"] == "timestamp[us]"
                            and f["m"] == "decimal128(10, 4)" for f in appended), appended
    spark.sql(f"UPDATE {t} SET i = i * 2, m = m + 0.0001 WHERE b = 1")
    spark.sql(f"DELETE FROM {t} WHERE b IS NULL")
    spark.sql(f"CALL strata.system.optimize(table => '{mine}')")
    assert all(f["i"] == "int64" for f in parquet_types(mine, log_version(mine)))
    peer.call("sql", statements=[f"INSERT INTO {d} VALUES {wide}", f"UPDATE {d} SET i = i * 2, m = m + 0.0001 "
                                 "WHERE b = 1", f"DELETE FROM {d} WHERE b IS NULL", f"OPTIMIZE {d}"])
    same_log_state(mine, theirs)

    # Versions before, between and after the widenings and writes read alike in delta-spark and Strata (in a non-UTC
    # session); delta-rs (deltalake 1.6) refuses the reader feature typeWidening on both tables alike.
    versions = [1, len(WIDENINGS) + 2] + list(range(log_version(mine) - 3, log_version(mine) + 1))
    with session_time_zone(spark, "America/Los_Angeles") as zone:
        assert ([strata_json(spark, mine, v) for v in versions] == peer.read(mine, versions, time_zone=zone))
        assert strata_json(spark, mine) == strata_json(spark, theirs)
    for path in (mine, theirs):
        with pytest.raises(Exception, match="TypeWidening"):
            delta_rs_tuples(path, ["i"])
    # Filters on widened columns skip by the statistics of both types without losing a row.
    for where in ["i = 6", "i > 5000000000", "m = 123.4501", "f > 1e200", "dt >= TIMESTAMP_NTZ'2024-03-01'"]:
        q = f"SELECT * FROM {{t}} WHERE {where}"
        assert (sorted(spark.sql(q.format(t=t)).toJSON().collect())
                == peer.call("query", sql=q.format(t=d))["rows"]), where


def test_merge_schema_widens_columns(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    path = tmp_path / "evolved"
    spark.sql(f"CREATE TABLE strata.`{path}` (a INT, b FLOAT, d DECIMAL(5, 2), p STRING) USING strata "
              "PARTITIONED BY (p) TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    spark.sql(f"INSERT INTO strata.`{path}` VALUES (1, 1.5, 1.25, 'x')")
    wider = spark.sql("SELECT 5000000000L AS a, 2.5D AS b, CAST(123456.789 AS DECIMAL(9, 3)) AS d, 'x' AS p, "
                      "'new' AS c")
    # Without mergeSchema a wider column is a mismatch, as before; with it, a type that is no widening still is.
    with pytest.raises(strata.StrataError, match="column 'a' is int in the table but bigint in the data"):
        strata.write(wider, path, mode="append")
    with pytest.raises(strata.StrataError, match="column 'a' is int in the table but string in the data"):
        strata.write(spark.sql("SELECT '1' AS a, 1.5D AS b, 1.0BD AS d, 'x' AS p"), path, mode="append",
                     merge_schema=True)
    strata.write(wider, path, mode="append", merge_schema=True)
    got = {f["name"]: (f["type"], [c["fromType"] + ">" + c["toType"] for c in f["metadata"].get("delta.typeChanges", [])])
           for f in fields(path)}
    assert got == {"a": ("long", ["integer>long"]), "b": ("double", ["float>double"]),
                   "d": ("decimal(9,3)", ["decimal(5,2)>decimal(9,3)"]), "p": ("string", []), "c": ("string", [])}
    assert strata_json(spark, path) == peer.read(path)[0]
    assert len(strata_json(spark, path)) == 2


NESTED = ("id INT, arr ARRAY<INT>, m MAP<INT, SMALLINT>, aa ARRAY<ARRAY<TINYINT>>, sa ARRAY<STRUCT<x: INT>>, "
          "mm MAP<STRING, ARRAY<FLOAT>>")
NESTED_ROWS = ("(1, array(1, NULL), map(1, 2S), array(array(1Y), NULL), array(named_struct('x', 5)), "
               "map('a', array(1.5F))), (2, NULL, NULL, NULL, NULL, NULL)")
NESTED_WIDENINGS = ["arr.element TYPE BIGINT", "m.key TYPE BIGINT", "m.value TYPE INT", "aa.element.element TYPE INT",
                    "sa.element.x TYPE BIGINT", "mm.value.element TYPE DOUBLE", "m.value TYPE BIGINT"]


def test_widening_inside_arrays_and_maps(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    mine, theirs = tmp_path / "strata", tmp_path / "delta"
    t, d = f"strata.`{mine}`", f"delta.`{theirs}`"
    props = "TBLPROPERTIES ('delta.enableTypeWidening' = 'true')"
    spark.sql(f"CREATE TABLE {t} ({NESTED}) USING strata {props}")
    spark.sql(f"INSERT INTO {t} VALUES {NESTED_ROWS}")
    for change in NESTED_WIDENINGS:
        spark.sql(f"ALTER TABLE {t} ALTER COLUMN {change}")
    wide = ("(3, array(5000000000), map(6000000000, 7000000000), array(array(70000)), array(named_struct('x', "
            "8000000000)), map('b', array(1e300)))")
    spark.sql(f"INSERT INTO {t} VALUES {wide}")
    peer.call("sql", statements=[f"CREATE TABLE {d} ({NESTED}) USING delta {props}", f"INSERT INTO {d} VALUES "
                                 f"{NESTED_ROWS}"] + [f"ALTER TABLE {d} ALTER COLUMN {c}" for c in NESTED_WIDENINGS]
              + [f"INSERT INTO {d} VALUES {wide}"])
    # The same schema as delta-spark's at every version: each change on the nearest struct field, with `fieldPath`.
    for version in range(0, log_version(mine) + 1):
        same_log_state(mine, theirs, version)
    changes = {f["name"]: [(c["fromType"], c["toType"], c.get("fieldPath")) for c in f["metadata"]
                           .get("delta.typeChanges", [])] for f in fields(mine)}
    assert changes["m"] == [("integer", "long", "key"), ("short", "integer", "value"), ("integer", "long", "value")]
    assert changes["aa"] == [("byte", "integer", "element.element")] and changes["sa"] == []
    # The files written before the widenings read upcast, alike in Strata and delta-spark: before, midway, after.
    versions = [1, 5, log_version(mine)]
    assert [strata_json(spark, mine, v) for v in versions] == peer.read(mine, versions)
    assert strata_json(spark, mine) == strata_json(spark, theirs)
    assert len(strata_json(spark, mine)) == 3
    # Refused: a narrowing inside an array, and element of a column that is no array.
    with pytest.raises(Exception, match="not a widening|NOT_SUPPORTED_CHANGE_COLUMN|CANNOT_UPDATE_FIELD"):
        spark.sql(f"ALTER TABLE {t} ALTER COLUMN mm.value.element TYPE FLOAT")
    with pytest.raises(Exception, match="element"):
        spark.sql(f"ALTER TABLE {t} ALTER COLUMN id.element TYPE BIGINT")
    # A CHECK constraint on the array holding the element blocks its widening, as on a column.
    spark.sql(f"ALTER TABLE {t} ADD CONSTRAINT has_aa CHECK (aa IS NULL OR size(aa) >= 0)")
    with pytest.raises(Exception, match="has_aa"):
        spark.sql(f"ALTER TABLE {t} ALTER COLUMN aa.element.element TYPE BIGINT")
