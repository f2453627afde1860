"""Typed Python exceptions for the errors the Strata connector raises on the JVM.

Spark hands a JVM exception to Python as a ``py4j.protocol.Py4JJavaError`` (classic sessions) or as a
``pyspark.errors`` exception (classic sessions for Spark's own errors, and every error on Spark Connect). Neither
says in a type what went wrong. :func:`translate` turns the ones Strata raised into the exceptions below by their
error condition (every error the connector raises has one, ``STRATA_...``, with a SQLSTATE: Spark's
``getCondition()`` / ``getSqlState()``), with the JVM message (its first line) as the Python message; every other
exception passes through unchanged. :func:`strata.write` and :class:`strata.Table`
already do this; wrap raw ``df.write.format("strata")`` calls yourself:

>>> from strata.errors import translate, InvalidOptionError
>>> try:
...     with translate():
...         df.write.format("strata").option("compresion", "zstd").save("/data/t")
... except InvalidOptionError as e:
...     print(e)
Unknown option 'compresion'. Did you mean 'compression'? Known options: ...

Every exception here derives from :class:`StrataError`; the original exception is kept as ``__cause__``.
"""

from __future__ import annotations

import functools
import json
import re
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = [
    "StrataError",
    "StrataSetupError",
    "ClassicSessionRequiredError",
    "InvalidOptionError",
    "SchemaMismatchError",
    "ConcurrentModificationError",
    "ConstraintViolationError",
    "MergeCardinalityError",
    "TableNotFoundError",
    "TableExistsError",
    "ProtocolError",
    "CorruptLogError",
    "MissingLogFileError",
    "translate",
    "translate_exception",
]


class StrataError(Exception):
    """Base of every exception the ``strata`` package raises.

    ``message`` is the message (for JVM errors, the first line of the JVM message, without its ``[CONDITION] ``
    prefix); ``jvm_class`` is the fully qualified JVM exception class (``io.strata.log.InvalidTableOperationException``,
    ...), or ``None`` for errors raised in Python. ``condition`` is the error condition the connector gives the error
    (``STRATA_UNKNOWN_OPTION``, ``STRATA_SCHEMA_MISMATCH``, ...: the stable way to tell errors apart, listed in
    ``io/strata/error-conditions.json`` in the connector's jar; Spark's own for the errors of Spark it types), and
    ``sql_state`` its SQLSTATE; both are ``None`` for errors raised in Python.

    >>> try:
    ...     strata.write(df, "/data/t", "append")
    ... except strata.StrataError as e:
    ...     print(type(e).__name__, e.condition, e.sql_state, e.message)
    """

    def __init__(self, message: str, *, jvm_class: str | None = None, condition: str | None = None,
                 sql_state: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.jvm_class = jvm_class
        self.condition = condition
        self.sql_state = sql_state


class StrataSetupError(StrataError, RuntimeError):
    """The Strata package cannot set up Spark: its jar is missing, unreadable or of another version.

    >>> try:
    ...     strata.jar_path()
    ... except strata.StrataSetupError as e:
    ...     print(e)  # says how to rebuild
    """


class ClassicSessionRequiredError(StrataError, RuntimeError):
    """A Strata call needs the JVM of a classic (py4j) session and was given a Spark Connect session.

    ``Table.version()`` and ``Table.history()`` call the connector through py4j; ``Table.to_df()``,
    :func:`strata.write` and ``spark.read/write.format("strata")`` work on both kinds of session.
    """


class InvalidOptionError(StrataError, ValueError):
    """An option or parameter of a read or write is invalid: an unknown (misspelt) option, a bad value, or options
    that do not go together. Raised in Python by :func:`strata.write` / :meth:`strata.Table.to_df` before anything
    runs (``jvm_class`` is ``None``), and for the connector's own option checks. It is also a ``ValueError``.

    >>> strata.write(df, "/data/t", compression="brotli")
    Traceback (most recent call last):
    strata.errors.InvalidOptionError: compression must be one of 'snappy', 'zstd', ...; got 'brotli'
    """


class SchemaMismatchError(StrataError):
    """The data does not fit the table: missing or extra columns, types that cannot be widened safely, names that
    differ only in case, or other partition columns than the table's. Use ``merge_schema=True`` to add columns, or
    ``mode="overwrite"`` with ``overwrite_schema=True`` to replace the table's schema."""


class ConcurrentModificationError(StrataError):
    """Another writer committed first and its changes conflict with this write (JVM ``ConcurrentAppendException``,
    ``ConcurrentDeleteReadException``, ``MetadataChangedException``, ...), or commit retries ran out under
    contention (``CommitRetriesExhaustedException``). Nothing was committed; retrying the write is safe."""


class ConstraintViolationError(StrataError):
    """A written row broke a rule Strata checks inside the Spark tasks: a null in a NOT NULL column, a CHECK
    constraint of the table (a row passes only when the predicate is TRUE; NULL fails, as in Delta), or (with
    ``replace_where``) a row that does not match the predicate. Nothing was committed.

    >>> spark.sql("ALTER TABLE sales ADD CONSTRAINT pos CHECK (amount > 0)")
    >>> strata.write(bad_df, "/data/sales", "append")
    Traceback (most recent call last):
    strata.errors.ConstraintViolationError: CHECK constraint pos (amount > 0) violated by row with values: amount = -1
    """


class MergeCardinalityError(StrataError):
    """A MERGE in which several source rows matched the same target row (Spark's error class
    ``MERGE_CARDINALITY_VIOLATION``): which one should win is undefined, so the statement fails and nothing is
    committed. De-duplicate the source on the merge key first.

    >>> try:
    ...     table.merge(updates, "target.id = source.id").when_matched_update_all().execute()
    ... except strata.MergeCardinalityError:
    ...     updates = updates.dropDuplicates(["id"])
    """


class TableNotFoundError(StrataError):
    """There is no Strata/Delta table (no ``_delta_log`` with commits) at the path."""


class TableExistsError(StrataError):
    """``mode="error"`` (or CREATE TABLE) and a table already exists at the path, possibly created concurrently
    (JVM ``TableAlreadyExistsException``)."""


class ProtocolError(StrataError):
    """The table needs a Delta protocol version or table feature this Strata does not implement
    (JVM ``UnsupportedProtocolException``)."""


class CorruptLogError(StrataError):
    """The table's log is unreadable: a corrupt commit or checkpoint, or a malformed action."""


class MissingLogFileError(StrataError):
    """A log file the table needs is not there (a commit deleted, or a log put back from an older copy): missing, not
    corrupt (JVM ``MissingLogFileException``)."""


# Every condition of the connector's io/strata/error-conditions.json (tests/test_errors.py checks that none is
# missing), then Spark's own conditions that have a typed exception here.
_BY_CONDITION: dict[str, type[StrataError]] = {
    **dict.fromkeys([
        "STRATA_UNKNOWN_OPTION", "STRATA_INVALID_OPTION_VALUE", "STRATA_CONFLICTING_OPTIONS",
        "STRATA_UNSUPPORTED_OPTION", "STRATA_OPTION_NOT_APPLIED", "STRATA_INVALID_CONF_VALUE",
        "STRATA_UNKNOWN_TABLE_PROPERTY", "STRATA_INVALID_TABLE_PROPERTY_VALUE", "STRATA_UNKNOWN_TABLE_FEATURE",
        "STRATA_INVALID_PROTOCOL_REQUEST", "STRATA_PATH_REQUIRED", "STRATA_INVALID_PROCEDURE_ARGUMENT",
        "STRATA_INVALID_PREDICATE", "STRATA_STREAM_START_OUT_OF_RANGE", "STRATA_INVALID_TABLE_NAME",
        "STRATA_PROCEDURE_NOT_FOUND", "STRATA_INVALID_OPTIMIZE_STATEMENT",
    ], InvalidOptionError),
    **dict.fromkeys([
        "STRATA_SCHEMA_MISMATCH", "STRATA_DUPLICATE_COLUMNS", "STRATA_PARTITIONING_MISMATCH",
        "STRATA_STREAM_SCHEMA_GIVEN",
    ], SchemaMismatchError),
    **dict.fromkeys([
        "STRATA_CONCURRENT_APPEND", "STRATA_CONCURRENT_DELETE_READ", "STRATA_CONCURRENT_DELETE_DELETE",
        "STRATA_METADATA_CHANGED", "STRATA_PROTOCOL_CHANGED", "STRATA_CONCURRENT_TRANSACTION",
        "STRATA_CONCURRENT_DOMAIN_METADATA", "STRATA_COMMIT_RETRIES_EXHAUSTED", "STRATA_LOG_REPLACED",
    ], ConcurrentModificationError),
    **dict.fromkeys([
        "STRATA_CHECK_CONSTRAINT_VIOLATION", "STRATA_NOT_NULL_VIOLATION", "STRATA_REPLACE_WHERE_MISMATCH",
    ], ConstraintViolationError),
    "STRATA_TABLE_NOT_FOUND": TableNotFoundError,
    "STRATA_TABLE_ALREADY_EXISTS": TableExistsError,
    "STRATA_UNSUPPORTED_PROTOCOL": ProtocolError,
    **dict.fromkeys([
        "STRATA_CORRUPT_LOG", "STRATA_MALFORMED_ACTION", "STRATA_CORRUPT_DELETION_VECTOR",
        "STRATA_INVALID_SOURCE_OFFSET",
    ], CorruptLogError),
    "STRATA_LOG_FILE_MISSING": MissingLogFileError,
    **dict.fromkeys([
        "STRATA_NOT_A_TABLE_LOCATION", "STRATA_MISSING_METADATA", "STRATA_INVALID_PARTITIONING",
        "STRATA_COLUMN_ALREADY_EXISTS", "STRATA_COLUMN_NOT_FOUND", "STRATA_UNSUPPORTED_ALTER", "STRATA_APPEND_ONLY",
        "STRATA_INVALID_CONSTRAINT", "STRATA_CONSTRAINT_ALREADY_EXISTS", "STRATA_CONSTRAINT_NOT_FOUND",
        "STRATA_CONSTRAINT_VIOLATED_BY_TABLE", "STRATA_TIME_TRAVEL_OUT_OF_RANGE", "STRATA_VERSION_NOT_AVAILABLE",
        "STRATA_TIME_TRAVEL_CHANGE", "STRATA_UNSAFE_LOG_STORE", "STRATA_DELETION_VECTOR_TOO_LARGE",
        "STRATA_STREAM_SOURCE_CHANGE", "STRATA_UNSUPPORTED_STREAMING_MODE", "STRATA_VACUUM_RETENTION_TOO_SHORT",
        "STRATA_VACUUM_INCOMPLETE", "STRATA_UNSUPPORTED_PROVIDER", "STRATA_NOT_A_DELTA_TABLE",
        "STRATA_INVALID_CLUSTERING", "STRATA_UNSUPPORTED_TYPE_CHANGE", "STRATA_UNSUPPORTED_TABLE_FEATURE_DROP",
        "STRATA_NO_FILE_STATE", "STRATA_STREAM_NON_ADDITIVE_SCHEMA_CHANGE",
        "STRATA_STREAM_TYPE_WIDENING",
    ], StrataError),
    # Spark's own.
    "MERGE_CARDINALITY_VIOLATION": MergeCardinalityError,
    "NOT_NULL_ASSERT_VIOLATION": ConstraintViolationError,
    "NOT_NULL_CONSTRAINT_VIOLATION": ConstraintViolationError,
    "CHECK_CONSTRAINT_VIOLATION": ConstraintViolationError,
}
_PREFIX = "STRATA_"
_CONDITIONS_ENTRY = "io/strata/error-conditions.json"
# The one pattern left: a Strata condition opening a message that reaches Python only as text. Strata's messages
# start with "[CONDITION] " (Spark's convention). Two kinds of error carry one only in text: the row checks of V1
# writes, which run as Spark's raise_error (USER_RAISED_EXCEPTION: Spark accepts only its own conditions there, so
# Strata's rides at the start of the errorMessage parameter), and, on Spark Connect, a Strata exception that is the
# cause of Spark's job failure (the client gets the top error's condition only; the cause's message is in the text).
# The optional class before it is how a JVM stack trace names the throwable ("io.strata.X: [STRATA_...] ...").
_CONDITION_IN_TEXT = re.compile(r"(?:(io\.strata\.[\w.$]+): )?\[(STRATA_[A-Z0-9_]+)\] ([^\n]*)")
_SQLSTATE_SUFFIX = re.compile(r" SQLSTATE: \w{5}$")
_CONNECT_CLASS = re.compile(r"\(([\w.$]+)\) ")


@functools.lru_cache(maxsize=1)
def _sql_states() -> dict[str, str]:
    """SQLSTATE by condition, from the error-conditions resource of the jar this package ships ({} without one)."""
    from strata import _bundled_jar

    try:
        with zipfile.ZipFile(_bundled_jar()) as jar:
            conditions = json.loads(jar.read(_CONDITIONS_ENTRY).decode("utf-8"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return {}
    return {name: str(entry["sqlState"]) for name, entry in conditions.items()}


def _log_class(name: str | None) -> str | None:
    """The log core's class for a JVM class name: the connector throws subclasses that Spark understands
    (``io.strata.SparkErrors$X``, a subclass of ``io.strata.log.X``)."""
    if name is not None and name.startswith("io.strata.SparkErrors$"):
        return "io.strata.log." + name.rsplit("$", 1)[1]
    return name


def _typed(condition: str, message: str, jvm_class: str | None, sql_state: str | None = None) -> StrataError:
    """The typed exception for ``condition`` with the first line of ``message`` (a Strata message without its
    ``[CONDITION] `` prefix; Spark's as Spark wrote it). A Strata condition this package does not know (a newer
    jar) is a plain :class:`StrataError`."""
    text = message.strip()
    if condition.startswith(_PREFIX):
        text = text.removeprefix(f"[{condition}]").strip()
        sql_state = _sql_states().get(condition, sql_state)
    first = text.splitlines()[0] if text else condition
    if condition.startswith(_PREFIX):
        first = _SQLSTATE_SUFFIX.sub("", first)
    cls = _BY_CONDITION.get(condition, StrataError)
    return cls(first, jvm_class=_log_class(jvm_class), condition=condition, sql_state=sql_state)


def _in_text(text: str, jvm_class: str | None = None) -> StrataError | None:
    """A Strata condition opening a message somewhere in ``text``, typed."""
    match = _CONDITION_IN_TEXT.search(text)
    if match is None:
        return None
    return _typed(match.group(2), match.group(3), match.group(1) or jvm_class)


def _call(obj: Any, method: str) -> Any:
    try:
        return getattr(obj, method)()
    except Exception:  # not a SparkThrowable (py4j has no such method), or the JVM is gone
        return None


def _strata_class(java_class: Any) -> str | None:
    """The first class in ``java_class``'s hierarchy that belongs to Strata's log core, else its own name."""
    own = str(java_class.getName())
    current, depth = java_class, 0
    while current is not None and depth < 10:
        name = str(current.getName())
        if name.startswith("io.strata.log."):
            return name
        current, depth = _call(current, "getSuperclass"), depth + 1
    return own


def _from_java(java_exception: Any) -> StrataError | None:
    """The typed exception for a py4j JVM throwable, from the first condition Strata or Spark gives in its chain."""
    chain: list[Any] = []
    current = java_exception
    while current is not None and len(chain) < 20:
        chain.append(current)
        current = _call(current, "getCause")
    found: StrataError | None = None
    for throwable in chain:
        condition = _call(throwable, "getCondition")
        if condition is None:
            continue
        condition, message = str(condition), str(_call(throwable, "getMessage") or "")
        java_class = _call(throwable, "getClass")
        jvm_class = _strata_class(java_class) if java_class is not None else None
        if condition.startswith(_PREFIX):
            return _typed(condition, message, jvm_class, _str(_call(throwable, "getSqlState")))
        if condition == "USER_RAISED_EXCEPTION":
            parameters = _call(throwable, "getMessageParameters")
            text = str(parameters.get("errorMessage") or "") if parameters is not None else ""
            found = found or _in_text(text, jvm_class)
        elif condition in _BY_CONDITION and found is None:
            found = _typed(condition, message, jvm_class, _str(_call(throwable, "getSqlState")))
    return found


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def translate_exception(error: BaseException) -> StrataError | None:
    """The typed :class:`StrataError` for an exception Spark raised, or ``None`` if Strata did not cause it.

    Understands ``py4j.protocol.Py4JJavaError`` and ``pyspark.errors.PySparkException`` (classic and Spark
    Connect), by the error condition Strata gives every error it raises (``.condition``: ``STRATA_UNKNOWN_OPTION``,
    ``STRATA_CONCURRENT_APPEND``, ...; ``.sql_state`` is its SQLSTATE). A :class:`StrataError` is returned as it is.

    >>> try:
    ...     df.write.format("strata").option("compresion", "zstd").save("/data/t")
    ... except Exception as e:
    ...     typed = strata.errors.translate_exception(e)  # InvalidOptionError("Unknown option 'compresion'. ...")
    ...     typed.condition, typed.sql_state                # ('STRATA_UNKNOWN_OPTION', '42616')
    """
    if isinstance(error, StrataError):
        return error
    from pyspark.errors import PySparkException

    java_exception = getattr(error, "java_exception", None)  # py4j.protocol.Py4JJavaError (classic sessions)
    if java_exception is not None:
        return _from_java(java_exception) or _in_text(str(error))
    if not isinstance(error, PySparkException):
        return None
    origin = getattr(error, "_origin", None)  # classic: the JVM throwable behind a converted exception
    if origin is not None:
        found = _from_java(origin)
        if found is not None:
            return found
    condition = error.getCondition()
    message = error.getMessage() if hasattr(error, "getMessage") else str(error)
    if condition is not None and (condition.startswith(_PREFIX) or condition in _BY_CONDITION):
        # Spark Connect puts "(<JVM class>) " before the message of an exception it has no Python class for.
        framed = _CONNECT_CLASS.match(message)
        if framed is not None:
            message = message[framed.end():]
        return _typed(condition, message, framed.group(1) if framed else None, error.getSqlState())
    if condition == "USER_RAISED_EXCEPTION":
        found = _in_text((error.getMessageParameters() or {}).get("errorMessage", ""),
                         "org.apache.spark.SparkRuntimeException")
        if found is not None:
            return found
    stacktrace = str(getattr(error, "_stacktrace", None) or getattr(error, "_stackTrace", None) or "")
    return _in_text(message) or _in_text(stacktrace)


@contextmanager
def translate() -> Iterator[None]:
    """Re-raises errors of the Strata connector inside the block as typed :class:`StrataError` subclasses (the
    original exception becomes ``__cause__``); every other exception passes through unchanged. Also usable as a
    decorator.

    >>> with strata.errors.translate():
    ...     df.write.format("strata").mode("append").save("/data/t")   # a bad schema -> SchemaMismatchError
    """
    try:
        yield
    except StrataError:
        raise
    except Exception as e:
        typed = translate_exception(e)
        if typed is None:
            raise
        raise typed from e
