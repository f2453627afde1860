"""``strata.Table``: a Strata table at a path or by catalog name, with time travel, history and row-level changes
(DELETE, UPDATE, MERGE)."""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from strata._sql import Expr, quote_identifier, quote_name, split_name, timestamp_option, to_sql
from strata.dml import DeleteMetrics, MergeBuilder, MergeMetrics, UpdateMetrics, _Target, assignments
from strata.errors import InvalidOptionError, translate
from strata.maintenance import TableMaintenance, call, check_whole

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

CATALOG_CLASS = "io.strata.catalog.StrataCatalog"

__all__ = ["Table"]


def _is_cast_error(error: BaseException) -> bool:
    from pyspark.errors import PySparkException

    return isinstance(error, PySparkException) and error.getCondition() == "CAST_INVALID_INPUT"


class Table(TableMaintenance):
    """A Strata table at a path (:meth:`for_path`) or by name in a catalog (:meth:`for_name`). Reads use the public
    data source API (classic and Spark Connect sessions); :meth:`delete`, :meth:`update` and :meth:`merge` run SQL
    (both kinds of session);
    maintenance (:meth:`optimize`, :meth:`vacuum`, :meth:`restore`, :meth:`history`, :meth:`detail`,
    :meth:`version`) calls the Strata catalog's procedures with SQL ``CALL``, so it works on Spark Connect too.

    >>> t = strata.Table.for_path(spark, "/data/events")
    >>> t.version()
    2
    >>> t.to_df(version=0).count()
    100
    >>> t.to_df(timestamp="2026-01-31 12:00:00").count()
    150
    >>> t.history().select("version", "operation", "numOutputRows").show()
    >>> t.delete("day < '2024-01-01'").num_deleted_rows
    120
    """

    def __init__(self, spark: SparkSession, path: str | os.PathLike[str] | None = None, *,
                 name: str | None = None) -> None:
        if (path is None) == (name is None):
            raise InvalidOptionError("Table needs a path or a name (not both): use Table.for_path or Table.for_name")
        self._spark = spark
        self._path: str | None = os.fspath(path) if path is not None else None
        self._name: list[str] | None = None
        if name is not None:
            if not isinstance(name, str):
                raise TypeError(f"Table.for_name(name=...) must be a string such as 'db.events'; got {name!r}")
            try:
                self._name = split_name(name)
            except ValueError as e:
                raise InvalidOptionError(f"Table.for_name: {e}; use a name such as 'db.events' or "
                                         "'strata.db.`my table`'") from e
        self._target_cache: _Target | None = None

    @classmethod
    def for_path(cls, spark: SparkSession, path: str | os.PathLike[str]) -> Table:
        """The table stored at ``path`` (nothing is read until a method is called).

        >>> strata.Table.for_path(spark, "/data/events")
        Table('/data/events')
        """
        return cls(spark, path)

    @classmethod
    def for_name(cls, spark: SparkSession, name: str) -> Table:
        """The table ``name`` of a catalog, as SQL names it: ``db.t`` in the current catalog (``spark_catalog``
        tables ``USING strata``), ``strata.db.t`` in the Strata catalog; parts with special characters in backticks.

        >>> strata.Table.for_name(spark, "strata.sales.orders")
        Table.for_name('strata.sales.orders')
        """
        return cls(spark, name=name)

    @property
    def path(self) -> str:
        """The table's path: as given to :meth:`for_path`, or the catalog's location of a named table."""
        return self._path if self._path is not None else self._target().location

    def __repr__(self) -> str:
        if self._name is not None:
            return f"Table.for_name({'.'.join(self._name)!r})"
        return f"Table({self._path!r})"

    def _target(self) -> _Target:
        """The table's SQL name and location (a named table's location is looked up once)."""
        if self._target_cache is None:
            if self._name is not None:
                sql_name = quote_name(self._name)
                with translate():
                    rows = self._spark.sql(f"DESCRIBE TABLE EXTENDED {sql_name}").collect()
                locations = [str(r[1]) for r in rows if str(r[0]).strip() == "Location"]
                if not locations:
                    raise InvalidOptionError(f"{'.'.join(self._name)} has no location: it is not a Strata table")
                self._target_cache = _Target(self._spark, sql_name, locations[0])
            else:
                assert self._path is not None
                absolute = self._path if "://" in self._path or ":/" in self._path else os.path.abspath(self._path)
                sql_name = f"{quote_identifier(_strata_catalog(self._spark))}.{quote_identifier(absolute)}"
                self._target_cache = _Target(self._spark, sql_name, self._path)
        return self._target_cache

    def delete(self, condition: Expr | None = None) -> DeleteMetrics:
        """``DELETE FROM`` the table the rows where ``condition`` (SQL text or a Column) holds; every row without a
        condition. Returns the metrics of the commit. Files with no matching row are not rewritten; a condition on
        partition columns alone removes whole files without running a job.

        >>> t.delete("country = 'FR' AND amount IS NULL").num_deleted_rows
        3
        >>> t.delete(F.col("day") < F.lit(datetime.date(2024, 1, 1)))
        DeleteMetrics(version=7, num_deleted_rows=120, ...)
        """
        where = "" if condition is None else " WHERE " + to_sql(condition, "delete(condition)")
        target = self._target()
        return target.run(f"DELETE FROM {target.sql_name}{where}", "DELETE", DeleteMetrics)

    def update(self, set: Mapping[str, Expr], condition: Expr | None = None) -> UpdateMetrics:
        """``UPDATE`` the table: ``set`` maps columns to new values (SQL text such as ``"amount * 2"`` or
        ``"'closed'"``, or Columns), on the rows where ``condition`` holds (every row without one). Setting a
        partition column moves the rows. A NOT NULL or CHECK violation raises
        :class:`strata.ConstraintViolationError` and commits nothing.

        >>> t.update({"status": "'closed'", "closed_at": F.current_timestamp()}, "id = 7")
        UpdateMetrics(version=8, ...)
        """
        sets = assignments(set, "update(set)")
        where = "" if condition is None else " WHERE " + to_sql(condition, "update(condition)")
        target = self._target()
        return target.run(f"UPDATE {target.sql_name} SET {sets}{where}", "UPDATE", UpdateMetrics)

    def merge(self, source: DataFrame, on: Expr, source_alias: str = "source",
              target_alias: str = "target") -> MergeBuilder:
        """A ``MERGE INTO`` this table from ``source`` (a DataFrame) matching rows by ``on`` (SQL text or a Column
        over ``target_alias`` and ``source_alias``). Add clauses to the returned :class:`strata.dml.MergeBuilder`,
        then call ``execute()`` for the :class:`strata.dml.MergeMetrics` of the commit.

        >>> (t.merge(updates, "target.id = source.id")
        ...   .when_matched_update_all()
        ...   .when_not_matched_insert_all()
        ...   .execute()).num_target_rows_inserted
        2
        """
        return MergeBuilder(self._target(), source, on, source_alias, target_alias)

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
        if self._name is not None and version is None and timestamp is None:
            with translate():
                return self._spark.table(quote_name(self._name))
        reader = self._spark.read.format("strata")
        if version is not None:
            reader = reader.option("versionAsOf", check_whole("version", version, 0))
        if timestamp is not None:
            reader = reader.option("timestampAsOf", timestamp_option(timestamp))
        try:
            with translate():
                df = reader.load(self.path)
                df.schema  # resolves the snapshot now (lazy on Spark Connect), so a bad table fails here, typed
        except Exception as e:
            if timestamp is not None and _is_cast_error(e):
                # Under ANSI mode (Spark's default) the connector's timestamp cast fails with Spark's own error.
                raise InvalidOptionError(
                    f"timestamp {timestamp!r} is not a timestamp Spark can read; use a datetime or a string such as "
                    f"'2026-01-31 12:00:00' ({e})") from e
            raise
        return df

    def stream(self, starting_version: int | str | None = None,
               starting_timestamp: _dt.datetime | _dt.date | str | None = None,
               max_files_per_trigger: int | None = None, max_bytes_per_trigger: int | str | None = None,
               skip_change_commits: bool = False, allow_source_column_rename: bool | int = False,
               allow_source_column_drop: bool | int = False,
               allow_source_column_type_change: bool | int = False) -> DataFrame:
        """The rows commits append to the table, as a streaming DataFrame (``readStream``), in commit order.

        Without a start, the stream first reads the table's current rows, then every later commit;
        ``starting_version`` (a version or ``'latest'``) or ``starting_timestamp`` (the first commit at or after it,
        read like :meth:`to_df`'s) start at a commit instead. ``max_files_per_trigger`` (default 1,000) and
        ``max_bytes_per_trigger`` (bytes, or ``'64m'``) bound each micro-batch. A commit that removes or rewrites rows
        (DELETE, UPDATE, MERGE, overwrite) stops the stream unless ``skip_change_commits``, which skips such commits
        whole; OPTIMIZE commits stream nothing. On a column-mapped table a RENAME / DROP COLUMN stops the stream; a
        restart reads on under the new schema only with ``allow_source_column_rename`` / ``allow_source_column_drop``
        (delta-spark's ``allowSourceColumnRename`` / ``allowSourceColumnDrop``). On any table a type widening
        (``ALTER COLUMN ... TYPE``, schema evolution) stops it the same way until ``allow_source_column_type_change``
        (``allowSourceColumnTypeChange``); files written before it are then read widened. Each of the three takes
        ``True`` (every such change) or the version of the commit whose change to allow (that one only, as the
        stream's error names it; delta-spark's option value). Bad arguments raise :class:`strata.InvalidOptionError`
        here; a ``starting_timestamp`` after the latest commit is refused when the query starts (a
        ``StreamingQueryException``, :class:`strata.InvalidOptionError` under :func:`strata.errors.translate`).

        >>> q = (strata.Table.for_name(spark, "strata.db.bronze").stream(max_files_per_trigger=100)
        ...      .writeStream.format("strata").option("checkpointLocation", "/chk/silver")
        ...      .trigger(availableNow=True).toTable("strata.db.silver"))
        """
        from strata.streaming import stream_options

        options = stream_options(starting_version, starting_timestamp, max_files_per_trigger,
                                 max_bytes_per_trigger, skip_change_commits, allow_source_column_rename,
                                 allow_source_column_drop, allow_source_column_type_change)
        reader = self._spark.readStream.options(**options)
        with translate():
            if self._name is not None:
                return reader.table(quote_name(self._name))
            return reader.format("strata").load(self.path)

    def version(self) -> int:
        """The latest committed version of the table (from ``CALL <catalog>.system.detail``; classic and Spark
        Connect sessions). Raises :class:`strata.TableNotFoundError` if there is no table.

        >>> strata.Table.for_path(spark, "/data/events").version()
        2
        """
        return self.detail().version

    def history(self, limit: int | None = None) -> DataFrame:
        """The table's commits, newest first (at most ``limit`` of them), from ``CALL <catalog>.system.history``.

        Columns: ``version`` long, ``timestamp`` timestamp, ``operation`` string (e.g. ``WRITE``, ``OPTIMIZE``),
        ``operationParameters`` map<string,string> (e.g. ``mode`` -> ``Append``), ``numFiles``,
        ``numOutputRows``, ``numOutputBytes`` long, ``userMetadata`` string, ``engineInfo`` string,
        ``operationMetrics`` map<string,string>. Raises :class:`strata.TableNotFoundError` if there is no table.

        >>> strata.Table.for_path(spark, "/data/events").history(limit=5).select("version", "operation").show()
        """
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0):
            raise InvalidOptionError(f"limit must be a whole number > 0 or None; got {limit!r}")
        df = self._call("history", limit=None if limit is None else min(limit, 2**31 - 1))
        return df

    def _call(self, procedure: str, **arguments: Any) -> DataFrame:
        """Runs a procedure of the session's Strata catalog on this table."""
        if self._name is not None:
            table = quote_name(self._name)
        else:
            assert self._path is not None
            table = self._path if "://" in self._path or ":/" in self._path else os.path.abspath(self._path)
        return call(self._spark, _strata_catalog(self._spark), procedure, table, **arguments)


def _strata_catalog(spark: SparkSession) -> str:
    """The name of a catalog of class ``io.strata.catalog.StrataCatalog`` (path tables are ``catalog.`/path```):
    ``strata`` when it is one (as :func:`strata.configure_spark` sets up), else the first configured one."""
    if spark.conf.get("spark.sql.catalog.strata", None) == CATALOG_CLASS:
        return "strata"
    for key, value in sorted(spark.conf.getAll.items()):
        parts = key.split(".")
        if value == CATALOG_CLASS and len(parts) == 4 and key.startswith("spark.sql.catalog."):
            return parts[3]
    raise InvalidOptionError(
        "DELETE/UPDATE/MERGE on a path table and maintenance (optimize, vacuum, restore, history, ...) need a Strata "
        "catalog in the session (spark.sql.catalog.<name> = "
        f"{CATALOG_CLASS}); set the session up with strata.configure_spark(...)")
