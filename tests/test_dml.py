"""The Python DML API (Table.delete / update / merge) end to end: contents, exact commit metrics, typed errors that
commit nothing, Columns and SQL strings, path and catalog tables, and a non-UTC session with date/timestamp keys."""
from __future__ import annotations

import datetime as dt
import decimal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import strata
from strata import DeleteMetrics, MergeMetrics

SCHEMA = "id long, v string, p string"


def rows(df: DataFrame) -> list[tuple[object, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def path_table(spark: SparkSession, path: Path, data: list[tuple[object, ...]], schema: str = SCHEMA,
               partition_by: list[str] | None = None) -> strata.Table:
    """A table written in one task per partition value: one file per partition (one file if unpartitioned)."""
    strata.write(spark.createDataFrame(data, schema).coalesce(1), path, partition_by=partition_by or [])
    return strata.Table.for_path(spark, path)


@pytest.fixture
def named(spark: SparkSession) -> Iterator[str]:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.dml")
    name = f"strata.dml.t_{uuid.uuid4().hex[:8]}"
    yield name
    spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_delete_and_update_on_a_path_table(spark: SparkSession, table_path: Path) -> None:
    t = path_table(spark, table_path, [(i, f"v{i}", "a" if i < 4 else "b") for i in range(8)], partition_by=["p"])
    m = t.delete("id = 1 OR id IS NULL")
    assert m == DeleteMetrics(version=1, num_deleted_rows=1, num_copied_rows=3, num_removed_files=1,
                              num_added_files=1, num_removed_bytes=m.num_removed_bytes,
                              num_added_bytes=m.num_added_bytes)
    assert m.num_removed_bytes > 0 and m.num_added_bytes > 0
    whole = t.delete(F.col("p") == F.lit("b"))  # a whole partition: removes only
    assert (whole.version, whole.num_deleted_rows, whole.num_removed_files, whole.num_added_files) == (2, 4, 1, 0)
    u = t.update({"v": F.concat(F.col("v"), F.lit("'x")), "p": "'c'"}, F.col("id") >= 2)  # moves rows to p=c
    assert (u.version, u.num_removed_files, u.num_added_files) == (3, 1, 2)  # p=a keeps id 0; p=c is new
    assert (u.num_updated_rows, u.num_copied_rows) == (2, 1)
    assert rows(t.to_df()) == [(0, "v0", "a"), (2, "v2'x", "c"), (3, "v3'x", "c")]
    assert t.delete("id = 99") == DeleteMetrics(4, 0, 0, 0, 0, 0, 0)  # Strata commits even an empty DELETE
    assert t.delete() .num_deleted_rows == 3 and rows(t.to_df()) == []


def test_every_merge_clause_with_exact_metrics(spark: SparkSession, named: str) -> None:
    spark.sql(f"CREATE TABLE {named} (id BIGINT, v STRING, n INT) USING strata")
    spark.createDataFrame([(i, f"t{i}", 0) for i in range(1, 9)], "id long, v string, n int").coalesce(1) \
        .writeTo(named).append()
    t = strata.Table.for_name(spark, named)
    source = spark.createDataFrame(
        [(1, "s1", False), (2, "s2", True), (3, "s3", False), (20, "s20", False), (21, "s21", True)],
        "id long, v string, gone boolean")
    m = (t.merge(source, F.col("target.id") == F.col("source.id"))
         .when_matched_delete("source.gone")
         .when_matched_update({"v": "source.v", "n": F.col("target.n") + 1}, F.col("target.id") == 1)
         .when_matched_update({"v": F.upper("source.v")})
         .when_not_matched_insert({"id": "source.id", "v": F.lit("new"), "n": F.lit(7)}, "NOT source.gone")
         .when_not_matched_by_source_update({"n": "-1"}, F.col("target.id").isin(4, 5))
         .when_not_matched_by_source_delete("target.id >= 7")
         .execute())
    assert m == MergeMetrics(
        version=2, num_target_rows_inserted=1, num_target_rows_updated=4, num_target_rows_deleted=3,
        num_target_rows_copied=1, num_target_rows_matched_updated=2, num_target_rows_matched_deleted=1,
        num_target_rows_not_matched_by_source_updated=2, num_target_rows_not_matched_by_source_deleted=2,
        num_output_rows=6, num_target_files_removed=1, num_target_files_added=1,
        num_target_bytes_removed=m.num_target_bytes_removed, num_target_bytes_added=m.num_target_bytes_added)
    assert rows(t.to_df()) == [(1, "s1", 1), (20, "new", 7), (3, "S3", 0), (4, "t4", -1), (5, "t5", -1),
                               (6, "t6", 0)]
    assert not [v for v in spark.catalog.listTables() if v.name.startswith("strata_merge_source_")]

    again = spark.createDataFrame([(3, "x", 9), (30, "y", 9)], "id long, v string, n int")
    m2 = (t.merge(again, "t.id = s.id", source_alias="s", target_alias="t")
          .when_matched_update_all("s.n > 5").when_not_matched_insert_all().execute())
    assert (m2.num_target_rows_updated, m2.num_target_rows_inserted, m2.num_target_rows_copied) == (1, 1, 5)  # one file held all 6
    assert rows(t.to_df()) == [(1, "s1", 1), (20, "new", 7), (3, "x", 9), (30, "y", 9), (4, "t4", -1),
                               (5, "t5", -1), (6, "t6", 0)]
    assert t.version() == 3 and t.history(limit=1).first()["operation"] == "MERGE"


def test_merge_with_schema_evolution_adds_the_new_column(spark: SparkSession, named: str) -> None:
    spark.sql(f"CREATE TABLE {named} (id BIGINT, v STRING) USING strata")
    spark.sql(f"INSERT INTO {named} VALUES (1, 'a'), (2, 'b')")
    t = strata.Table.for_name(spark, named)
    source = spark.createDataFrame([(2, "B", 2.5), (3, "C", 3.5)], "id long, v string, score double")
    m = (t.merge(source, "target.id = source.id").when_matched_update_all().when_not_matched_insert_all()
         .with_schema_evolution().execute())
    assert (m.num_target_rows_updated, m.num_target_rows_inserted) == (1, 1)
    assert t.to_df().columns == ["id", "v", "score"]
    assert rows(t.to_df()) == [(1, "a", None), (2, "B", 2.5), (3, "C", 3.5)]


def test_cardinality_violation_commits_nothing(spark: SparkSession, table_path: Path) -> None:
    t = path_table(spark, table_path, [(1, "a", "x"), (2, "b", "x")])
    dup = spark.createDataFrame([(1, "one", "x"), (1, "uno", "x")], SCHEMA)
    with pytest.raises(strata.MergeCardinalityError, match="MERGE_CARDINALITY_VIOLATION"):
        t.merge(dup, "target.id = source.id").when_matched_update_all().execute()
    assert t.version() == 0 and rows(t.to_df()) == [(1, "a", "x"), (2, "b", "x")]
    assert not [v for v in spark.catalog.listTables() if v.name.startswith("strata_merge_source_")]


def test_constraint_violations_in_update_and_merge_commit_nothing(spark: SparkSession, named: str) -> None:
    spark.sql(f"CREATE TABLE {named} (id BIGINT NOT NULL, v STRING, CONSTRAINT pos CHECK (id > 0)) USING strata")
    spark.sql(f"INSERT INTO {named} VALUES (1, 'a'), (2, 'b')")
    t = strata.Table.for_name(spark, named)
    with pytest.raises(strata.ConstraintViolationError, match=r"CHECK constraint pos \(id > 0\) violated"):
        t.update({"id": "id - 5"}, "id = 2")
    with pytest.raises(strata.ConstraintViolationError, match="NOT_NULL_ASSERT_VIOLATION"):
        t.update({"id": "CAST(NULL AS BIGINT)"}, "v = 'a'")
    src = spark.createDataFrame([(9, "z")], "id long, v string")
    with pytest.raises(strata.ConstraintViolationError, match="CHECK constraint pos"):
        t.merge(src, "target.id = source.id").when_not_matched_insert({"id": "-source.id", "v": "v"}).execute()
    assert t.version() == 1 and rows(t.to_df()) == [(1, "a"), (2, "b")]


def test_session_catalog_table_using_strata(spark: SparkSession) -> None:
    name = f"default.dml_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE TABLE {name} (id BIGINT, v STRING) USING strata")
    try:
        spark.sql(f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        t = strata.Table.for_name(spark, name)
        assert t.delete(F.col("v").isin("a", "c")).num_deleted_rows == 2
        assert (t.update({"v": "upper(v)"}).version, rows(t.to_df())) == (3, [(2, "B")])
    finally:
        spark.sql(f"DROP TABLE {name}")


def test_bad_input_names_what_is_wrong(spark: SparkSession, table_path: Path) -> None:
    t = path_table(spark, table_path, [(1, "a", "x")])
    src = spark.createDataFrame([(1, "b", "x")], SCHEMA)
    with pytest.raises(strata.InvalidOptionError, match=r"update\(set\) is empty"):
        t.update({})
    with pytest.raises(TypeError, match=r"update\(set\) must be a dict"):
        t.update("v = 'x'")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"delete\(condition\) must be a SQL string .* got int"):
        t.delete(5)  # type: ignore[arg-type]
    with pytest.raises(strata.InvalidOptionError, match="has no clauses"):
        t.merge(src, "target.id = source.id").execute()
    with pytest.raises(TypeError, match=r"bound to one DataFrame .*col\('source.col'\)"):
        t.merge(src, src["id"] == F.col("target.id"))
    with pytest.raises(TypeError, match=r"PythonUDF .*cannot be rendered as SQL"):
        t.delete(F.udf(lambda x: True, "boolean")(F.col("id")))
    with pytest.raises(strata.InvalidOptionError, match="must differ"):
        t.merge(src, "x", source_alias="a", target_alias="a")
    with pytest.raises(ValueError, match="empty string"):
        t.delete("  ")
    assert t.version() == 0


def test_non_utc_session_with_date_and_timestamp_keys(spark: SparkSession, table_path: Path) -> None:
    """In America/Los_Angeles, the two instants of the repeated hour 01:30 on 2024-11-03 stay distinct through
    Column literals (rendered as exact instants) and explicit-offset SQL strings."""
    la_pdt = dt.datetime(2024, 11, 3, 8, 30, tzinfo=dt.timezone.utc)  # 01:30 PDT
    la_pst = dt.datetime(2024, 11, 3, 9, 30, tzinfo=dt.timezone.utc)  # 01:30 PST
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        schema = "d date, ts timestamp, amt decimal(10,2), v string"
        t = path_table(spark, table_path, [
            (dt.date(2024, 3, 10), la_pdt, decimal.Decimal("1.10"), "pdt"),
            (dt.date(2024, 3, 10), la_pst, decimal.Decimal("2.20"), "pst"),
            (dt.date(2024, 11, 3), dt.datetime(2024, 3, 10, 10, tzinfo=dt.timezone.utc), None, "spring")],
            schema, partition_by=["d"])
        assert t.update({"v": F.lit("PST")}, F.col("ts") == F.lit(la_pst)).num_removed_files == 1
        assert t.delete("ts = TIMESTAMP '2024-11-03 01:30:00-07:00'").num_deleted_rows == 1  # the PDT one
        src = spark.createDataFrame([(dt.date(2024, 11, 3), la_pdt, decimal.Decimal("9.99"), "new"),
                                     (dt.date(2024, 3, 10), la_pst, decimal.Decimal("3.30"), "upd")], schema)
        m = (t.merge(src, (F.col("target.ts") == F.col("source.ts")) & (F.col("target.d") == F.col("source.d")))
             .when_matched_update({"amt": F.col("source.amt") + F.lit(decimal.Decimal("0.01"))})
             .when_not_matched_insert_all(F.col("source.d") == F.lit(dt.date(2024, 11, 3))).execute())
        assert (m.num_target_rows_updated, m.num_target_rows_inserted) == (1, 1)
        spark.conf.set("spark.sql.session.timeZone", "UTC")
        assert rows(t.to_df().selectExpr("d", "CAST(ts AS STRING)", "amt", "v")) == [
            (dt.date(2024, 11, 3), "2024-03-10 10:00:00", None, "spring"),
            (dt.date(2024, 11, 3), "2024-11-03 08:30:00", decimal.Decimal("9.99"), "new"),
            (dt.date(2024, 3, 10), "2024-11-03 09:30:00", decimal.Decimal("3.31"), "PST")]
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


def test_spark_connect_columns_render_as_sql_that_spark_reads_back(spark: SparkSession) -> None:
    """Spark Connect Columns (built client-side, no server needed) become SQL text with the same meaning; the
    text is evaluated here on the classic session."""
    from pyspark.sql.connect import functions as CF

    from strata._sql import to_sql

    pst = dt.datetime(2024, 11, 3, 9, 30, tzinfo=dt.timezone.utc)
    cases = [
        ((CF.col("a b") > CF.lit("it's")) & CF.col("n").isNull(), "(((`a b` > 'it\\'s') AND (`n` IS NULL)))", True),
        (CF.col("t.x").isin(1, 2), "((`t`.`x` IN (1, 2)))", True),
        (CF.when(CF.col("t.x") > 1, "big").otherwise("small"), "(CASE WHEN (`t`.`x` > 1) THEN 'big' ELSE 'small' END)",
         "small"),
        (CF.lit(decimal.Decimal("-1.20")) + CF.lit(1), "((CAST('-1.20' AS DECIMAL(3,2)) + 1))", decimal.Decimal("-0.20")),
        (CF.lit(pst).cast("string"), "(CAST(TIMESTAMP_MICROS(1730626200000000L) AS string))", "2024-11-03 09:30:00"),
        (CF.lit(dt.date(1969, 12, 31)), "(DATE '1969-12-31')", dt.date(1969, 12, 31)),
        (~CF.expr("n IS NOT NULL"), "((NOT (n IS NOT NULL)))", True),
        (CF.coalesce(CF.col("n"), CF.lit(2.5)), "(coalesce(`n`, CAST('2.5' AS DOUBLE)))", 2.5),
    ]
    for column, text, value in cases:
        assert to_sql(column, "x") == text
        got = spark.sql(f"SELECT {text} FROM VALUES ('z', 1, CAST(NULL AS DOUBLE)) AS t(`a b`, x, n)").first()
        assert got is not None and got[0] == value, text
    from pyspark.sql.connect.column import Column as ConnectColumn
    from pyspark.sql.connect.expressions import ColumnReference

    with pytest.raises(TypeError, match="bound to one DataFrame"):  # what df["id"] is on Spark Connect
        to_sql(ConnectColumn(ColumnReference("id", plan_id=3)), "merge(on=...)")
