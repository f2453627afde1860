"""Column mapping (PROTOCOL.md "Column Mapping", modes `name` and `id`): tables delta-spark creates, renames and
drops columns in are read by Strata identically at every version (path reads V1, catalog reads V2, time travel,
filters that prune partitions and skip files by statistics, aggregates answered from the log), and by deltalake."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from delta_spark_peer import Peer
from table_reads import (commit_actions, delta_rs_tuples, log_version, session_time_zone, strata_json,
                         strata_tuples)

MODES = ["name", "id"]
GOLDEN = Path(os.environ.get("STRATA_GOLDEN_TABLES", "/work/shared/fixtures/delta-golden"))
GOLDEN_MAPPED = ["table-with-columnmapping-mode-name", "table-with-columnmapping-mode-id",
                 "data-reader-timestamp_ntz-name-mode", "data-reader-timestamp_ntz-id-mode",
                 "data-skipping-basic-stats-all-types-columnmapping-name",
                 "data-skipping-basic-stats-all-types-columnmapping-id", "dv-with-columnmapping"]


def delta_sql(peer: Peer, path: Path, *statements: str) -> None:
    """Runs statements in the delta-spark peer, `{t}` standing for the table delta.`path`."""
    peer.call("sql", statements=[s.format(t=f"delta.`{path}`") for s in statements])


def history(mode: str) -> list[str]:
    """Renames and drops of top-level, nested (struct, array element, map value) and partition columns, names with
    spaces and dots, a column dropped and re-added under the same name, with inserts between them."""
    return [
        "CREATE TABLE {t} (id BIGINT, `a b` STRING, `x.y` INT, s STRUCT<f1: INT, `f.2`: STRING>, "
        "arr ARRAY<STRUCT<e: INT>>, m MAP<STRING, STRUCT<v: INT>>, p STRING, ts TIMESTAMP) USING delta "
        f"PARTITIONED BY (p) TBLPROPERTIES ('delta.columnMapping.mode' = '{mode}')",
        "INSERT INTO {t} VALUES (1, 'one', 10, named_struct('f1', 1, 'f.2', 'x'), array(named_struct('e', 1)), "
        "map('k', named_struct('v', 1)), 'A', TIMESTAMP'2024-03-10 01:30:00'), "
        "(2, 'two', 20, named_struct('f1', 2, 'f.2', 'y'), array(), map(), 'B', NULL)",
        "ALTER TABLE {t} RENAME COLUMN `a b` TO `c.d e`",
        "ALTER TABLE {t} RENAME COLUMN s.f1 TO g1",
        "ALTER TABLE {t} RENAME COLUMN arr.element.e TO e2",
        "ALTER TABLE {t} RENAME COLUMN m.value.v TO w",
        "INSERT INTO {t} VALUES (3, 'three', 30, named_struct('g1', 3, 'f.2', 'z'), array(named_struct('e2', 3)), "
        "map('k3', named_struct('w', 3)), 'A', TIMESTAMP'2024-11-03 01:30:00')",
        "ALTER TABLE {t} RENAME COLUMN p TO `part col`",
        "INSERT INTO {t} VALUES (4, 'four', 40, NULL, NULL, NULL, 'C', NULL)",
        "ALTER TABLE {t} DROP COLUMN `x.y`",
        "INSERT INTO {t} VALUES (5, 'five', NULL, NULL, NULL, 'C', NULL)",
        "ALTER TABLE {t} ADD COLUMNS (`x.y` INT)",
        "INSERT INTO {t} VALUES (6, 'six', NULL, NULL, NULL, 'B', NULL, 66)",
        # a swap: each name now holds the other column's values
        "ALTER TABLE {t} RENAME COLUMN id TO tmp",
        "ALTER TABLE {t} RENAME COLUMN `x.y` TO id",
        "ALTER TABLE {t} RENAME COLUMN tmp TO `x.y`",
        "ALTER TABLE {t} DROP COLUMN s.`f.2`",
    ]


@pytest.fixture(scope="module", params=MODES)
def renamed_table(request: pytest.FixtureRequest, peer: Peer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A table delta-spark built with history(mode), one per mode."""
    path = tmp_path_factory.mktemp(f"colmap_{request.param}") / "t"
    delta_sql(peer, path, *history(request.param))
    return path


def test_every_version_reads_as_delta_spark_reads_it(spark: SparkSession, peer: Peer, renamed_table: Path) -> None:
    path = renamed_table
    versions = list(range(log_version(path) + 1))
    expected = peer.read(path, versions)
    for v in versions:
        assert strata_json(spark, path, v) == expected[v], f"version {v}"
        # the catalog (V2) read of the same version
        rows = sorted(spark.sql(f"SELECT * FROM strata.`{path}` VERSION AS OF {v}").toJSON().collect())
        assert rows == expected[v], f"version {v} through the catalog"
    # a non-UTC session: partition and data timestamps read as delta-spark reads them there
    with session_time_zone(spark, "America/Los_Angeles") as zone:
        assert strata_json(spark, path) == peer.read(path, None, time_zone=zone)[0]


@pytest.mark.parametrize("name", GOLDEN_MAPPED)
def test_golden_mapped_tables_read_as_delta_spark_reads_them(spark: SparkSession, peer: Peer, tmp_path: Path,
                                                             name: str) -> None:
    """delta-spark's own test tables with column mapping (name and id; nested, NTZ, every stats type, deletion
    vectors), every version, in UTC and in a non-UTC session (timestamp_ntz values must not move)."""
    path = Path(shutil.copytree(GOLDEN / name, tmp_path / name))
    versions = list(range(log_version(path) + 1))
    expected = peer.read(path, versions)
    for v in versions:
        assert strata_json(spark, path, v) == expected[v], f"version {v}"
    with session_time_zone(spark, "Asia/Kolkata") as zone:
        assert strata_json(spark, path) == peer.read(path, None, time_zone=zone)[0]


def test_schema_shows_logical_names_without_mapping_keys(spark: SparkSession, renamed_table: Path) -> None:
    df = spark.read.format("strata").load(str(renamed_table))
    assert df.columns == ["x.y", "c.d e", "s", "arr", "m", "part col", "ts", "id"]
    assert df.schema["s"].dataType.simpleString() == "struct<g1:int>"
    assert df.schema["arr"].dataType.simpleString() == "array<struct<e2:int>>"
    assert df.schema["m"].dataType.simpleString() == "map<string,struct<w:int>>"
    for field in df.schema.fields:
        assert not any(k.startswith("delta.columnMapping") or k == "parquet.field.id" for k in field.metadata)


QUERIES = [
    "SELECT * FROM {t} WHERE `part col` = 'A'",
    "SELECT `x.y`, `c.d e` FROM {t} WHERE `x.y` >= 3",
    "SELECT `x.y`, id FROM {t} WHERE id = 66",
    "SELECT s.g1, arr[0].e2, m['k3'].w FROM {t} WHERE s.g1 = 3",
    "SELECT `c.d e` FROM {t} WHERE `c.d e` LIKE 't%' AND `part col` <> 'B'",
    "SELECT count(*), min(`x.y`), max(`x.y`), count(id) FROM {t}",
    "SELECT `part col`, count(*), max(`x.y`) FROM {t} GROUP BY `part col`",
]


@pytest.mark.parametrize("query", QUERIES)
def test_filters_and_aggregates_match_delta_spark(spark: SparkSession, peer: Peer, renamed_table: Path,
                                                  query: str) -> None:
    expected = peer.call("query", sql=query.format(t=f"delta.`{renamed_table}`"))["rows"]
    for table in (f"strata.`{renamed_table}`", "v1"):
        spark.read.format("strata").load(str(renamed_table)).createOrReplaceTempView("v1")
        assert sorted(spark.sql(query.format(t=table)).toJSON().collect()) == expected, table


def test_pruning_and_skipping_use_physical_names(spark: SparkSession, renamed_table: Path) -> None:
    """The log keys partition values and statistics by physical name: pruning and skipping still select files."""
    df = spark.read.format("strata").load(str(renamed_table))
    all_files = len(df.inputFiles())
    assert 0 < len(df.where("`part col` = 'A'").inputFiles()) < all_files
    # only the file of the last insert holds `x.y` = 6 (its min/max statistics say so)
    assert len(df.where("`x.y` = 6").inputFiles()) == 1
    assert df.where("`x.y` = 6").count() == 1


def test_deltalake_reads_the_same_rows(spark: SparkSession, renamed_table: Path) -> None:
    columns = ["x.y", "c.d e", "part col", "id"]
    quoted = [f"`{c}`" for c in columns]
    assert delta_rs_tuples(renamed_table, columns) == strata_tuples(spark, renamed_table, quoted)


# --- Strata writing into mapped tables -------------------------------------------------------------------------

def mapped_table(peer: Peer, path: Path, mode: str, properties: str = "") -> None:
    """A table delta-spark created with column mapping, with a renamed partition column and a renamed nested field."""
    delta_sql(
        peer, path,
        "CREATE TABLE {t} (id BIGINT, `a b` STRING, s STRUCT<f1: INT, f2: STRING>, p STRING) USING delta "
        f"PARTITIONED BY (p) TBLPROPERTIES ('delta.columnMapping.mode' = '{mode}'{properties})",
        "INSERT INTO {t} VALUES (1, 'one', named_struct('f1', 1, 'f2', 'x'), 'A'), "
        "(2, 'two', named_struct('f1', 2, 'f2', 'y'), 'B'), (3, 'three', NULL, 'B')",
        "ALTER TABLE {t} RENAME COLUMN `a b` TO `c.d`",
        "ALTER TABLE {t} RENAME COLUMN s.f1 TO g",
        "ALTER TABLE {t} RENAME COLUMN p TO q",
    )


def assert_same_everywhere(spark: SparkSession, peer: Peer, path: Path) -> None:
    """delta-spark reads what Strata reads, and deltalake too (its top-level, non-nested columns)."""
    assert strata_json(spark, path) == peer.read(path)[0]
    columns = ["id", "c.d", "q"]
    assert delta_rs_tuples(path, columns) == strata_tuples(spark, path, [f"`{c}`" for c in columns])


def data_file_schemas(path: Path, version: int) -> list[Any]:
    """The Parquet schemas (pyarrow) of the files a commit added."""
    return [pq.read_schema(path / unquote(a["add"]["path"])) for a in commit_actions(path, version) if "add" in a]


@pytest.mark.parametrize("mode", MODES)
def test_appends_write_physical_names_and_field_ids(spark: SparkSession, peer: Peer, tmp_path: Path,
                                                   mode: str) -> None:
    path = tmp_path / "t"
    mapped_table(peer, path, mode)
    df = spark.createDataFrame([(4, "four", (4, "z"), "A"), (5, None, None, "C")],
                               "id long, `c.d` string, s struct<g: int, f2: string>, q string")
    df.write.format("strata").mode("append").save(str(path))  # V1
    spark.sql(f"INSERT INTO strata.`{path}` VALUES (6, 'six', named_struct('g', 6, 'f2', 'w'), 'B')")  # V2
    assert_same_everywhere(spark, peer, path)
    # the files hold physical names and field ids; the log's partition values and statistics physical names
    for version in (log_version(path) - 1, log_version(path)):
        for schema in data_file_schemas(path, version):
            names = schema.names
            assert all(n.startswith("col-") for n in names), names
            assert all(schema.field(n).metadata and b"PARQUET:field_id" in schema.field(n).metadata for n in names)
        for action in commit_actions(path, version):
            if "add" in action:
                assert all(k.startswith("col-") for k in action["add"]["partitionValues"])
                assert all(k.startswith("col-") for k in json_keys(action["add"]["stats"]))
    # data skipping on a Strata-written file: the new rows' statistics are found under physical names
    files = spark.read.format("strata").load(str(path)).where("id = 6").inputFiles()
    assert len(files) == 1


def json_keys(stats: str) -> list[str]:
    return list(json.loads(stats)["minValues"].keys())


@pytest.mark.parametrize("mode", MODES)
def test_schema_evolution_gives_new_columns_ids_and_physical_names(spark: SparkSession, peer: Peer, tmp_path: Path,
                                                                   mode: str) -> None:
    path = tmp_path / "t"
    mapped_table(peer, path, mode)
    before = [a["metaData"] for v in range(log_version(path) + 1) for a in commit_actions(path, v) if "metaData" in a][-1]
    max_before = int(before["configuration"]["delta.columnMapping.maxColumnId"])
    df = spark.createDataFrame([(7, "seven", (7, "v"), "A", 70)],
                               "id long, `c.d` string, s struct<g: int, f2: string>, q string, `new col` int")
    df.write.format("strata").mode("append").option("mergeSchema", "true").save(str(path))
    meta = [a["metaData"] for a in commit_actions(path, log_version(path)) if "metaData" in a][0]
    assert int(meta["configuration"]["delta.columnMapping.maxColumnId"]) == max_before + 1
    field = [f for f in json.loads(meta["schemaString"])["fields"] if f["name"] == "new col"][0]
    assert field["metadata"]["delta.columnMapping.id"] == max_before + 1
    assert field["metadata"]["delta.columnMapping.physicalName"].startswith("col-")
    assert "parquet.field.id" not in field["metadata"]
    assert_same_everywhere(spark, peer, path)
    # delta-spark continues writing the evolved table
    delta_sql(peer, path, "INSERT INTO {t} VALUES (8, 'eight', NULL, 'C', 80)")
    assert_same_everywhere(spark, peer, path)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dv", [False, True])
def test_dml_and_optimize_on_mapped_tables(spark: SparkSession, peer: Peer, tmp_path: Path, mode: str,
                                           dv: bool) -> None:
    path = tmp_path / "t"
    mapped_table(peer, path, mode, ", 'delta.enableDeletionVectors' = 'true'" if dv else "")
    t = f"strata.`{path}`"
    spark.sql(f"INSERT INTO {t} VALUES (4, 'four', named_struct('g', 4, 'f2', 'z'), 'A')")
    spark.sql(f"UPDATE {t} SET `c.d` = upper(`c.d`), s.g = s.g * 10 WHERE id >= 2")
    assert_same_everywhere(spark, peer, path)
    spark.sql(f"DELETE FROM {t} WHERE q = 'A' AND id = 1")
    spark.sql(f"DELETE FROM {t} WHERE `c.d` = 'THREE'")
    assert_same_everywhere(spark, peer, path)
    spark.createDataFrame([(2, "deux", "B"), (9, "neuf", "C")], "id long, name string, q string") \
        .createOrReplaceTempView("src")
    spark.sql(f"MERGE INTO {t} USING src ON {t}.id = src.id "
              "WHEN MATCHED THEN UPDATE SET `c.d` = src.name "
              "WHEN NOT MATCHED THEN INSERT (id, `c.d`, s, q) VALUES (src.id, src.name, NULL, src.q)")
    assert_same_everywhere(spark, peer, path)
    spark.sql(f"CALL strata.system.optimize(table => '{path}')").collect()
    assert_same_everywhere(spark, peer, path)
    # delta-spark continues on what Strata wrote: DML and a rename
    delta_sql(peer, path, "UPDATE {t} SET id = id + 100 WHERE q = 'B'", "ALTER TABLE {t} RENAME COLUMN id TO ident")
    assert_same_everywhere_renamed(spark, peer, path)


def assert_same_everywhere_renamed(spark: SparkSession, peer: Peer, path: Path) -> None:
    assert strata_json(spark, path) == peer.read(path)[0]
    columns = ["ident", "c.d", "q"]
    assert delta_rs_tuples(path, columns) == strata_tuples(spark, path, [f"`{c}`" for c in columns])


def test_streaming_sink_writes_mapped_tables(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    path = tmp_path / "t"
    mapped_table(peer, path, "name")
    source = tmp_path / "source"
    spark.createDataFrame([(10, "ten", (10, "s"), "S"), (11, "eleven", None, "S")],
                          "id long, `c.d` string, s struct<g: int, f2: string>, q string").write.parquet(str(source))
    query = (spark.readStream.schema("id long, `c.d` string, s struct<g: int, f2: string>, q string")
             .parquet(str(source)).writeStream.format("strata")
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start(str(path)))
    query.awaitTermination()
    assert_same_everywhere(spark, peer, path)
