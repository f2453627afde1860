"""Error conditions: every condition in the connector's io/strata/error-conditions.json has a typed Python class, and
representative errors reach Python typed, with their condition and SQLSTATE, on a classic session (Spark Connect:
tests/test_connect.py)."""
from __future__ import annotations

import json
import uuid
import zipfile
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import strata
from strata import errors
from strata.errors import translate

SOURCE = Path(__file__).resolve().parents[1] / "jvm" / "log" / "src" / "main" / "resources" / "io" / "strata" / \
    "error-conditions.json"


def conditions_in_jar() -> dict[str, Any]:
    with zipfile.ZipFile(strata.jar_path()) as jar:
        loaded: dict[str, Any] = json.loads(jar.read("io/strata/error-conditions.json"))
        return loaded


def test_every_condition_in_the_jar_has_a_python_class() -> None:
    conditions = conditions_in_jar()
    assert conditions == json.loads(SOURCE.read_text()), "the installed jar is older than the source tree"
    mapped = {c for c in errors._BY_CONDITION if c.startswith("STRATA_")}
    assert sorted(set(conditions) - mapped) == [], "conditions without a Python class in strata.errors"
    assert sorted(mapped - set(conditions)) == [], "Python maps conditions the connector does not raise"
    for name, entry in conditions.items():
        assert len(entry["sqlState"]) == 5 and entry["sqlState"].isalnum(), name
        assert issubclass(errors._BY_CONDITION[name], strata.StrataError)
    # A sample of the mapping that users rely on.
    assert errors._BY_CONDITION["STRATA_UNKNOWN_OPTION"] is strata.InvalidOptionError
    assert errors._BY_CONDITION["STRATA_SCHEMA_MISMATCH"] is strata.SchemaMismatchError
    assert errors._BY_CONDITION["STRATA_CONCURRENT_APPEND"] is strata.ConcurrentModificationError
    assert errors._BY_CONDITION["STRATA_CHECK_CONSTRAINT_VIOLATION"] is strata.ConstraintViolationError


def typed(call: Any) -> strata.StrataError:
    with pytest.raises(strata.StrataError) as err:
        with translate():
            call()
    return err.value


def sales(spark: SparkSession, rows: list[tuple[Any, str]]) -> Any:
    return spark.createDataFrame(rows, "id long, country string")


def test_classic_session_errors_carry_condition_and_sql_state(spark: SparkSession, table_path: Path) -> None:
    df = sales(spark, [(1, "FR")])
    strata.write(df, table_path, partition_by=["country"])

    option = typed(lambda: df.write.format("strata").mode("append").option("compresion", "zstd")
                   .save(str(table_path)))
    assert type(option) is strata.InvalidOptionError
    assert (option.condition, option.sql_state) == ("STRATA_UNKNOWN_OPTION", "42616")
    assert option.message.startswith("Unknown option 'compresion'. Did you mean 'compression'?")
    assert option.jvm_class == "io.strata.log.InvalidTableOperationException"
    # The JVM exception is a SparkThrowable: Spark and py4j see Strata's condition on it.
    java = getattr(option.__cause__, "java_exception")
    assert java.getCondition() == "STRATA_UNKNOWN_OPTION" and java.getSqlState() == "42616"
    from py4j.java_gateway import is_instance_of
    assert is_instance_of(spark.sparkContext._gateway, java, "org.apache.spark.SparkThrowable")

    schema = typed(lambda: strata.write(spark.createDataFrame([(1,)], "x int"), table_path, "append"))
    assert type(schema) is strata.SchemaMismatchError
    assert (schema.condition, schema.sql_state) == ("STRATA_SCHEMA_MISMATCH", "42K09")

    exists = typed(lambda: strata.write(df, table_path, "error"))
    assert type(exists) is strata.TableExistsError
    assert (exists.condition, exists.sql_state) == ("STRATA_TABLE_ALREADY_EXISTS", "42P07")
    assert "already exists (version 0)" in exists.message, exists.message

    missing = typed(lambda: strata.Table.for_path(spark, table_path / "none").to_df())
    assert type(missing) is strata.TableNotFoundError
    assert (missing.condition, missing.sql_state) == ("STRATA_TABLE_NOT_FOUND", "42P01")
    assert missing.jvm_class == "io.strata.log.TableNotFoundException"

    # A V1 row check runs as Spark's raise_error inside the tasks: its condition rides in the message.
    replaced = typed(lambda: strata.write(sales(spark, [(2, "DE")]), table_path, "overwrite",
                                          replace_where="country = 'FR'"))
    assert type(replaced) is strata.ConstraintViolationError
    assert (replaced.condition, replaced.sql_state) == ("STRATA_REPLACE_WHERE_MISMATCH", "44000")
    assert replaced.message == "Written rows must match replaceWhere 'country = 'FR''; a row does not."
    assert strata.Table.for_path(spark, table_path).version() == 0


def test_classic_task_errors_carry_condition_and_sql_state(spark: SparkSession) -> None:
    name = f"strata.errors_tests.ck_{uuid.uuid4().hex[:8]}"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.errors_tests")
    spark.sql(f"CREATE TABLE {name} (id BIGINT NOT NULL, s STRING, CONSTRAINT pos CHECK (id > 0)) USING strata")
    # V2 (INSERT INTO a catalog table): the task's ConstraintViolationException is the cause of Spark's failure.
    check = typed(lambda: spark.sql(f"INSERT INTO {name} VALUES (-1, 'a')").collect())
    assert type(check) is strata.ConstraintViolationError
    assert (check.condition, check.sql_state) == ("STRATA_CHECK_CONSTRAINT_VIOLATION", "23001")
    assert check.message == "CHECK constraint pos (id > 0) violated by row with values: id = -1"
    assert check.jvm_class == "io.strata.log.ConstraintViolationException"
    # V1 (a path write to the same table): Spark's raise_error carries the message, the condition opening it.
    location = spark.sql(f"DESCRIBE TABLE EXTENDED {name}").where("col_name = 'Location'").first()[1]
    v1 = typed(lambda: sales(spark, [(-2, "b")]).withColumnRenamed("country", "s").write.format("strata")
               .mode("append").save(location))
    assert type(v1) is strata.ConstraintViolationError
    assert (v1.condition, v1.sql_state) == ("STRATA_CHECK_CONSTRAINT_VIOLATION", "23001")
    assert v1.message == "CHECK constraint pos (id > 0) violated by row with values: id = -2"
    assert spark.table(name).count() == 0
