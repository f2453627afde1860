"""strata.write (typed, checked writes), Table.to_df time travel / Table.history(limit); typed JVM errors are in
test_error_translation.py."""
from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import strata
from delta_spark_peer import Peer
from table_reads import strata_json

Row = tuple[Any, ...]


def sales(spark: SparkSession, rows: list[tuple[int, str]]) -> DataFrame:
    return spark.createDataFrame(rows, "id long, country string")


def rows(spark: SparkSession, path: Path, version: int | None = None) -> list[Row]:
    return sorted(tuple(r) for r in strata.Table.for_path(spark, path).to_df(version=version).collect())


def version(spark: SparkSession, path: Path) -> int:
    return strata.Table.for_path(spark, path).version()


def last_commit(spark: SparkSession, path: Path) -> Any:
    return strata.Table.for_path(spark, path).history(limit=1).collect()[0]


def data_files(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*.parquet") if "_delta_log" not in p.parts)


# --- every parameter is checked in Python, before any Spark job -------------------------------------------------

BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("mode", {"mode": "upsert"}, r"mode must be one of 'append', 'overwrite', 'error', 'ignore'; got 'upsert'"),
    ("mode-case", {"mode": "Append"}, r"mode must be one of 'append'"),
    ("compression", {"compression": "brotli"},
     r"compression must be one of 'snappy', 'zstd', 'gzip', 'lz4', 'lz4_raw', 'uncompressed', 'none'; got 'brotli'"),
    ("compression-case", {"compression": "ZSTD"}, r"compression must be one of .*got 'ZSTD'"),
    ("max-records-negative", {"max_records_per_file": -1}, r"max_records_per_file must be a whole number >= 0"),
    ("max-records-bool", {"max_records_per_file": True}, r"max_records_per_file must be a whole number >= 0"),
    ("max-records-str", {"max_records_per_file": "10"}, r"max_records_per_file must be a whole number >= 0"),
    ("app-id-alone", {"app_id": "loader"}, r"app_id and app_version go together"),
    ("app-version-alone", {"app_version": 3}, r"app_id and app_version go together"),
    ("app-id-blank", {"app_id": "  ", "app_version": 1}, r"app_id must be a non-empty string"),
    ("app-version-negative", {"app_id": "a", "app_version": -1}, r"app_version must be a whole number >= 0"),
    ("app-version-float", {"app_id": "a", "app_version": 1.5}, r"app_version must be a whole number >= 0"),
    ("replace-where-append", {"replace_where": "country = 'FR'"},
     r"replace_where must be used with mode 'overwrite' only; got \"mode 'append'\""),
    ("replace-where-error", {"mode": "error", "replace_where": "country = 'FR'"},
     r"replace_where must be used with mode 'overwrite' only"),
    ("replace-where-blank", {"mode": "overwrite", "replace_where": " "}, r"replace_where must be a non-empty SQL"),
    ("dynamic-and-replace-where", {"mode": "overwrite", "replace_where": "country = 'FR'",
                                   "dynamic_partition_overwrite": True},
     r"replace_where and dynamic_partition_overwrite=True cannot be combined"),
    ("dynamic-append", {"dynamic_partition_overwrite": True},
     r"dynamic_partition_overwrite=True must be used with mode 'overwrite' only"),
    ("dynamic-not-bool", {"mode": "overwrite", "dynamic_partition_overwrite": "true"},
     r"dynamic_partition_overwrite must be True or False"),
    ("overwrite-schema-append", {"overwrite_schema": True}, r"overwrite_schema=True must be used with mode 'overwrite'"),
    ("overwrite-schema-replace-where", {"mode": "overwrite", "overwrite_schema": True, "replace_where": "id = 1"},
     r"overwrite_schema=True replaces the whole table: it cannot be combined with replace_where"),
    ("overwrite-schema-dynamic", {"mode": "overwrite", "overwrite_schema": True, "dynamic_partition_overwrite": True},
     r"overwrite_schema=True replaces the whole table"),
    ("overwrite-and-merge-schema", {"mode": "overwrite", "overwrite_schema": True, "merge_schema": True},
     r"merge_schema=True and overwrite_schema=True cannot be combined"),
    ("merge-schema-not-bool", {"merge_schema": 1}, r"merge_schema must be True or False; got 1"),
    ("partition-by-str", {"partition_by": "country"},
     r"partition_by must be a list of column names such as \['country'\], or None; got 'country'"),
    ("partition-by-empty-name", {"partition_by": ["country", ""]}, r"partition_by must be a list of non-empty"),
    ("partition-by-not-str", {"partition_by": ["country", 1]}, r"partition_by must be a list of non-empty"),
    ("partition-by-twice", {"partition_by": ["country", "COUNTRY"]}, r"partition_by must be a list of distinct"),
    ("partition-by-unknown", {"partition_by": ["nope"]},
     r"partition_by must be columns of the DataFrame \(id, country\); got \['nope'\]"),
    ("user-metadata", {"user_metadata": 5}, r"user_metadata must be a string or None; got 5"),
    ("path-empty", {"path": ""}, r"path must be a non-empty str or os.PathLike"),
    ("df", {"df": [(1, "FR")]}, r"df must be a pyspark.sql.DataFrame"),
]


@pytest.mark.parametrize("kwargs,message", [pytest.param(k, m, id=i) for i, k, m in BAD_CALLS])
def test_bad_parameters_raise_before_any_spark_job(spark: SparkSession, table_path: Path,
                                                   kwargs: dict[str, Any], message: str) -> None:
    call: dict[str, Any] = {"df": sales(spark, [(1, "FR")]), "path": table_path, **kwargs}
    group = f"strata-validation-{uuid.uuid4()}"
    spark.sparkContext.setJobGroup(group, "validation must not start jobs")
    try:
        with pytest.raises(strata.InvalidOptionError, match=message) as err:
            strata.write(**call)
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    assert isinstance(err.value, ValueError) and isinstance(err.value, strata.StrataError)
    assert err.value.jvm_class is None
    assert spark.sparkContext.statusTracker().getJobIdsForGroup(group) == []
    assert not table_path.exists()


def test_write_options_maps_parameters_to_connector_options() -> None:
    assert strata.write_options() == {"compression": "snappy"}
    assert strata.write_options("overwrite", replace_where="d = 1") == {"compression": "snappy", "replaceWhere": "d = 1"}
    assert strata.write_options("overwrite") == {"compression": "snappy", "partitionOverwriteMode": "static"}
    assert strata.write_options(
        "overwrite", dynamic_partition_overwrite=True, merge_schema=True, app_id="a", app_version=0,
        user_metadata="m", compression="none", max_records_per_file=0) == {
        "compression": "none", "maxRecordsPerFile": "0", "userMetadata": "m", "txnAppId": "a", "txnVersion": "0",
        "mergeSchema": "true", "partitionOverwriteMode": "dynamic"}
    assert strata.write_options("overwrite", overwrite_schema=True)["overwriteSchema"] == "true"
    assert strata.WRITE_MODES == ("append", "overwrite", "error", "ignore")
    assert "lz4_raw" in strata.COMPRESSION_CODECS


# --- each parameter has its effect on a real table ----------------------------------------------------------------

def test_modes_and_partition_by(spark: SparkSession, table_path: Path) -> None:
    strata.write(sales(spark, [(1, "FR"), (2, "DE")]), table_path, "error", partition_by=["country"])
    assert sorted(p.name for p in table_path.iterdir() if not p.name.startswith("_")) == ["country=DE", "country=FR"]
    assert json.loads(last_commit(spark, table_path).operationParameters["partitionBy"]) == ["country"]
    with pytest.raises(strata.TableExistsError, match="already exists"):
        strata.write(sales(spark, [(3, "FR")]), table_path, "error")
    strata.write(sales(spark, [(3, "FR")]), table_path, "ignore")
    assert version(spark, table_path) == 0
    strata.write(sales(spark, [(3, "FR")]), table_path)  # default mode: append
    strata.write(sales(spark, [(4, "IT")]), str(table_path), "append", partition_by=["country"])
    assert rows(spark, table_path) == [(1, "FR"), (2, "DE"), (3, "FR"), (4, "IT")]
    strata.write(sales(spark, [(9, "ES")]), table_path, "overwrite")
    assert rows(spark, table_path) == [(9, "ES")]
    assert version(spark, table_path) == 3


def test_replace_where_replaces_only_its_partition(spark: SparkSession, table_path: Path) -> None:
    strata.write(sales(spark, [(1, "FR"), (2, "DE"), (3, "FR")]), table_path, partition_by=["country"])
    strata.write(sales(spark, [(10, "FR")]), table_path, "overwrite", replace_where="country = 'FR'")
    assert rows(spark, table_path) == [(2, "DE"), (10, "FR")]
    commit = last_commit(spark, table_path)
    assert commit.operationParameters["mode"] == "Overwrite"
    assert json.loads(commit.operationParameters["predicate"]) == ["country = 'FR'"]
    with pytest.raises(strata.ConstraintViolationError, match=r"^Written rows must match replaceWhere") as err:
        strata.write(sales(spark, [(11, "DE")]), table_path, "overwrite", replace_where="country = 'FR'")
    assert "USER_RAISED_EXCEPTION" not in err.value.message
    assert version(spark, table_path) == 1


def test_dynamic_partition_overwrite(spark: SparkSession, table_path: Path) -> None:
    strata.write(sales(spark, [(1, "FR"), (2, "DE"), (3, "IT")]), table_path, partition_by=["country"])
    strata.write(sales(spark, [(20, "DE"), (21, "ES")]), table_path, "overwrite", dynamic_partition_overwrite=True)
    assert rows(spark, table_path) == [(1, "FR"), (3, "IT"), (20, "DE"), (21, "ES")]
    assert last_commit(spark, table_path).operationParameters["partitionOverwriteMode"] == "DYNAMIC"


def test_static_overwrite_ignores_the_session_partition_overwrite_mode(spark: SparkSession, table_path: Path) -> None:
    strata.write(sales(spark, [(1, "FR"), (2, "DE")]), table_path, partition_by=["country"])
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        strata.write(sales(spark, [(5, "DE")]), table_path, "overwrite")
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    assert rows(spark, table_path) == [(5, "DE")]


def test_merge_schema_adds_a_column(spark: SparkSession, table_path: Path) -> None:
    strata.write(sales(spark, [(1, "FR")]), table_path)
    wider = spark.createDataFrame([(2, "DE", 7.5)], "id long, country string, amount double")
    with pytest.raises(strata.SchemaMismatchError, match=r"^The data does not match the schema .*'amount'") as err:
        strata.write(wider, table_path, "append")
    assert err.value.jvm_class == "io.strata.log.InvalidTableOperationException"
    strata.write(wider, table_path, "append", merge_schema=True)
    df = strata.Table.for_path(spark, table_path).to_df()
    assert df.columns == ["id", "country", "amount"]
    assert sorted(tuple(r) for r in df.collect()) == [(1, "FR", None), (2, "DE", 7.5)]


AUTO_MERGE = "spark.databricks.delta.schema.autoMerge.enabled"


def test_auto_merge_session_conf_evolves_appends_as_delta_spark_does(spark: SparkSession, peer: Peer,
                                                                     tmp_path: Path) -> None:
    """delta-spark's session conf turns mergeSchema on for the session's writes; the write option still decides."""
    mine, theirs = tmp_path / "strata", tmp_path / "delta"
    first, wider = "SELECT 1L AS id, 'FR' AS country", "SELECT 2L AS id, 'DE' AS country, 7.5D AS amount"
    spark.sql(first).write.format("strata").save(str(mine))
    peer.call("write", query=first, path=str(theirs), mode="append")
    spark.conf.set(AUTO_MERGE, "true")
    try:
        with pytest.raises(strata.SchemaMismatchError, match=r"'amount'"), strata.errors.translate():
            spark.sql(wider).write.format("strata").mode("append").option("mergeSchema", "false").save(str(mine))
        spark.sql(wider).write.format("strata").mode("append").save(str(mine))
    finally:
        spark.conf.unset(AUTO_MERGE)
    peer.call("sql", statements=[f"SET {AUTO_MERGE} = true"])
    try:
        peer.send("write", query=wider, path=str(theirs), mode="append", options={"mergeSchema": "false"})
        refused = str(peer.receive().get("error", ""))
        assert refused.startswith("[DELTA_METADATA_MISMATCH]"), refused
        peer.call("write", query=wider, path=str(theirs), mode="append")
    finally:
        peer.call("sql", statements=[f"RESET {AUTO_MERGE}"])
    assert strata_json(spark, mine) == peer.read(theirs)[0] == peer.read(mine)[0]
    assert strata.Table.for_path(spark, mine).to_df().columns == ["id", "country", "amount"]
    with pytest.raises(strata.SchemaMismatchError, match=r"'bonus'"), strata.errors.translate():  # conf unset again
        spark.sql("SELECT 3L AS id, 'IT' AS country, 1.0D AS amount, 2 AS bonus").write.format("strata") \
            .mode("append").save(str(mine))


def test_overwrite_schema_replaces_schema_and_partitioning(spark: SparkSession, table_path: Path) -> None:
    strata.write(sales(spark, [(1, "FR")]), table_path, partition_by=["country"])
    other = spark.createDataFrame([("a", 1)], "name string, day int")
    with pytest.raises(strata.SchemaMismatchError):
        strata.write(other, table_path, "overwrite")
    strata.write(other, table_path, "overwrite", overwrite_schema=True, partition_by=["day"])
    df = strata.Table.for_path(spark, table_path).to_df()
    assert sorted(df.columns) == ["day", "name"] and [tuple(r) for r in df.select("name", "day").collect()] == [("a", 1)]
    assert json.loads(last_commit(spark, table_path).operationParameters["partitionBy"]) == ["day"]


def test_app_id_and_version_make_a_repeat_a_no_op(spark: SparkSession, table_path: Path) -> None:
    batch = sales(spark, [(1, "FR")])
    strata.write(batch, table_path, app_id="loader", app_version=1)
    strata.write(batch, table_path, app_id="loader", app_version=1)  # a retry of batch 1: skipped
    assert version(spark, table_path) == 0 and rows(spark, table_path) == [(1, "FR")]
    strata.write(sales(spark, [(2, "DE")]), table_path, app_id="loader", app_version=2)
    strata.write(sales(spark, [(3, "IT")]), table_path, app_id="loader", app_version=1)  # older: skipped
    strata.write(sales(spark, [(4, "ES")]), table_path, app_id="other", app_version=1)  # another application
    assert version(spark, table_path) == 2
    assert rows(spark, table_path) == [(1, "FR"), (2, "DE"), (4, "ES")]


def test_user_metadata_appears_in_history(spark: SparkSession, table_path: Path) -> None:
    strata.write(sales(spark, [(1, "FR")]), table_path, user_metadata="nightly load 2026-01-31")
    strata.write(sales(spark, [(2, "FR")]), table_path)
    # delta-spark's session conf sets it for every commit of the session (SQL too); the write option wins over it.
    key = "spark.databricks.delta.commitInfo.userMetadata"
    spark.conf.set(key, "from the session")
    try:
        strata.write(sales(spark, [(3, "FR")]), table_path)
        spark.sql(f"DELETE FROM strata.`{table_path}` WHERE id = 3")
        strata.write(sales(spark, [(4, "FR")]), table_path, user_metadata="given")
    finally:
        spark.conf.unset(key)
    history = strata.Table.for_path(spark, table_path).history().collect()
    assert [(r.version, r.userMetadata) for r in history] == [
        (4, "given"), (3, "from the session"), (2, "from the session"), (1, None), (0, "nightly load 2026-01-31")]


@pytest.mark.parametrize("codec,suffix", [("zstd", ".zstd.parquet"), ("gzip", ".gz.parquet"),
                                          ("snappy", ".snappy.parquet")])
def test_compression_changes_the_files(spark: SparkSession, table_path: Path, codec: Any, suffix: str) -> None:
    strata.write(spark.range(100).withColumn("s", F.lit("x")), table_path, compression=codec)
    files = data_files(table_path)
    assert files and all(f.name.endswith(suffix) for f in files), files


def test_uncompressed_files(spark: SparkSession, table_path: Path) -> None:
    strata.write(spark.range(10), table_path, compression="none")
    files = data_files(table_path)
    assert files and all(f.name.endswith(".parquet") and f.name.count(".") == 1 for f in files), files


def test_max_records_per_file(spark: SparkSession, table_path: Path) -> None:
    strata.write(spark.range(0, 50, numPartitions=1), table_path, max_records_per_file=20)
    assert len(data_files(table_path)) == 3
    assert last_commit(spark, table_path).numFiles == 3


# --- Table: time travel by version and timestamp, history(limit) ------------------------------------------------

def test_to_df_by_version_and_timestamp(spark: SparkSession, table_path: Path) -> None:
    strata.write(sales(spark, [(1, "FR")]), table_path)
    time.sleep(1.1)
    between = dt.datetime.now(dt.timezone.utc)
    time.sleep(1.1)
    strata.write(sales(spark, [(2, "DE")]), table_path)
    table = strata.Table.for_path(spark, table_path)
    assert sorted(tuple(r) for r in table.to_df(version=0).collect()) == [(1, "FR")]
    naive_utc = between.replace(tzinfo=None)  # the session time zone is UTC
    plus_five = between.astimezone(dt.timezone(dt.timedelta(hours=5)))
    for ts in (between, plus_five, naive_utc, naive_utc.isoformat(sep=" "), naive_utc.isoformat()):
        assert [tuple(r) for r in table.to_df(timestamp=ts).collect()] == [(1, "FR")], ts
    latest = dt.datetime.fromtimestamp(table.history(limit=1).collect()[0].timestamp.timestamp(), dt.timezone.utc)
    assert table.to_df(timestamp=latest).count() == 2
    # After the latest commit: refused naming the range, as delta-spark does (it used to read the latest version).
    for after in (between + dt.timedelta(hours=1), dt.date.today() + dt.timedelta(days=1)):
        with pytest.raises(strata.StrataError, match="is after the latest commit .* to version 1 at"):
            table.to_df(timestamp=after)
    with pytest.raises(strata.StrataError, match="No version of .* was committed at or before"):
        table.to_df(timestamp="2001-01-01 00:00:00")
    with pytest.raises(strata.StrataError, match="Version 7 of .* does not exist; the latest version is 1"):
        table.to_df(version=7)
    assert [r.version for r in table.history(limit=1).collect()] == [1]
    assert [r.version for r in table.history(limit=5).collect()] == [1, 0]


@pytest.mark.parametrize("kwargs,message", [
    ({"version": 1, "timestamp": "2026-01-01"}, r"version and timestamp cannot be used together"),
    ({"version": -1}, r"version must be a whole number >= 0; got -1"),
    ({"version": True}, r"version must be a whole number >= 0"),
    ({"timestamp": ""}, r"timestamp must be a datetime, a date or a non-empty string"),
    ({"timestamp": "last tuesday"}, r"Option timestampAsOf has invalid value 'last tuesday'"),
])
def test_to_df_bad_parameters(spark: SparkSession, table_path: Path, kwargs: dict[str, Any], message: str) -> None:
    strata.write(sales(spark, [(1, "FR")]), table_path)
    with pytest.raises(strata.InvalidOptionError, match=message):
        strata.Table.for_path(spark, table_path).to_df(**kwargs)


def test_history_limit_must_be_positive(spark: SparkSession, table_path: Path) -> None:
    with pytest.raises(strata.InvalidOptionError, match="limit must be a whole number > 0"):
        strata.Table.for_path(spark, table_path).history(limit=0)


def test_missing_table_is_typed(spark: SparkSession, table_path: Path) -> None:
    table = strata.Table.for_path(spark, table_path)
    for call in (table.to_df, table.version, table.history):
        with pytest.raises(strata.TableNotFoundError, match=r"^No Strata/Delta table at .*table") as err:
            call()
        assert err.value.jvm_class == "io.strata.log.TableNotFoundException"
