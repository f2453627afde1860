"""JVM errors as typed Python exceptions: strata.errors.translate on raw writer calls, on py4j errors and on Spark
Connect errors (conditions and classes)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import strata
from strata.errors import translate, translate_exception
from test_writer import sales, version


def test_raw_writer_errors_are_typed_through_translate(spark: SparkSession, table_path: Path) -> None:
    df = sales(spark, [(1, "FR")])
    strata.write(df, table_path)
    with pytest.raises(strata.InvalidOptionError) as err:
        with translate():
            df.write.format("strata").mode("append").option("compresion", "zstd").save(str(table_path))
    assert str(err.value).startswith("Unknown option 'compresion'. Did you mean 'compression'?")
    assert err.value.jvm_class == "io.strata.log.InvalidTableOperationException"
    assert isinstance(err.value, ValueError) and err.value.__cause__ is not None
    with pytest.raises(strata.InvalidOptionError, match=r"^Option 'compression' has invalid value 'brotli'"):
        with translate():
            df.write.format("strata").mode("append").option("compression", "brotli").save(str(table_path))
    with pytest.raises(strata.InvalidOptionError, match=r"^Option 'dataChange' is not supported"):
        with translate():
            df.write.format("strata").mode("append").option("dataChange", "false").save(str(table_path))
    with pytest.raises(strata.SchemaMismatchError, match=r"is partitioned by \[\], but the write asks for \[country\]"):
        strata.write(df, table_path, partition_by=["country"])
    assert version(spark, table_path) == 0


def test_translate_passes_other_errors_through(spark: SparkSession) -> None:
    with pytest.raises(ZeroDivisionError):
        with translate():
            1 / 0
    from pyspark.errors import AnalysisException
    with pytest.raises(AnalysisException):
        with translate():
            spark.sql("SELECT no_such_column FROM range(1)").collect()


def test_unsupported_protocol_is_a_protocol_error(spark: SparkSession, table_path: Path) -> None:
    strata.write(sales(spark, [(1, "FR")]), table_path)
    (table_path / "_delta_log" / "00000000000000000001.json").write_text(
        json.dumps({"protocol": {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["rowTracking"]}})
        + "\n")
    with pytest.raises(strata.ProtocolError, match=r"needs writer feature\(s\) rowTracking") as err:
        strata.write(sales(spark, [(2, "FR")]), table_path)
    assert err.value.jvm_class == "io.strata.log.UnsupportedProtocolException"


def test_not_null_violation_is_a_constraint_violation(spark: SparkSession) -> None:
    name = f"nn_{uuid.uuid4().hex[:8]}"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.writer_tests")
    spark.sql(f"CREATE TABLE strata.writer_tests.{name} (id BIGINT NOT NULL, country STRING) USING strata")
    location = Path(spark.conf.get("spark.sql.catalog.strata.warehouse") or "") / "writer_tests" / name
    assert (location / "_delta_log").is_dir()
    with pytest.raises(strata.ConstraintViolationError, match=r"^NOT NULL constraint violated: column 'id'"):
        strata.write(spark.createDataFrame([(None, "FR")], "id long, country string"), location)
    strata.write(sales(spark, [(1, "FR")]), location)
    assert [tuple(r) for r in spark.table(f"strata.writer_tests.{name}").collect()] == [(1, "FR")]


class _FakeJavaClass:
    def __init__(self, name: str) -> None:
        self._name = name

    def getName(self) -> str:
        return self._name


class _FakeThrowable:
    """Stands in for a py4j JavaObject of a JVM throwable (class, message, cause; a SparkThrowable's condition)."""

    def __init__(self, name: str, message: str, cause: _FakeThrowable | None = None,
                 condition: str | None = None) -> None:
        self._class, self._message, self._cause = _FakeJavaClass(name), message, cause
        self._condition = condition

    def getClass(self) -> _FakeJavaClass:
        return self._class

    def getMessage(self) -> str:
        return self._message

    def getCause(self) -> _FakeThrowable | None:
        return self._cause

    def getCondition(self) -> str:
        if self._condition is None:  # py4j: a throwable that is no SparkThrowable has no such method
            raise AttributeError("getCondition")
        return self._condition

    def getSqlState(self) -> str:
        return "40001"


def py4j_error(throwable: _FakeThrowable) -> Exception:
    error = Exception("An error occurred while calling o1.save.")
    error.java_exception = throwable  # type: ignore[attr-defined]  # what Py4JJavaError carries
    return error


CONFLICT = ("ConcurrentAppendException: the transaction conflicts with version 3 (WRITE), committed concurrently: it "
            "added file x.parquet to the whole table, which this transaction read. Retry the operation on the new "
            "version.")


@pytest.mark.parametrize(("jvm_class", "condition"), [
    ("io.strata.log.ConcurrentAppendException", "STRATA_CONCURRENT_APPEND"),
    ("io.strata.log.ConcurrentDeleteReadException", "STRATA_CONCURRENT_DELETE_READ"),
    ("io.strata.log.MetadataChangedException", "STRATA_METADATA_CHANGED"),
    ("io.strata.log.CommitRetriesExhaustedException", "STRATA_COMMIT_RETRIES_EXHAUSTED")])
def test_conflicts_are_concurrent_modification_errors(jvm_class: str, condition: str) -> None:
    wrapped = _FakeThrowable("org.apache.spark.SparkException", "Job aborted.",
                             _FakeThrowable(jvm_class, f"[{condition}] {CONFLICT}\nsecond line", condition=condition))
    typed = translate_exception(py4j_error(wrapped))
    assert isinstance(typed, strata.ConcurrentModificationError)
    assert typed.message == CONFLICT and typed.jvm_class == jvm_class
    assert typed.condition == condition
    assert typed.sql_state == ("40000" if condition == "STRATA_COMMIT_RETRIES_EXHAUSTED" else "40001")
    # The condition decides, not the class or the words: the same text under another condition is another error.
    other = _FakeThrowable(jvm_class, f"[STRATA_TABLE_NOT_FOUND] {CONFLICT}", condition="STRATA_TABLE_NOT_FOUND")
    assert isinstance(translate_exception(py4j_error(other)), strata.TableNotFoundError)


def test_translate_understands_spark_connect_errors() -> None:
    from pyspark.errors.exceptions.connect import UnknownException

    # As the Connect client builds it from a SparkThrowable the server sent: the condition and SQLSTATE come along.
    connect_error = UnknownException(
        message=f"[STRATA_CONCURRENT_APPEND] {CONFLICT}", reason="io.strata.SparkErrors$ConcurrentAppendException",
        errorClass="STRATA_CONCURRENT_APPEND", messageParameters={"winningVersion": "3"}, sql_state="40001")
    typed = translate_exception(connect_error)
    assert isinstance(typed, strata.ConcurrentModificationError) and typed.message == CONFLICT
    assert typed.condition == "STRATA_CONCURRENT_APPEND" and typed.sql_state == "40001"
    assert typed.jvm_class == "io.strata.log.ConcurrentAppendException"
    # A Strata error that caused Spark's job failure: the client has the top error's condition only, and the
    # server's stack trace names the cause with its message, which opens with the condition.
    wrapped = UnknownException(
        message="(org.apache.spark.SparkException) Job aborted.",
        server_stacktrace=("org.apache.spark.SparkException\n\tat org.apache.spark.X.y(X.scala:1)\n"
                           "Caused by: io.strata.SparkErrors$MetadataChangedException: [STRATA_METADATA_CHANGED] "
                           f"{CONFLICT}\n\tat io.strata.Z.z(Z.scala:2)"))
    typed = translate_exception(wrapped)
    assert isinstance(typed, strata.ConcurrentModificationError)
    assert typed.jvm_class == "io.strata.log.MetadataChangedException" and typed.message == CONFLICT
    assert typed.condition == "STRATA_METADATA_CHANGED" and typed.sql_state == "40001"
    # Without a condition it is not Strata's, whatever the text says.
    assert translate_exception(UnknownException(message=f"(io.strata.log.ConcurrentAppendException) {CONFLICT}")) is None
    assert translate_exception(UnknownException(message="(java.io.IOException) disk full")) is None
    mentions = UnknownException(message="(java.lang.ClassNotFoundException) cannot load io.strata.catalog.X: gone")
    assert translate_exception(mentions) is None
    assert translate_exception(ValueError("not from Spark")) is None
