"""Typed Python exceptions for the errors the Strata connector raises on the JVM.

Spark hands a JVM exception to Python as a ``py4j.protocol.Py4JJavaError`` (classic sessions) or as a
``pyspark.errors`` exception (classic sessions for Spark's own errors, and every error on Spark Connect). Neither
says in a type what went wrong. :func:`translate` turns the ones Strata raised (classes ``io.strata.log.*``, and the
row checks Strata runs inside Spark tasks) into the exceptions below, with the JVM message (its first line) as the
Python message; every other exception passes through unchanged. :func:`strata.write` and :class:`strata.Table`
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

import re
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
    "translate",
    "translate_exception",
]


class StrataError(Exception):
    """Base of every exception the ``strata`` package raises.

    ``message`` is the message (for JVM errors, the first line of the JVM message); ``jvm_class`` is the fully
    qualified JVM exception class (``io.strata.log.InvalidTableOperationException``, ...), or ``None`` for errors
    raised in Python.

    >>> try:
    ...     strata.write(df, "/data/t", "append")
    ... except strata.StrataError as e:
    ...     print(type(e).__name__, e.jvm_class, e.message)
    """

    def __init__(self, message: str, *, jvm_class: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.jvm_class = jvm_class


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
    """The table's log is unreadable: a corrupt or missing commit or checkpoint, or a malformed action."""


_CONCURRENT = {
    "ConcurrentModificationException", "ConcurrentAppendException", "ConcurrentDeleteReadException",
    "ConcurrentDeleteDeleteException", "MetadataChangedException", "ProtocolChangedException",
    "ConcurrentTransactionException", "CommitRetriesExhaustedException",
}
_BY_CLASS: dict[str, type[StrataError]] = {
    "UnsupportedProtocolException": ProtocolError,
    "TableNotFoundException": TableNotFoundError,
    "TableAlreadyExistsException": TableExistsError,
    "CorruptLogException": CorruptLogError,
    "MalformedActionException": CorruptLogError,
    "ConstraintViolationException": ConstraintViolationError,
    **{name: ConcurrentModificationError for name in _CONCURRENT},
}
# Spark's own error classes (``getCondition()``) that have a typed exception here.
_BY_CONDITION: dict[str, type[StrataError]] = {
    "MERGE_CARDINALITY_VIOLATION": MergeCardinalityError,
    "NOT_NULL_ASSERT_VIOLATION": ConstraintViolationError,
    "NOT_NULL_CONSTRAINT_VIOLATION": ConstraintViolationError,
    "CHECK_CONSTRAINT_VIOLATION": ConstraintViolationError,
}
_OPTION_MESSAGE = re.compile(r"^(Unknown option\b|Options? \S)|has invalid value|invalid value")
_SCHEMA_MESSAGE = re.compile(r"does not match the schema|differ only in case|is partitioned by .* but the write asks")
_EXISTS_MESSAGE = re.compile(r"already exists \(save mode ErrorIfExists\)")
_CONSTRAINT_MESSAGE = re.compile(r"^(NOT NULL constraint violated|CHECK constraint \S+ \(.*\) violated by row|"
                                 r"Written rows must match replaceWhere)")
# Where a JVM class shows up in the text of an error: "(io.strata.log.X) message" opening a Spark Connect message;
# "io.strata.log.X" alone on the first line of a Spark Connect stack trace; "Caused by: io.strata.log.X: message"
# further down; ": io.strata.log.X: message" in a py4j error text.
_CONNECT_MESSAGE = re.compile(r"\A\((io\.strata\.[\w.$]+)\) ([^\n]*)")
_STACK_FIRST_LINE = re.compile(r"\A(io\.strata\.[\w.$]+)\s*$", re.MULTILINE)
_STACK_CAUSE = re.compile(r"^(?:Caused by: |: )?(io\.strata\.[\w.$]+): ([^\n]*)$", re.MULTILINE)
_USER_RAISED = re.compile(r"\[USER_RAISED_EXCEPTION\] ([^\n]*?)(?: SQLSTATE: \w+)?$", re.MULTILINE)


def _classify(jvm_class: str, message: str) -> StrataError:
    """The typed exception for a Strata JVM exception of class ``jvm_class`` with ``message``."""
    message = message.strip().splitlines()[0] if message.strip() else jvm_class
    simple = jvm_class.rsplit(".", 1)[-1]
    cls = _BY_CLASS.get(simple)
    if cls is None:
        if "committed concurrently" in message:
            cls = ConcurrentModificationError
        elif _SCHEMA_MESSAGE.search(message):
            cls = SchemaMismatchError
        elif _OPTION_MESSAGE.search(message):
            cls = InvalidOptionError
        elif _EXISTS_MESSAGE.search(message):
            cls = TableExistsError
        else:
            cls = StrataError
    return cls(message, jvm_class=jvm_class)


def _java_chain(java_exception: Any) -> list[tuple[str, str, str | None]]:
    """(class name, message, Spark error condition or None) of a py4j JVM throwable and its causes."""
    chain: list[tuple[str, str, str | None]] = []
    current = java_exception
    while current is not None and len(chain) < 20:
        try:
            name, message = str(current.getClass().getName()), str(current.getMessage() or "")
        except Exception:  # the JVM is gone, or not a throwable: fall back to the text
            break
        condition: str | None = None
        try:  # org.apache.spark.SparkThrowable; other throwables have no such method
            found = current.getCondition()
            condition = str(found) if found is not None else None
        except Exception:
            pass
        chain.append((name, message, condition))
        try:
            current = current.getCause()
        except Exception:
            break
    return chain


def _by_condition(condition: str | None, message: str, jvm_class: str | None) -> StrataError | None:
    cls = _BY_CONDITION.get(condition or "")
    if cls is None:
        return None
    first = message.strip().splitlines()[0] if message.strip() else str(condition)
    return cls(first, jvm_class=jvm_class)


def _from_chain(chain: list[tuple[str, str, str | None]]) -> StrataError | None:
    for jvm_class, message, _ in chain:
        if jvm_class.startswith("io.strata."):
            return _classify(jvm_class, message)
    for jvm_class, message, condition in chain:
        typed = _by_condition(condition, message, jvm_class)
        if typed is not None:
            return typed
    for jvm_class, message, _ in chain:
        found = _constraint(message)
        if found is not None:
            found.jvm_class = jvm_class
            return found
    return None


def _constraint(text: str) -> ConstraintViolationError | None:
    for match in _USER_RAISED.finditer(text):
        if _CONSTRAINT_MESSAGE.match(match.group(1)):
            return ConstraintViolationError(match.group(1))
    return None


def _from_text(message: str, stacktrace: str) -> StrataError | None:
    match = _CONNECT_MESSAGE.search(message)
    if match is not None:
        return _classify(match.group(1), match.group(2))
    first = _STACK_FIRST_LINE.search(stacktrace)
    if first is not None:
        return _classify(first.group(1), message)
    match = _STACK_CAUSE.search(stacktrace) or _STACK_CAUSE.search(message)
    if match is not None:
        return _classify(match.group(1), match.group(2))
    return None


def translate_exception(error: BaseException) -> StrataError | None:
    """The typed :class:`StrataError` for an exception Spark raised, or ``None`` if Strata did not cause it.

    Understands ``py4j.protocol.Py4JJavaError`` and ``pyspark.errors.PySparkException`` (classic and Spark
    Connect). A :class:`StrataError` is returned as it is.

    >>> try:
    ...     df.write.format("strata").option("compresion", "zstd").save("/data/t")
    ... except Exception as e:
    ...     typed = strata.errors.translate_exception(e)  # InvalidOptionError("Unknown option 'compresion'. ...")
    """
    if isinstance(error, StrataError):
        return error
    from pyspark.errors import PySparkException

    java_exception = getattr(error, "java_exception", None)  # py4j.protocol.Py4JJavaError (classic sessions)
    if java_exception is not None:
        found = _from_chain(_java_chain(java_exception))
        return found if found is not None else _from_text(str(error), "")
    if not isinstance(error, PySparkException):
        return None
    origin = getattr(error, "_origin", None)  # classic: the JVM throwable behind a converted exception
    if origin is not None:
        found = _from_chain(_java_chain(origin))
        if found is not None:
            return found
    typed = _by_condition(error.getCondition(), error.getMessage() if hasattr(error, "getMessage") else str(error),
                          None)
    if typed is not None:
        return typed
    parameters = error.getMessageParameters() or {}
    if error.getCondition() == "USER_RAISED_EXCEPTION":
        text = parameters.get("errorMessage", "")
        if _CONSTRAINT_MESSAGE.match(text):
            return ConstraintViolationError(text.splitlines()[0], jvm_class="org.apache.spark.SparkRuntimeException")
    stacktrace = str(getattr(error, "_stacktrace", None) or getattr(error, "_stackTrace", None) or "")
    message = error.getMessage() if hasattr(error, "getMessage") else str(error)
    found = _from_text(message, stacktrace)
    if found is not None:
        return found
    return _constraint(message)


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
