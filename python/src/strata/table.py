"""``strata.Table``: a Strata table at a path."""

from __future__ import annotations

import datetime as _dt
import os
from typing import TYPE_CHECKING, Any

from strata.errors import ClassicSessionRequiredError, InvalidOptionError, translate

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["Table"]


def _timestamp_option(timestamp: _dt.datetime | _dt.date | str) -> str:
    """The ``timestampAsOf`` text for a timestamp given as ``datetime``, ``date`` or ``str``."""
    if isinstance(timestamp, _dt.datetime):
        if timestamp.tzinfo is not None and timestamp.utcoffset() is not None:
            # An absolute instant: say so with an explicit offset (Spark's timestamp cast understands it).
            utc = timestamp.astimezone(_dt.timezone.utc).replace(tzinfo=None)
            return utc.isoformat(sep=" ", timespec="microseconds") + "Z"
        return timestamp.isoformat(sep=" ", timespec="microseconds")  # session time zone, like a string
    if isinstance(timestamp, _dt.date):
        return timestamp.isoformat() + " 00:00:00"
    if isinstance(timestamp, str) and timestamp.strip():
        return timestamp
    raise InvalidOptionError(
        "timestamp must be a datetime, a date or a non-empty string such as '2026-01-31 12:00:00'; "
        f"got {timestamp!r}")


def _is_cast_error(error: BaseException) -> bool:
    from pyspark.errors import PySparkException

    return isinstance(error, PySparkException) and error.getCondition() == "CAST_INVALID_INPUT"


class Table:
    """A Strata table at a path. Reads use the public data source API (classic and Spark Connect sessions);
    ``version()`` and ``history()`` call the JVM through py4j and so need a classic session.

    >>> t = strata.Table.for_path(spark, "/data/events")
    >>> t.version()
    2
    >>> t.to_df(version=0).count()
    100
    >>> t.to_df(timestamp="2026-01-31 12:00:00").count()
    150
    >>> t.history().select("version", "operation", "numOutputRows").show()
    """

    def __init__(self, spark: SparkSession, path: str | os.PathLike[str]) -> None:
        self._spark = spark
        self._path = os.fspath(path)

    @classmethod
    def for_path(cls, spark: SparkSession, path: str | os.PathLike[str]) -> Table:
        """The table stored at ``path`` (nothing is read until a method is called).

        >>> strata.Table.for_path(spark, "/data/events")
        Table('/data/events')
        """
        return cls(spark, path)

    @property
    def path(self) -> str:
        """The table's path, as given."""
        return self._path

    def __repr__(self) -> str:
        return f"Table({self._path!r})"

    def to_df(self, version: int | None = None,
              timestamp: _dt.datetime | _dt.date | str | None = None) -> DataFrame:
        """The table's rows as a DataFrame: the latest version, or the one chosen by time travel.

        * ``version``: that version (``versionAsOf``);
        * ``timestamp``: the last version committed at or before it (``timestampAsOf``). A string or a naive
          ``datetime`` is read in the session time zone (``spark.sql.session.timeZone``); an aware ``datetime`` is
          the instant it names; a ``date`` is its midnight in the session time zone.

        At most one of them. Bad values raise :class:`strata.InvalidOptionError` before Spark is called; a missing
        table raises :class:`strata.TableNotFoundError`; a version that does not exist, or a time before the first
        commit or after the latest one, :class:`strata.StrataError`.
        Works on classic and Spark Connect sessions.

        >>> t = strata.Table.for_path(spark, "/data/events")
        >>> t.to_df(version=1).show()
        >>> t.to_df(timestamp=datetime.datetime(2026, 1, 31, 12, tzinfo=datetime.timezone.utc)).count()
        """
        if version is not None and timestamp is not None:
            raise InvalidOptionError("version and timestamp cannot be used together: pick one")
        reader = self._spark.read.format("strata")
        if version is not None:
            if isinstance(version, bool) or not isinstance(version, int) or version < 0:
                raise InvalidOptionError(f"version must be a whole number >= 0; got {version!r}")
            reader = reader.option("versionAsOf", version)
        if timestamp is not None:
            reader = reader.option("timestampAsOf", _timestamp_option(timestamp))
        try:
            with translate():
                df = reader.load(self._path)
                df.schema  # resolves the snapshot now (lazy on Spark Connect), so a bad table fails here, typed
        except Exception as e:
            if timestamp is not None and _is_cast_error(e):
                # Under ANSI mode (Spark's default) the connector's timestamp cast fails with Spark's own error.
                raise InvalidOptionError(
                    f"timestamp {timestamp!r} is not a timestamp Spark can read; use a datetime or a string such as "
                    f"'2026-01-31 12:00:00' ({e})") from e
            raise
        return df

    def version(self) -> int:
        """The latest committed version of the table.

        Needs a classic session (py4j); raises :class:`strata.ClassicSessionRequiredError` on Spark Connect, and
        :class:`strata.TableNotFoundError` if there is no table at the path.

        >>> strata.Table.for_path(spark, "/data/events").version()
        2
        """
        api = self._api("version")
        with translate():
            return int(api.version(self._jsession(), self._path))

    def history(self, limit: int | None = None) -> DataFrame:
        """The table's commits, newest first (at most ``limit`` of them).

        Columns: ``version`` long, ``timestamp`` timestamp, ``operation`` string (e.g. ``WRITE``),
        ``operationParameters`` map<string,string> (e.g. ``mode`` -> ``Append``), ``numFiles``,
        ``numOutputRows``, ``numOutputBytes`` long, ``userMetadata`` string, ``engineInfo`` string.

        Needs a classic session (py4j); raises :class:`strata.ClassicSessionRequiredError` on Spark Connect, and
        :class:`strata.TableNotFoundError` if there is no table at the path.

        >>> strata.Table.for_path(spark, "/data/events").history(limit=5).select("version", "operation").show()
        """
        from pyspark.sql import DataFrame

        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0):
            raise InvalidOptionError(f"limit must be a whole number > 0 or None; got {limit!r}")
        api = self._api("history")
        with translate():
            if limit is None:
                jdf = api.history(self._jsession(), self._path)
            else:
                jdf = api.history(self._jsession(), self._path, min(limit, 2**31 - 1))
            if jdf.isEmpty():  # local rows: no Spark job
                # StrataTable.history gives no rows where there is no table; version() raises TableNotFoundError.
                api.version(self._jsession(), self._path)
        return DataFrame(jdf, self._spark)

    def _jsession(self) -> Any:
        return getattr(self._spark, "_jsparkSession")

    def _api(self, method: str) -> Any:
        """The JVM object ``io.strata.api.StrataTable``."""
        jvm = getattr(self._spark, "_jvm", None)
        if jvm is None or getattr(self._spark, "_jsparkSession", None) is None:
            raise ClassicSessionRequiredError(
                f"strata.Table.{method}() calls the Strata JVM API through py4j and needs a classic SparkSession; "
                "this is a Spark Connect session. Use Table.to_df() or spark.read.format('strata') instead, or a "
                "classic session (SparkSession.builder.master(...), not .remote(...)).")
        return jvm.io.strata.api.StrataTable
