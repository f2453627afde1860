"""Table maintenance from Python: :meth:`strata.Table.optimize`, :meth:`~strata.Table.vacuum`,
:meth:`~strata.Table.restore`, :meth:`~strata.Table.detail`, :meth:`~strata.Table.checkpoint` and
:meth:`~strata.Table.cleanup_log` run the Strata catalog's procedures with ``CALL <catalog>.system.<name>(...)``
(arguments bound as SQL parameters), so they work the same on classic and Spark Connect sessions. Their results are
the typed rows the procedures return.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from strata._sql import quote_identifier, timestamp_option
from strata.errors import InvalidOptionError, translate

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row, SparkSession

__all__ = ["OptimizeResult", "VacuumResult", "RestoreResult", "TableDetail", "LogCleanupResult", "TableMaintenance"]


@dataclass(frozen=True)
class OptimizeResult:
    """What :meth:`strata.Table.optimize` did. Groups of small files commit separately (``dataChange = false``, so
    concurrent appends are not conflicts); ``groups_conflicted`` counts groups another writer's change made
    impossible (their files stay as they were), ``versions`` the commits made.

    >>> r = table.optimize(zorder_by=["a", "b"])
    >>> r.files_removed, r.files_added, r.versions
    (100, 4, (7,))
    """

    files_removed: int
    files_added: int
    bytes_removed: int
    bytes_added: int
    partitions_optimized: int
    groups_committed: int
    groups_conflicted: int
    versions: tuple[int, ...]


@dataclass(frozen=True)
class VacuumResult:
    """The files :meth:`strata.Table.vacuum` deleted (or, with ``dry_run``, would delete): absolute paths (empty
    directories it removed too), the number of files and their bytes.

    >>> r = table.vacuum(dry_run=True)
    >>> r.files_deleted, r.bytes_deleted, r.paths[:1]
    (12, 48213, ('file:/data/events/part-00000-....parquet',))
    """

    dry_run: bool
    paths: tuple[str, ...]
    files_deleted: int
    bytes_deleted: int


@dataclass(frozen=True)
class RestoreResult:
    """The commit :meth:`strata.Table.restore` made: its ``version``, the ``restored_version`` whose files the table
    now holds, and the files removed and re-added to get there.

    >>> table.restore(version=3)
    RestoreResult(version=9, restored_version=3, files_removed=2, files_added=5, bytes_removed=..., bytes_added=...)
    """

    version: int
    restored_version: int
    files_removed: int
    files_added: int
    bytes_removed: int
    bytes_added: int


@dataclass(frozen=True)
class LogCleanupResult:
    """What :meth:`strata.Table.cleanup_log` deleted from ``_delta_log`` and the oldest version still readable."""

    commits_deleted: int
    checkpoints_deleted: int
    oldest_version: int


@dataclass(frozen=True)
class TableDetail:
    """One table's description (the fields of Delta's ``DESCRIBE DETAIL``, plus its latest ``version``).

    >>> d = table.detail()
    >>> d.version, d.num_files, d.partition_columns
    (4, 12, ('day',))
    """

    format: str
    id: str
    name: str | None
    description: str | None
    location: str
    created_at: _dt.datetime | None
    last_modified: _dt.datetime | None
    partition_columns: tuple[str, ...]
    clustering_columns: tuple[str, ...]  # liquid clustering (CLUSTER BY), empty when not clustered
    num_files: int
    size_in_bytes: int
    properties: Mapping[str, str]
    min_reader_version: int
    min_writer_version: int
    table_features: tuple[str, ...]
    version: int


def call(spark: SparkSession, catalog: str, procedure: str, table: str, **arguments: Any) -> DataFrame:
    """``CALL <catalog>.system.<procedure>(table => ..., name => value, ...)``; ``None`` arguments are left out (the
    procedure's default), lists become ``array(...)``. Values are bound as parameters, never pasted into the SQL."""
    params: dict[str, Any] = {"table": table}
    rendered = ["table => :table"]
    for name, value in arguments.items():
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            markers = []
            for i, element in enumerate(value):
                params[f"{name}_{i}"] = element
                markers.append(f":{name}_{i}")
            rendered.append(f"{name} => array({', '.join(markers)})")
        else:
            params[name] = value
            rendered.append(f"{name} => :{name}")
    sql = f"CALL {quote_identifier(catalog)}.system.{procedure}({', '.join(rendered)})"
    with translate():
        return spark.sql(sql, args=params)


def rows(df: DataFrame) -> list[Row]:
    with translate():
        return df.collect()


def optimize_result(result: list[Row]) -> OptimizeResult:
    [r] = result
    return OptimizeResult(
        files_removed=int(r["files_removed"]), files_added=int(r["files_added"]),
        bytes_removed=int(r["bytes_removed"]), bytes_added=int(r["bytes_added"]),
        partitions_optimized=int(r["partitions_optimized"]), groups_committed=int(r["groups_committed"]),
        groups_conflicted=int(r["groups_conflicted"]), versions=tuple(int(v) for v in r["versions"] or ()))


def vacuum_result(result: list[Row], dry_run: bool) -> VacuumResult:
    # rows of kind "directory" are empty directories: in paths, not counted as files
    return VacuumResult(dry_run=dry_run, paths=tuple(str(r["path"]) for r in result),
                        files_deleted=sum(1 for r in result if r["kind"] != "directory"),
                        bytes_deleted=sum(int(r["size_bytes"] or 0) for r in result))


def restore_result(result: list[Row]) -> RestoreResult:
    [r] = result
    return RestoreResult(**{f: int(r[f]) for f in RestoreResult.__dataclass_fields__})


def log_cleanup_result(result: list[Row]) -> LogCleanupResult:
    [r] = result
    return LogCleanupResult(**{f: int(r[f]) for f in LogCleanupResult.__dataclass_fields__})


def table_detail(result: list[Row]) -> TableDetail:
    [r] = result
    return TableDetail(
        format=str(r["format"]), id=str(r["id"]), name=r["name"], description=r["description"],
        location=str(r["location"]), created_at=r["createdAt"], last_modified=r["lastModified"],
        partition_columns=tuple(r["partitionColumns"] or ()),
        clustering_columns=tuple(r["clusteringColumns"] or ()), num_files=int(r["numFiles"]),
        size_in_bytes=int(r["sizeInBytes"]), properties=dict(r["properties"] or {}),
        min_reader_version=int(r["minReaderVersion"]), min_writer_version=int(r["minWriterVersion"]),
        table_features=tuple(r["tableFeatures"] or ()), version=int(r["version"]))


def check_column_names(zorder_by: Sequence[str] | str | None) -> list[str] | None:
    if zorder_by is None:
        return None
    names = [zorder_by] if isinstance(zorder_by, str) else list(zorder_by)
    if not names or not all(isinstance(n, str) and n.strip() for n in names):
        raise InvalidOptionError(f"zorder_by must be a column name or a non-empty list of names; got {zorder_by!r}")
    return names


def check_whole(name: str, value: object, minimum: int) -> int:
    """``value`` as a whole number >= ``minimum`` (bools refused), else InvalidOptionError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidOptionError(f"{name} must be a whole number >= {minimum}; got {value!r}")
    return value


def check_hours(value: float | int | None, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise InvalidOptionError(f"{what} must be a number of hours >= 0 (e.g. 168 for 7 days) or None for the "
                                 f"table's setting; got {value!r}")
    return float(value)


class TableMaintenance:
    """The maintenance calls of :class:`strata.Table` (which runs them on its table through ``_call``)."""

    def _call(self, procedure: str, **arguments: Any) -> DataFrame:
        raise NotImplementedError

    def detail(self) -> TableDetail:
        """The table's description: location, files, size, partition columns, properties, protocol, version.

        >>> d = strata.Table.for_path(spark, "/data/events").detail()
        >>> d.num_files, d.partition_columns, d.properties.get("delta.enableDeletionVectors")
        (12, ('day',), 'true')
        """
        return table_detail(rows(self._call("detail")))

    def optimize(self, where: str | None = None, zorder_by: Sequence[str] | str | None = None,
                 target_file_size: int | None = None, full: bool = False) -> OptimizeResult:
        """Compacts small files (``CALL <catalog>.system.optimize``): in the partitions ``where`` selects (SQL over
        partition columns; all without it), small files are rewritten into files of about ``target_file_size``
        bytes; with ``zorder_by`` every file there is rewritten with rows clustered on those columns, so filters on
        them skip files. Rewrites commit with ``dataChange = false`` in independent groups: concurrent appends go on,
        and a concurrent change to a group's files loses that group only (``groups_conflicted``). A clustered table
        (``CLUSTER BY``) is clustered incrementally by its clustering columns; ``full=True`` (delta-spark's
        ``OPTIMIZE t FULL``) also reclusters the files clustered by other columns.

        >>> t.optimize().files_removed
        40
        >>> t.optimize(where="day >= '2026-01-01'", zorder_by=["user_id", "item_id"]).versions
        (12,)
        """
        if where is not None and (not isinstance(where, str) or not where.strip()):
            raise InvalidOptionError(f"where must be SQL text over partition columns such as \"day = '2026-01-01'\" "
                                     f"or None; got {where!r}")
        if target_file_size is not None and (isinstance(target_file_size, bool)
                                             or not isinstance(target_file_size, int) or target_file_size <= 0):
            raise InvalidOptionError(f"target_file_size must be a number of bytes > 0 or None; got "
                                     f"{target_file_size!r}")
        if not isinstance(full, bool):
            raise InvalidOptionError(f"full must be True or False; got {full!r}")
        return optimize_result(rows(self._call("optimize", where=where, zorder_by=check_column_names(zorder_by),
                                                target_file_size=target_file_size, full=full or None)))

    def vacuum(self, retention_hours: float | None = None, dry_run: bool = False) -> VacuumResult:
        """Deletes files no version within the retention references (``CALL <catalog>.system.vacuum``): data and
        deletion vector files that commits older than ``retention_hours`` removed, and leftovers of failed jobs
        older than that. The default retention is the table's ``delta.deletedFileRetentionDuration`` (7 days); a
        shorter one is refused unless the session sets ``spark.strata.vacuum.retentionCheck.enabled=false``. With
        ``dry_run`` nothing is deleted and the paths are returned.

        >>> t.vacuum(dry_run=True).paths
        ('file:/data/events/part-00003-....parquet',)
        >>> t.vacuum().files_deleted
        1
        """
        if not isinstance(dry_run, bool):
            raise InvalidOptionError(f"dry_run must be True or False; got {dry_run!r}")
        return vacuum_result(rows(self._call("vacuum", retention_hours=check_hours(retention_hours,
                                                                                     "retention_hours"),
                                             dry_run=dry_run)), dry_run)

    def restore(self, version: int | None = None,
                timestamp: _dt.datetime | _dt.date | str | None = None) -> RestoreResult:
        """Makes the table's rows those of an earlier ``version`` (or of the version current at ``timestamp``) in a
        new commit (``CALL <catalog>.system.restore``); history stays, and the restore can itself be undone. Fails
        naming the file when a file the old version needs was vacuumed.

        >>> t.restore(version=3).version
        9
        >>> t.restore(timestamp="2026-01-31 12:00:00").restored_version
        5
        """
        if (version is None) == (timestamp is None):
            raise InvalidOptionError("restore needs exactly one of version or timestamp")
        if version is not None:
            check_whole("version", version, 0)
        ts = None if timestamp is None else timestamp_option(timestamp)
        return restore_result(rows(self._call("restore", version=version, timestamp=ts)))

    def checkpoint(self) -> int:
        """Writes a checkpoint of the latest version now (``CALL <catalog>.system.checkpoint``); returns its version.

        >>> t.checkpoint()
        14
        """
        [row] = rows(self._call("checkpoint"))
        return int(row["version"])

    def drop_feature(self, feature: str) -> int:
        """Removes a table feature's traces and drops it from the protocol, as delta-spark's ``ALTER TABLE ... DROP
        FEATURE`` (``CALL <catalog>.system.drop_feature``); returns the version of the drop.

        >>> t.drop_feature("typeWidening")
        21
        """
        if not isinstance(feature, str) or not feature:
            raise InvalidOptionError(f"feature must be a table feature name such as 'typeWidening'; got {feature!r}")
        [row] = rows(self._call("drop_feature", feature=feature))
        return int(row["version"])

    def cleanup_log(self, retention_hours: float | None = None) -> LogCleanupResult:
        """Deletes log entries older than ``delta.logRetentionDuration`` (30 days; ``retention_hours`` overrides it)
        that no retained version needs (``CALL <catalog>.system.cleanup_log``). Time travel before
        ``oldest_version`` is no longer possible.

        >>> t.cleanup_log().oldest_version
        10
        """
        return log_cleanup_result(rows(self._call("cleanup_log",
                                                  retention_hours=check_hours(retention_hours, "retention_hours"))))
