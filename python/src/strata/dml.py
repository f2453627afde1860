"""DELETE, UPDATE and MERGE on Strata tables from Python: :meth:`strata.Table.delete`, :meth:`strata.Table.update`
and :meth:`strata.Table.merge` build SQL statements and run them with ``spark.sql`` (so they work on classic and
Spark Connect sessions alike); the metrics they return are the ``operationMetrics`` of the commit the statement made.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, TypeVar

from strata._sql import Expr, quote_identifier, quote_name, split_name, to_sql
from strata.errors import InvalidOptionError, translate

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["DeleteMetrics", "UpdateMetrics", "MergeMetrics", "MergeBuilder"]

M = TypeVar("M", "DeleteMetrics", "UpdateMetrics", "MergeMetrics")


def _metric(metrics: Mapping[str, str], name: str) -> int | None:
    value = metrics.get(name)
    if value is not None:
        return int(value)
    return 0 if not metrics else None  # no commit at all: nothing changed


@dataclass(frozen=True)
class DeleteMetrics:
    """What a DELETE did, from its commit (delta-spark's metric names in ``DESCRIBE HISTORY``). ``version`` is the
    commit's version, ``None`` when the statement committed nothing (all counts 0). Row counts come from file
    statistics and are ``None`` when a file involved has none.

    >>> m = table.delete("day < '2024-01-01'")
    >>> m.num_deleted_rows, m.num_removed_files, m.num_added_files
    (120, 3, 1)
    """
    version: int | None
    num_deleted_rows: int | None
    num_copied_rows: int | None
    num_removed_files: int
    num_added_files: int
    num_removed_bytes: int
    num_added_bytes: int
    num_deletion_vectors_added: int = 0
    num_deletion_vectors_removed: int = 0

    @classmethod
    def _of(cls, version: int | None, m: Mapping[str, str]) -> DeleteMetrics:
        return cls(version, _metric(m, "numDeletedRows"), _metric(m, "numCopiedRows"),
                   _metric(m, "numRemovedFiles") or 0, _metric(m, "numAddedFiles") or 0,
                   _metric(m, "numRemovedBytes") or 0, _metric(m, "numAddedBytes") or 0,
                   _metric(m, "numDeletionVectorsAdded") or 0, _metric(m, "numDeletionVectorsRemoved") or 0)


@dataclass(frozen=True)
class UpdateMetrics:
    """What an UPDATE did, from its commit. ``num_updated_rows`` and ``num_copied_rows`` are ``None`` when the
    commit does not record them.

    >>> m = table.update({"status": "'closed'"}, "id = 7")
    >>> m.num_removed_files, m.num_added_files
    (1, 1)
    """
    version: int | None
    num_updated_rows: int | None
    num_copied_rows: int | None
    num_removed_files: int
    num_added_files: int
    num_removed_bytes: int
    num_added_bytes: int
    num_deletion_vectors_added: int = 0
    num_deletion_vectors_removed: int = 0

    @classmethod
    def _of(cls, version: int | None, m: Mapping[str, str]) -> UpdateMetrics:
        return cls(version, _metric(m, "numUpdatedRows"), _metric(m, "numCopiedRows"),
                   _metric(m, "numRemovedFiles") or 0, _metric(m, "numAddedFiles") or 0,
                   _metric(m, "numRemovedBytes") or 0, _metric(m, "numAddedBytes") or 0,
                   _metric(m, "numDeletionVectorsAdded") or 0, _metric(m, "numDeletionVectorsRemoved") or 0)


@dataclass(frozen=True)
class MergeMetrics:
    """What a MERGE did, from its commit: target rows inserted, updated, deleted and copied unchanged (rows of
    rewritten files that no clause changed), the per-clause-kind counts, and the target files removed and added.

    >>> m = table.merge(updates, "target.id = source.id").when_matched_update_all().when_not_matched_insert_all() \\
    ...     .execute()
    >>> m.num_target_rows_updated, m.num_target_rows_inserted, m.num_target_files_removed
    (10, 2, 1)
    """
    version: int | None
    num_target_rows_inserted: int | None
    num_target_rows_updated: int | None
    num_target_rows_deleted: int | None
    num_target_rows_copied: int | None
    num_target_rows_matched_updated: int | None
    num_target_rows_matched_deleted: int | None
    num_target_rows_not_matched_by_source_updated: int | None
    num_target_rows_not_matched_by_source_deleted: int | None
    num_output_rows: int | None
    num_target_files_removed: int
    num_target_files_added: int
    num_target_bytes_removed: int
    num_target_bytes_added: int
    num_target_deletion_vectors_added: int = 0
    num_target_deletion_vectors_removed: int = 0

    @classmethod
    def _of(cls, version: int | None, m: Mapping[str, str]) -> MergeMetrics:
        def camel(field: str) -> str:
            head, *rest = field.split("_")
            return head + "".join(w.capitalize() for w in rest)

        values: dict[str, Any] = {"version": version}
        for f in fields(cls)[1:]:
            found = _metric(m, camel(f.name))
            values[f.name] = found if found is not None or f.type == "int | None" else 0
        return cls(**values)


class _Target:
    """Where a statement writes (its SQL name) and where its log is (for the commit's metrics)."""

    def __init__(self, spark: SparkSession, sql_name: str, location: str) -> None:
        self.spark, self.sql_name, self.location = spark, sql_name, location.rstrip("/")

    def _commit_files(self) -> dict[int, str]:
        """The commit files of the log by version (a listing; nothing is read)."""
        log = f"{self.location}/_delta_log"
        rows = (self.spark.read.format("binaryFile").option("pathGlobFilter", "[0-9]*.json").load(log)
                .select("path").collect())
        by_version: dict[int, str] = {}
        for row in rows:
            name = str(row["path"]).rsplit("/", 1)[-1]
            stem = name[:-len(".json")]
            if stem.isdigit():
                by_version[int(stem)] = str(row["path"])
        return by_version

    def run(self, sql: str, operation: str, metrics_type: type[M]) -> M:
        """Runs ``sql`` (a DML statement) and reads the metrics of the commit it made: the commit of that operation
        after the versions seen before it ran (if another writer makes the same kind of commit at the same moment,
        the first one after that point is taken)."""
        with translate():
            before = max(self._commit_files(), default=-1)
            self.spark.sql(sql)
            after = self._commit_files()
        for version in sorted(v for v in after if v > before):
            for row in self.spark.read.text(after[version]).collect():
                action = json.loads(row[0])
                info = action.get("commitInfo") if isinstance(action, dict) else None
                if isinstance(info, dict) and info.get("operation") == operation:
                    return metrics_type._of(version, info.get("operationMetrics") or {})
        return metrics_type._of(None, {})  # nothing committed: no change (or an idempotent repeat)


def assignments(set: object, what: str) -> str:
    """``col = expr, ...`` for a mapping of column names (``"v"``, ``"addr.city"``) to SQL text or Columns."""
    if not isinstance(set, Mapping):
        raise TypeError(f"{what} must be a dict of column name -> SQL expression or Column, e.g. "
                        f"{{'v': 'source.v'}}; got {type(set).__name__}: {set!r}")
    if not set:
        raise InvalidOptionError(f"{what} is empty: give at least one column to set, e.g. {{'v': 'source.v'}}")
    parts = []
    for column, value in set.items():
        if not isinstance(column, str) or not column.strip():
            raise TypeError(f"{what}: column names must be non-empty strings; got {column!r}")
        parts.append(f"{quote_name(split_name(column))} = {to_sql(value, f'{what}[{column!r}]')}")
    return ", ".join(parts)


def _when(kind: str, condition: Expr | None, action: str) -> tuple[str, str]:
    cond = "" if condition is None else f" AND {to_sql(condition, f'the condition of {kind}')}"
    return kind, f"WHEN {kind}{cond} THEN {action}"


_KINDS = ("MATCHED", "NOT MATCHED", "NOT MATCHED BY SOURCE")


class MergeBuilder:
    """A MERGE INTO statement being built by :meth:`strata.Table.merge`; add clauses, then :meth:`execute`.

    Clauses of one kind apply in the order they were added (the first whose condition holds wins); Spark requires
    every clause but the last of a kind to have a condition. Conditions and values are SQL text or Columns over
    the two aliases (``target`` and ``source`` unless renamed).

    >>> (table.merge(updates, "target.id = source.id")
    ...     .when_matched_delete("source.deleted")
    ...     .when_matched_update({"v": "source.v", "n": F.col("target.n") + 1})
    ...     .when_not_matched_insert_all("NOT source.deleted")
    ...     .when_not_matched_by_source_delete("target.day < current_date() - 30")
    ...     .execute())
    MergeMetrics(version=5, num_target_rows_inserted=2, num_target_rows_updated=10, ...)
    """

    def __init__(self, target: _Target, source: DataFrame, on: Expr, source_alias: str, target_alias: str) -> None:
        from pyspark.sql import DataFrame

        if not isinstance(source, DataFrame):
            raise TypeError(f"merge(source=...) must be a DataFrame; got {type(source).__name__}")
        for name, alias in (("source_alias", source_alias), ("target_alias", target_alias)):
            if not isinstance(alias, str) or not alias.strip():
                raise InvalidOptionError(f"{name} must be a non-empty name such as 'source'; got {alias!r}")
        if source_alias == target_alias:
            raise InvalidOptionError(f"source_alias and target_alias must differ; both are {source_alias!r}")
        self._target, self._source = target, source
        self._on = to_sql(on, "merge(on=...)")
        self._source_alias, self._target_alias = source_alias, target_alias
        self._clauses: list[tuple[str, str]] = []
        self._evolve = False

    def when_matched_update(self, set: Mapping[str, Expr], condition: Expr | None = None) -> MergeBuilder:
        """``WHEN MATCHED [AND condition] THEN UPDATE SET ...``: ``set`` maps target columns to new values."""
        return self._add(_when("MATCHED", condition, "UPDATE SET " + assignments(set, "when_matched_update(set)")))

    def when_matched_update_all(self, condition: Expr | None = None) -> MergeBuilder:
        """``WHEN MATCHED [AND condition] THEN UPDATE SET *``: every target column from the source column of the
        same name."""
        return self._add(_when("MATCHED", condition, "UPDATE SET *"))

    def when_matched_delete(self, condition: Expr | None = None) -> MergeBuilder:
        """``WHEN MATCHED [AND condition] THEN DELETE``."""
        return self._add(_when("MATCHED", condition, "DELETE"))

    def when_not_matched_insert(self, values: Mapping[str, Expr], condition: Expr | None = None) -> MergeBuilder:
        """``WHEN NOT MATCHED [AND condition] THEN INSERT (cols) VALUES (exprs)``: ``values`` maps target columns
        to values over the source (columns left out get NULL)."""
        assignments(values, "when_not_matched_insert(values)")  # checks the mapping, its names and values
        columns = ", ".join(quote_name(split_name(str(c))) for c in values)
        exprs = ", ".join(to_sql(v, f"when_not_matched_insert(values)[{c!r}]") for c, v in values.items())
        return self._add(_when("NOT MATCHED", condition, f"INSERT ({columns}) VALUES ({exprs})"))

    def when_not_matched_insert_all(self, condition: Expr | None = None) -> MergeBuilder:
        """``WHEN NOT MATCHED [AND condition] THEN INSERT *``: a new target row from the source row."""
        return self._add(_when("NOT MATCHED", condition, "INSERT *"))

    def when_not_matched_by_source_update(self, set: Mapping[str, Expr],
                                          condition: Expr | None = None) -> MergeBuilder:
        """``WHEN NOT MATCHED BY SOURCE [AND condition] THEN UPDATE SET ...``: target rows no source row matched
        (``set`` and ``condition`` may refer to the target only)."""
        action = "UPDATE SET " + assignments(set, "when_not_matched_by_source_update(set)")
        return self._add(_when("NOT MATCHED BY SOURCE", condition, action))

    def when_not_matched_by_source_delete(self, condition: Expr | None = None) -> MergeBuilder:
        """``WHEN NOT MATCHED BY SOURCE [AND condition] THEN DELETE``."""
        return self._add(_when("NOT MATCHED BY SOURCE", condition, "DELETE"))

    def with_schema_evolution(self) -> MergeBuilder:
        """``MERGE WITH SCHEMA EVOLUTION``: source columns the target lacks are added to the table by
        ``UPDATE SET *`` / ``INSERT *``."""
        self._evolve = True
        return self

    def _add(self, clause: tuple[str, str]) -> MergeBuilder:
        self._clauses.append(clause)
        return self

    def sql(self, source_view: str) -> str:
        """The statement, reading the source from the view ``source_view``."""
        if not self._clauses:
            raise InvalidOptionError(
                "merge(...) has no clauses: add at least one of when_matched_update/_update_all/_delete, "
                "when_not_matched_insert/_insert_all, when_not_matched_by_source_update/_delete before execute()")
        clauses = [text for kind in _KINDS for k, text in self._clauses if k == kind]
        evolve = " WITH SCHEMA EVOLUTION" if self._evolve else ""
        return (f"MERGE{evolve} INTO {self._target.sql_name} AS {quote_identifier(self._target_alias)} "
                f"USING {quote_identifier(source_view)} AS {quote_identifier(self._source_alias)} "
                f"ON {self._on} " + " ".join(clauses))

    def execute(self) -> MergeMetrics:
        """Runs the MERGE (the source as a uniquely named temporary view, dropped afterwards) and returns the
        metrics of its commit. Several source rows matching one target row raise :class:`strata.MergeCardinalityError`; a row breaking a NOT NULL or CHECK constraint
        :class:`strata.ConstraintViolationError`; a conflicting concurrent commit
        :class:`strata.ConcurrentModificationError`. Nothing is committed in those cases."""
        view = "strata_merge_source_" + uuid.uuid4().hex
        statement = self.sql(view)
        self._source.createOrReplaceTempView(view)
        try:
            return self._target.run(statement, "MERGE", MergeMetrics)
        finally:
            self._target.spark.catalog.dropTempView(view)
