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

from strata._sql import quote_identifier
from strata.errors import InvalidOptionError, translate

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row, SparkSession

__all__ = ["OptimizeResult", "VacuumResult", "RestoreResult", "TableDetail", "LogCleanupResult"]


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
