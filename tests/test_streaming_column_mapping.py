"""Strata's streaming source on a column-mapped table across RENAME / DROP COLUMN (issue 24).

A running query stops at the commit that renames a column it reads, its rows before that commit delivered once; a
restart stops there again until option allowSourceColumnRename (delta-spark's reader option) accepts the change, and
then reads on under the new name; a new query from that version needs nothing. The same for DROP COLUMN (the rename
option does not accept a drop); an ADD COLUMN afterwards still flows as before. Each run writes Parquet files to a
directory of its own (a file sink recovers from a checkpoint; the memory sink does not).
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

import strata
from delta_spark_peer import Peer

CONDITION = "STRATA_STREAM_NON_ADDITIVE_SCHEMA_CHANGE"


def mapped(spark: SparkSession, path: Path) -> str:
    t = f"strata.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING) USING strata "
              "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    return t


def source(spark: SparkSession, path: Path, **options: str) -> DataFrame:
    return spark.readStream.format("strata").options(**options).load(str(path))


def written(spark: SparkSession, out: Path) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The columns and rows a run's file sink wrote to `out` (none: no files)."""
    files = [str(f) for f in out.glob("*.parquet")]  # not the directory: its sink log starts at a later batch
    if not files:
        return [], []
    df = spark.read.parquet(*files)
    return df.columns, sorted(tuple(r) for r in df.collect())


def start(df: DataFrame, out: Path, checkpoint: Path) -> None:
    """One Trigger.AvailableNow run into Parquet files in `out`."""
    (df.writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(checkpoint))
     .trigger(availableNow=True).start().awaitTermination())


def run(spark: SparkSession, df: DataFrame, out: Path, checkpoint: Path) -> tuple[list[str], list[tuple[Any, ...]]]:
    start(df, out, checkpoint)
    return written(spark, out)


def failed_run(spark: SparkSession, df: DataFrame, out: Path, checkpoint: Path) -> tuple[str, list[tuple[Any, ...]]]:
    """A run that fails: its error and the rows it delivered before."""
    with pytest.raises(Exception) as failed:
        start(df, out, checkpoint)
    return str(failed.value), written(spark, out)[1]


def stopped_by(spark: SparkSession, table: Path, out: Path, checkpoint: Path, statements: list[str]) -> str:
    """Starts a query into Parquet files in `out`, lets it read the table, runs `statements` (the schema change among
    them), and returns the error the running query then stops with."""
    q = (source(spark, table).writeStream.format("parquet").option("path", str(out))
         .option("checkpointLocation", str(checkpoint)).start())
    try:
        q.processAllAvailable()
        for statement in statements:
            spark.sql(statement)
        with pytest.raises(Exception) as failed:
            q.processAllAvailable()
    finally:
        q.stop()
    return str(failed.value)


def test_rename_stops_a_running_query_and_a_restart_until_allowed(spark: SparkSession, peer: Peer,
                                                                   tmp_path: Path) -> None:
    a, cp = tmp_path / "a", tmp_path / "cp"
    t = mapped(spark, a)                                              # version 0
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")           # 1
    message = stopped_by(spark, a, tmp_path / "out1", cp, [
        f"INSERT INTO {t} VALUES (3, 'c')",                           # 2
        f"ALTER TABLE {t} RENAME COLUMN v TO w",                      # 3
        f"INSERT INTO {t} VALUES (4, 'd')"])                          # 4
    assert CONDITION in message and f"The stream of {t} stops at version 3: RENAME COLUMN v TO w" in message, message
    assert "allowSourceColumnRename=always" in message and "startingVersion=3" in message, message
    # The rows before the rename, each once, under the old name; none after it.
    assert written(spark, tmp_path / "out1") == (["id", "v"], [(1, "a"), (2, "b"), (3, "c")])

    # A restart without the option stops at the same version and delivers nothing.
    message, rows = failed_run(spark, source(spark, a), tmp_path / "cm_rename_2", cp)
    assert CONDITION in message and "stops at version 3: RENAME COLUMN v TO w" in message, message
    assert rows == []
    # With it, the query reads on under the new name: only the row after the rename.
    assert run(spark, source(spark, a, allowSourceColumnRename="always"), tmp_path / "cm_rename_3", cp) == (
        ["id", "w"], [(4, "d")])
    # A new query from the rename's version needs no option.
    assert run(spark, source(spark, a, startingVersion="3"), tmp_path / "cm_rename_4", tmp_path / "cp4") == (
        ["id", "w"], [(4, "d")])
    # A new query from before it reads every row under the new name (its one schema): delta-spark, without a schema
    # log, refuses that start instead (and sees Strata's commit 3 as a rename).
    assert run(spark, source(spark, a, startingVersion="1"), tmp_path / "cm_rename_5", tmp_path / "cp5") == (
        ["id", "w"], [(1, "a"), (2, "b"), (3, "c"), (4, "d")])
    with pytest.raises(AssertionError, match="DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE"):
        peer.stream({"format": "delta", "path": a, "options": {"startingVersion": "1"}},
                    {"format": "delta", "path": tmp_path / "d"}, tmp_path / "dcp")


def test_drop_stops_a_restart_until_allowed_then_add_column_flows(spark: SparkSession, tmp_path: Path) -> None:
    a, cp = tmp_path / "a", tmp_path / "cp"
    t = mapped(spark, a)                                              # version 0
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")           # 1
    assert run(spark, source(spark, a), tmp_path / "cm_drop_1", cp) == (["id", "v"], [(1, "a"), (2, "b")])
    spark.sql(f"INSERT INTO {t} VALUES (3, 'c')")                     # 2
    spark.sql(f"ALTER TABLE {t} DROP COLUMN v")                       # 3
    spark.sql(f"INSERT INTO {t} VALUES (4)")                          # 4
    # The query restarted on the changed table: version 2's row delivered (under the new schema), then the stop.
    message, rows = failed_run(spark, source(spark, a), tmp_path / "cm_drop_2", cp)
    assert CONDITION in message and f"The stream of {t} stops at version 3: DROP COLUMN v" in message, message
    assert "allowSourceColumnDrop=always" in message, message
    assert rows == [(3,)]
    # The rename option does not accept a drop (here through Table.stream's argument).
    renames = strata.Table.for_path(spark, a).stream(allow_source_column_rename=True)
    message, rows = failed_run(spark, renames, tmp_path / "cm_drop_3", cp)
    assert "stops at version 3: DROP COLUMN v" in message and rows == [], message
    assert run(spark, source(spark, a, allowSourceColumnRenameAndDrop="true"), tmp_path / "cm_drop_4", cp) == (
        ["id"], [(4,)])
    # An additive change keeps working: ADD COLUMN, then a restart reads the new column.
    spark.sql(f"ALTER TABLE {t} ADD COLUMNS (x INT)")                 # 5
    spark.sql(f"INSERT INTO {t} VALUES (5, 50)")                      # 6
    assert run(spark, source(spark, a), tmp_path / "cm_drop_5", cp) == (["id", "x"], [(5, 50)])

    # Options refused when the query starts: no schema log here, and only always / true / false / a version.
    message, _ = failed_run(spark, source(spark, a, schemaTrackingLocation=str(tmp_path / "s")), tmp_path / "cm_drop_6",
                            tmp_path / "cp6")
    assert "Option 'schemaTrackingLocation' is not supported" in message and "allowSourceColumnRename" in message
    message, _ = failed_run(spark, source(spark, a, allowSourceColumnDrop="maybe"), tmp_path / "cm_drop_7", tmp_path / "cp7")
    assert "allowSourceColumnDrop" in message and "always, true, false, or the table version" in message, message
    with pytest.raises(strata.InvalidOptionError, match="allow_source_column_drop must be True, False or the version"):
        strata.Table.for_path(spark, a).stream(allow_source_column_drop="yes")  # type: ignore[arg-type]


def test_per_stream_conf_is_the_one_delta_spark_names_for_the_checkpoint(spark: SparkSession, peer: Peer,
                                                                          tmp_path: Path) -> None:
    """delta-spark names the session conf that lets one stream past a rename `....allowSourceColumnRename.ckpt_<hash>`
    (the hash of the source's checkpoint location); Strata reads that same conf for a stream with that checkpoint."""
    a, cp = tmp_path / "a", tmp_path / "cp"
    t = mapped(spark, a)                                              # version 0
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a')")                     # 1
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN v TO w")                # 2
    spark.sql(f"INSERT INTO {t} VALUES (2, 'b')")                     # 3
    # delta-spark with a schema log: runs stop as it records the schema, then the rename; the next names the confs.
    theirs = {"format": "delta", "path": a, "options": {"schemaTrackingLocation": str(cp / "_schema_log"),
                                                        "startingVersion": "1"}}
    messages: list[str] = []
    while len(messages) < 4 and not any(".ckpt_" in m for m in messages):
        with pytest.raises(AssertionError) as stopped:
            peer.stream(theirs, {"format": "delta", "path": tmp_path / "d"}, cp)
        messages.append(str(stopped.value))
    found = re.search(r"SET (spark\.databricks\.delta\.streaming\.allowSourceColumnRename\.ckpt_-?\d+) = 2;",
                      messages[-1])
    assert found, messages
    conf = found.group(1)
    shutil.rmtree(cp)
    # Strata, a table with the same history and a query with the same checkpoint location: a restart across the
    # rename stops, naming that conf, and the conf alone lets it past.
    b = tmp_path / "b"
    t = mapped(spark, b)
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a')")
    assert run(spark, source(spark, b), tmp_path / "o1", cp) == (["id", "v"], [(1, "a")])
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN v TO w")
    spark.sql(f"INSERT INTO {t} VALUES (2, 'b')")
    message, _ = failed_run(spark, source(spark, b), tmp_path / "o2", cp)
    assert CONDITION in message and conf in message, message
    spark.conf.set(conf, "2")
    try:
        assert run(spark, source(spark, b), tmp_path / "o3", cp) == (["id", "w"], [(2, "b")])
    finally:
        spark.conf.unset(conf)
