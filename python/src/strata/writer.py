"""Typed writes of a DataFrame to a Strata table at a path.

:func:`write` checks every parameter in Python, before any Spark job starts, then runs
``df.write.format("strata").mode(...).option(...).partitionBy(...).save(path)``. It uses only public DataFrame APIs,
so it works on classic and Spark Connect sessions alike; errors of the connector are raised as typed
:mod:`strata.errors` exceptions.

>>> import strata
>>> strata.write(df, "/data/sales", partition_by=["country"])                       # create
>>> strata.write(df, "/data/sales", "append", user_metadata="nightly load")          # append
>>> strata.write(fr, "/data/sales", "overwrite", replace_where="country = 'FR'")      # replace one partition
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, Literal, get_args

from strata.errors import InvalidOptionError, translate

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["WriteMode", "Compression", "WRITE_MODES", "COMPRESSION_CODECS", "write", "write_options"]

WriteMode = Literal["append", "overwrite", "error", "ignore"]
"""``append`` adds rows; ``overwrite`` replaces the table (or what ``replace_where`` / dynamic partition overwrite
select); ``error`` creates the table and fails if one exists; ``ignore`` creates it and does nothing if one exists."""

Compression = Literal["snappy", "zstd", "gzip", "lz4", "lz4_raw", "uncompressed", "none"]
"""Parquet codec of the data files (``none`` is the same as ``uncompressed``)."""

WRITE_MODES: Final[tuple[str, ...]] = get_args(WriteMode)
COMPRESSION_CODECS: Final[tuple[str, ...]] = get_args(Compression)


def _allowed(values: Sequence[str]) -> str:
    return ", ".join(repr(v) for v in values)


def _bad(parameter: str, allowed: str, value: object) -> InvalidOptionError:
    return InvalidOptionError(f"{parameter} must be {allowed}; got {value!r}")


def _check_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise _bad(name, "True or False", value)
    return value


def write_options(
    mode: WriteMode = "append",
    *,
    partition_by: Sequence[str] | None = None,
    replace_where: str | None = None,
    dynamic_partition_overwrite: bool = False,
    merge_schema: bool = False,
    overwrite_schema: bool = False,
    app_id: str | None = None,
    app_version: int | None = None,
    user_metadata: str | None = None,
    compression: Compression = "snappy",
    max_records_per_file: int | None = None,
) -> dict[str, str]:
    """Checks the parameters of :func:`write` and returns the ``format("strata")`` options they stand for
    (``partition_by`` is not an option: it goes to ``partitionBy``). Raises :class:`strata.InvalidOptionError`
    (a ``ValueError``) naming the parameter and what it allows. No Spark call is made.

    Use it to pass checked options to a writer you build yourself:

    >>> opts = strata.write_options("overwrite", replace_where="day = '2026-01-01'")
    >>> opts
    {'compression': 'snappy', 'replaceWhere': "day = '2026-01-01'"}
    >>> df.write.format("strata").mode("overwrite").options(**opts).save("/data/events")
    """
    if mode not in WRITE_MODES:
        raise _bad("mode", f"one of {_allowed(WRITE_MODES)}", mode)
    if compression not in COMPRESSION_CODECS:
        raise _bad("compression", f"one of {_allowed(COMPRESSION_CODECS)}", compression)
    _partition_columns(partition_by)
    dynamic = _check_bool("dynamic_partition_overwrite", dynamic_partition_overwrite)
    merge = _check_bool("merge_schema", merge_schema)
    overwrite_sch = _check_bool("overwrite_schema", overwrite_schema)

    options: dict[str, str] = {"compression": compression}
    if max_records_per_file is not None:
        if isinstance(max_records_per_file, bool) or not isinstance(max_records_per_file, int) \
                or max_records_per_file < 0:
            raise _bad("max_records_per_file", "a whole number >= 0 (0: no limit) or None", max_records_per_file)
        options["maxRecordsPerFile"] = str(max_records_per_file)
    if user_metadata is not None:
        if not isinstance(user_metadata, str):
            raise _bad("user_metadata", "a string or None", user_metadata)
        options["userMetadata"] = user_metadata

    if (app_id is None) != (app_version is None):
        raise InvalidOptionError(
            "app_id and app_version go together: give both (an application id and its increasing version) or "
            f"neither; got app_id={app_id!r}, app_version={app_version!r}")
    if app_id is not None:
        if not isinstance(app_id, str) or not app_id.strip():
            raise _bad("app_id", "a non-empty string", app_id)
        if isinstance(app_version, bool) or not isinstance(app_version, int) or app_version < 0:
            raise _bad("app_version", "a whole number >= 0", app_version)
        options["txnAppId"] = app_id
        options["txnVersion"] = str(app_version)

    if replace_where is not None:
        if not isinstance(replace_where, str) or not replace_where.strip():
            raise _bad("replace_where", "a non-empty SQL predicate such as \"country = 'FR'\"", replace_where)
        if mode != "overwrite":
            raise _bad("replace_where", "used with mode 'overwrite' only", f"mode {mode!r}")
        if dynamic:
            raise InvalidOptionError(
                "replace_where and dynamic_partition_overwrite=True cannot be combined: pick one")
        options["replaceWhere"] = replace_where
    if dynamic and mode != "overwrite":
        raise _bad("dynamic_partition_overwrite=True", "used with mode 'overwrite' only", f"mode {mode!r}")
    if overwrite_sch:
        if mode != "overwrite":
            raise _bad("overwrite_schema=True", "used with mode 'overwrite' only", f"mode {mode!r}")
        if replace_where is not None or dynamic:
            raise InvalidOptionError(
                "overwrite_schema=True replaces the whole table: it cannot be combined with replace_where or "
                "dynamic_partition_overwrite=True")
        if merge:
            raise InvalidOptionError("merge_schema=True and overwrite_schema=True cannot be combined: pick one")
        options["overwriteSchema"] = "true"
    if merge:
        options["mergeSchema"] = "true"
    if mode == "overwrite" and replace_where is None:
        # Explicit, so the session's spark.sql.sources.partitionOverwriteMode never changes what an overwrite does.
        options["partitionOverwriteMode"] = "dynamic" if dynamic else "static"
    return options


def _partition_columns(partition_by: Sequence[str] | None) -> list[str] | None:
    if partition_by is None:
        return None
    if isinstance(partition_by, (str, bytes)) or not isinstance(partition_by, Sequence):
        raise _bad("partition_by", "a list of column names such as ['country'], or None", partition_by)
    columns = list(partition_by)
    for column in columns:
        if not isinstance(column, str) or not column.strip():
            raise _bad("partition_by", "a list of non-empty column names", partition_by)
    lowered = [c.lower() for c in columns]
    if len(set(lowered)) != len(lowered):
        raise _bad("partition_by", "a list of distinct column names", partition_by)
    return columns


def write(
    df: DataFrame,
    path: str | os.PathLike[str],
    mode: WriteMode = "append",
    *,
    partition_by: Sequence[str] | None = None,
    replace_where: str | None = None,
    dynamic_partition_overwrite: bool = False,
    merge_schema: bool = False,
    overwrite_schema: bool = False,
    app_id: str | None = None,
    app_version: int | None = None,
    user_metadata: str | None = None,
    compression: Compression = "snappy",
    max_records_per_file: int | None = None,
) -> None:
    """Writes ``df`` to the Strata table at ``path`` as one atomic commit (one new table version).

    * ``mode``: ``"append"`` (default; creates the table if there is none), ``"overwrite"``, ``"error"`` (create;
      fail if a table exists) or ``"ignore"`` (create; do nothing if a table exists).
    * ``partition_by``: partition columns of a new table (or of one replaced with ``overwrite_schema``); for an
      existing table, leave it out or give the table's own columns.
    * ``replace_where``: with ``"overwrite"``, replace only the rows matching this SQL predicate; every written row
      must match it. On partition columns it replaces whole partitions.
    * ``dynamic_partition_overwrite``: with ``"overwrite"``, replace only the partitions ``df`` writes into. When
      False an overwrite replaces the whole table, whatever ``spark.sql.sources.partitionOverwriteMode`` says.
    * ``merge_schema``: add the columns of ``df`` the table lacks.
    * ``overwrite_schema``: with ``"overwrite"``, replace the schema and partitioning too.
    * ``app_id`` + ``app_version``: an idempotent write; if application ``app_id`` already committed
      ``app_version`` or a higher version to this table, the write does nothing.
    * ``user_metadata``: a string recorded in the commit (``userMetadata`` in ``Table.history()``).
    * ``compression``: Parquet codec of the new files (default ``"snappy"``).
    * ``max_records_per_file``: at most this many rows per data file (``0`` or ``None``: no limit).

    Every parameter is checked before any Spark job starts: a bad value raises :class:`strata.InvalidOptionError`
    (a ``ValueError``) naming the parameter and what it allows. Errors of the connector are raised as typed
    :class:`strata.StrataError` subclasses (:class:`strata.SchemaMismatchError`,
    :class:`strata.ConcurrentModificationError`, ...). Works on classic and Spark Connect sessions.

    >>> strata.write(df, "/data/sales", partition_by=["country"])
    >>> strata.write(df_fr, "/data/sales", "overwrite", replace_where="country = 'FR'")
    >>> strata.write(df_de, "/data/sales", "overwrite", dynamic_partition_overwrite=True)
    >>> strata.write(batch, "/data/sales", app_id="loader", app_version=42)   # a retry of batch 42 is a no-op
    """
    options = write_options(
        mode, partition_by=partition_by, replace_where=replace_where,
        dynamic_partition_overwrite=dynamic_partition_overwrite, merge_schema=merge_schema,
        overwrite_schema=overwrite_schema, app_id=app_id, app_version=app_version, user_metadata=user_metadata,
        compression=compression, max_records_per_file=max_records_per_file)
    columns = _partition_columns(partition_by)
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
        raise _bad("path", "a non-empty str or os.PathLike", path)
    target = os.fspath(path)
    if not isinstance(target, str):
        raise _bad("path", "a str path (not bytes)", path)
    writer_attr = getattr(df, "write", None)
    if writer_attr is None or not hasattr(df, "columns"):
        raise _bad("df", "a pyspark.sql.DataFrame", df)
    if columns is not None:
        existing = {c.lower() for c in df.columns}  # schema only: no Spark job
        missing = [c for c in columns if c.lower() not in existing]
        if missing:
            raise _bad("partition_by", f"columns of the DataFrame ({', '.join(df.columns)})", missing)
    writer = df.write.format("strata").mode(mode)
    for key, value in options.items():
        writer = writer.option(key, value)
    if columns:
        writer = writer.partitionBy(*columns)
    with translate():
        writer.save(target)
