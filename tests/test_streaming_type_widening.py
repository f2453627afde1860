"""Strata's streaming source across a type widening (issue 24).

A running query stops at the commit that widens a column it reads (`ALTER COLUMN ... TYPE`), its rows before that
commit delivered once; a restart stops there again (STRATA_STREAM_TYPE_WIDENING naming the column, both types and
option allowSourceColumnTypeChange, delta-spark's reader option) until the option accepts the change, and then reads
on under the widened type (option value `always`, or the version of the change; delta-spark's session conf for
the stream works too). Files written before the widening are read widened: by the restarted query and by a new
query from version 0, whose rows equal delta-spark's stream of the same table.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import strata
from delta_spark_peer import Peer
from test_streaming_column_mapping import failed_run, run, source, stopped_by, written

CONDITION = "STRATA_STREAM_TYPE_WIDENING"
BIG = 2 ** 40


def id_type(spark: SparkSession, out: Path) -> str:
    """The type of column id in the Parquet files a run's file sink wrote (not the directory: see written)."""
    return dict(spark.read.parquet(*[str(f) for f in out.glob("*.parquet")]).dtypes)["id"]


def test_widening_stops_a_running_query_and_a_restart_until_allowed(spark: SparkSession, peer: Peer,
                                                                     tmp_path: Path) -> None:
    a, cp = tmp_path / "a", tmp_path / "cp"
    t = f"strata.`{a}`"
    spark.sql(f"CREATE TABLE {t} (id INT, s STRUCT<f: FLOAT>) USING strata "
              "TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")               # version 0
    spark.sql(f"INSERT INTO {t} VALUES (1, named_struct('f', 1.5)), (2, null)")     # 1
    message = stopped_by(spark, a, tmp_path / "out1", cp, [
        f"INSERT INTO {t} VALUES (3, named_struct('f', 3.5))",                        # 2
        f"ALTER TABLE {t} ALTER COLUMN id TYPE BIGINT",                               # 3
        f"INSERT INTO {t} VALUES ({BIG}, named_struct('f', 4.5))"])                   # 4
    assert CONDITION in message and f"The stream of {t} stops at version 3: ALTER COLUMN id TYPE BIGINT (was INT)" \
        in message, message
    assert "allowSourceColumnTypeChange=always" in message and "startingVersion=3" in message, message
    # The rows before the widening, each once, as INT; none after it.
    assert written(spark, tmp_path / "out1") == (["id", "s"], [(1, (1.5,)), (2, None), (3, (3.5,))])
    assert id_type(spark, tmp_path / "out1") == "int"

    # A restart without the option stops at the same version and delivers nothing. The error names the option's
    # values (always, or this version only) and delta-spark's session conf for this stream (its checkpoint's hash).
    message, rows = failed_run(spark, source(spark, a), tmp_path / "tw_2", cp)
    assert CONDITION in message and "stops at version 3: ALTER COLUMN id TYPE BIGINT (was INT)" in message, message
    assert "allowSourceColumnTypeChange=3 for this version's change only" in message, message
    conf = re.search(r"session conf (spark\.databricks\.delta\.streaming\.allowSourceColumnTypeChange\.ckpt_-?\d+)",
                     message)
    assert conf and rows == [], message
    # With the change's version (Table.stream's argument; delta-spark's option value), the query reads on under
    # BIGINT: only the row after the widening.
    widened = strata.Table.for_path(spark, a).stream(allow_source_column_type_change=3)
    assert run(spark, widened, tmp_path / "tw_3", cp) == (["id", "s"], [(BIG, (4.5,))])
    assert id_type(spark, tmp_path / "tw_3") == "bigint"

    # A nested widening: the query's next run stops at it, naming the field's path; version 3's allowance does not
    # cover it, this stream's session conf set to its version (5) does.
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN s.f TYPE DOUBLE")                          # 5
    spark.sql(f"INSERT INTO {t} VALUES (6, named_struct('f', 6.25))")                   # 6
    message, rows = failed_run(spark, source(spark, a, allowSourceColumnTypeChange="3"), tmp_path / "tw_4", cp)
    assert "stops at version 5: ALTER COLUMN s.f TYPE DOUBLE (was FLOAT)" in message and rows == [], message
    spark.conf.set(conf.group(1), "5")
    try:
        assert run(spark, source(spark, a), tmp_path / "tw_5", cp) == (["id", "s"], [(6, (6.25,))])
    finally:
        spark.conf.unset(conf.group(1))

    # A new query from version 0 reads every file under the widened schema, as delta-spark's stream does.
    rows_from_0 = run(spark, source(spark, a, startingVersion="0"), tmp_path / "tw_6", tmp_path / "cp6")
    assert rows_from_0 == (["id", "s"], [(1, (1.5,)), (2, None), (3, (3.5,)), (6, (6.25,)), (BIG, (4.5,))])
    _, peer_rows = peer.stream({"format": "delta", "path": a, "options": {"startingVersion": "0"}},
                               {"format": "delta", "path": tmp_path / "d"}, tmp_path / "dcp")
    assert sorted(json.loads(r)["id"] for r in peer_rows) == [1, 2, 3, 6, BIG]
    files = [str(f) for f in (tmp_path / "tw_6").glob("*.parquet")]
    assert sorted(peer_rows) == sorted(spark.read.parquet(*files).toJSON().collect())

    # The option takes always, true, false or a version, nothing else.
    message, _ = failed_run(spark, source(spark, a, allowSourceColumnTypeChange="-3"), tmp_path / "tw_7",
                            tmp_path / "cp7")
    assert "allowSourceColumnTypeChange" in message and "always, true, false, or the table version" in message, message
    for bad in ("yes", -1):
        with pytest.raises(strata.InvalidOptionError, match="allow_source_column_type_change must be True, False or "
                           "the version"):
            strata.Table.for_path(spark, a).stream(allow_source_column_type_change=bad)  # type: ignore[arg-type]
