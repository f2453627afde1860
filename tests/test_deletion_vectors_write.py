"""Strata WRITING deletion vectors (issue 14): DELETE / UPDATE / MERGE on tables with 'delta.enableDeletionVectors'
are merge-on-read, and other engines must read what Strata wrote and write on top of it.

- The DML corpus of test_dml_delta_spark.py runs again on DV-enabled tables, on Strata and in the delta-spark 4.4.0
  peer (which then writes vectors too): equal contents and errors after every statement; each Strata commit marks
  rows deleted in vectors exactly where rows left files that keep live rows (checked against which file every row was
  read from before and after); delta-spark and deltalake read every version Strata wrote as Strata does.
- Round trips, checkpoints with vectors, the Python API on DV tables and a non-UTC session: in
  test_deletion_vectors_interop.py, which shares this module's helpers.

The peer is one delta-spark application for the module (tests/delta_spark_peer.py). Strata reads go
through the catalog (SQL); test_dataframe_reader_on_partitioned_dv_table reads with the DataFrame reader. The Strata
bugs this module found are fixed, and their tests pass: the DataFrame reader on a partitioned DV table (an NPE, or
NULL partition values), MERGE metric names, a partition-only DELETE by hour() of a timestamp partition.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from pyspark.sql import DataFrame, SparkSession

from delta_spark_peer import Peer
from table_reads import commit_actions, delta_rs_tuples, log_version, plain
from test_dml_delta_spark import STATEMENTS, TABLES, M

DV = "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
# The corpus's tables with vectors enabled; `part` and `flat` get 16 more rows (negative ids, 4 in each partition), so
# that most statements delete rows from files that keep others: those deletes must go to vectors, not whole files.
FILLERS = [f"(-{i}, 'f{i}', DATE'2030-01-0{i % 9 + 1}', TIMESTAMP'2030-01-01 00:00:0{i % 10}', {i}.25, 'filler{i}'"
           for i in range(1, 17)]
FILLER_PARTITIONS = [", NULL", ", 'x'", ", 'y'", ", 'z'"]


def dv_ddl(name: str, ddl: list[str]) -> list[str]:
    statements = [ddl[0] + " " + DV]
    for sql in ddl[1:]:
        if name in ("part", "flat") and sql.startswith("INSERT"):
            partitions = FILLER_PARTITIONS if name == "part" else [""]
            sql += "".join(f", {row}{partitions[i % len(partitions)]})" for i, row in enumerate(FILLERS))
        statements.append(sql)
    return statements


DV_TABLES = {name: dv_ddl(name, ddl) for name, ddl in TABLES.items()}
LA = "America/Los_Angeles"




# ------------------------------------------------------------------------------------------------ log and rows


def file_name(path: str) -> str:
    """A data file's name (Parquet names are unique in a table), from a log path or input_file_name()."""
    return unquote(path).rsplit("/", 1)[-1]


def vector_adds(actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [a["add"] for a in actions if "add" in a and a["add"].get("deletionVector")]


def strata_df(spark: SparkSession, path: Path, version: int | None = None) -> DataFrame:
    """Strata's read of the table through the catalog (SQL); see test_dataframe_reader_on_partitioned_dv_table for
    the DataFrame reader (spark.read.format("strata").load)."""
    return spark.sql(f"SELECT * FROM strata.`{path}`" + ("" if version is None else f" VERSION AS OF {version}"))


def strata_json(spark: SparkSession, path: Path, version: int | None = None) -> list[str]:
    return sorted(strata_df(spark, path, version).toJSON().collect())


def rows_by_file(spark: SparkSession, path: Path) -> tuple[list[str], Counter[tuple[str, tuple[Any, ...]]]]:
    """The table's columns, and its rows with the file each was read from (input_file_name())."""
    df = spark.sql(f"SELECT input_file_name() AS `_file_`, * FROM strata.`{path}`")
    return df.columns[1:], Counter((file_name(r[0]), tuple(r[1:])) for r in df.collect())


def strata_rows(spark: SparkSession, path: Path, version: int | None = None) -> tuple[list[str], list[tuple[Any, ...]]]:
    df = strata_df(spark, path, version)
    return df.columns, sorted((tuple(plain(v) for v in r) for r in df.collect()), key=repr)


def layout_problems(before: Counter[tuple[str, tuple[Any, ...]]], after: Counter[tuple[str, tuple[Any, ...]]],
                    commit: list[dict[str, Any]] | None) -> list[str]:
    """What is wrong with how a merge-on-read commit changed the files, given which file every row was read from
    before and after it: a file that lost rows and keeps some must be removed and re-added with a vector holding
    exactly its deleted rows (loose stats), a file that lost every row removed, a file that lost none untouched,
    and new files (the inserted and updated rows) carry no vector."""
    lost = before - after
    touched = {f for f, _ in lost}
    live_after = Counter()  # type: Counter[str]
    for (f, _), n in after.items():
        live_after[f] += n
    if commit is None:
        return [f"rows left {sorted(touched)} but nothing was committed"] if touched else []
    removes = {file_name(a["remove"]["path"]): a["remove"] for a in commit if "remove" in a}
    adds = {file_name(a["add"]["path"]): a["add"] for a in commit if "add" in a}
    problems = []
    for f in sorted({f for f, _ in before}):
        add, was_removed = adds.get(f), f in removes
        if f not in touched:
            if was_removed or add is not None:
                problems.append(f"{f} lost no row but the commit changed it (remove {was_removed}, add {add})")
        elif live_after[f]:
            if not was_removed or add is None or not add.get("deletionVector"):
                problems.append(f"{f} lost {sum(n for (g, _), n in lost.items() if g == f)} rows and keeps "
                                f"{live_after[f]}: expected remove + add with a deletion vector, got remove "
                                f"{was_removed}, add {add}")
                continue
            stats = json.loads(add["stats"])
            deleted = stats["numRecords"] - live_after[f]
            if add["deletionVector"]["cardinality"] != deleted or stats.get("tightBounds") is not False:
                problems.append(f"{f}: vector {add['deletionVector']} for {deleted} deleted rows, stats {stats}")
        elif not was_removed or add is not None:
            problems.append(f"{f} lost all its rows: expected a remove and no add, got remove {was_removed}, add {add}")
    problems += [f"new file {f} has a vector: {a}" for f, a in adds.items()
                 if f not in {g for g, _ in before} and a.get("deletionVector")]
    return problems


# ------------------------------------------------------------------------------------------------ the DV corpus

# The statements of test_dml_delta_spark.py run again here, in their order: a subset, to keep the module's time
# down (the others repeat kinds already here, or only touch files holding a single row, where a vector has nothing
# to keep); plus a few on the filler rows, which share files with other rows: vectors that grow over several
# statements, a MERGE with every clause kind on such files, rows moving partition.
CORPUS_IDS = [
    "delete-one-key", "delete-null-key-condition", "update-one-row", "update-skips-null-id",
    "update-partition-column-moves-row", "update-by-partition", "update-where-id-is-null", "delete-null-partition",
    "merge-matched-update", "merge-insert-star-new-partition", "merge-by-source-delete-conditional",
    "merge-null-safe-key", "merge-all-clause-kinds", "merge-string-key-moves-partition", "delete-by-timestamp",
    "update-date-arithmetic", "delete-null-or-value", "flat-delete-in-list", "flat-update-not-null-condition",
    "flat-merge-upsert", "flat-merge-matched-delete-conditional", "flat-merge-by-source-delete", "flat-delete-all",
    "empty-target-merge-insert-star", "empty-merge-null-safe-update-star", "merge-cardinality-violation-fails-on-both",
    "merge-with-schema-evolution"]
FILLER_MERGE = (M + "(SELECT * FROM VALUES (-1, 'm-1', false), (-2, 'm-2', true), (-3, 'm-3', false), "
                "(-7, 'm-7', false), (-11, 'm-11', true), (500, 'm500', false) AS s(id, v, gone)) s ON t.id = s.id "
                "WHEN MATCHED AND s.gone THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v "
                "WHEN NOT MATCHED THEN INSERT (id, v{p}) VALUES (s.id, s.v{x}) "
                "WHEN NOT MATCHED BY SOURCE AND t.id = -5 THEN DELETE "
                "WHEN NOT MATCHED BY SOURCE AND t.id IN (-9, -13) THEN UPDATE SET v = 'by-source'")
EXTRA_AFTER: dict[str, list[tuple[str, str, str]]] = {
    "update-where-id-is-null": [
        ("dv-merge-filler-rows", "part", FILLER_MERGE.replace("{p}", ", p").replace("{x}", ", 'x'")),
        ("dv-delete-filler-range", "part", "DELETE FROM {t} WHERE id BETWEEN -12 AND -8"),
        ("dv-update-filler-moves-partition", "part", "UPDATE {t} SET p = 'moved' WHERE id IN (-14, -15, -16)")],
    "flat-merge-upsert": [
        ("dv-flat-merge-filler-rows", "flat", FILLER_MERGE.replace("{p}", "").replace("{x}", "")),
        ("dv-flat-delete-filler-range", "flat", "DELETE FROM {t} WHERE id BETWEEN -6 AND -4 OR v = 'm-1'")],
}
BY_ID = {s[0]: s for s in STATEMENTS}
DV_STATEMENTS = [s for i in CORPUS_IDS for s in [BY_ID[i], *EXTRA_AFTER.get(i, [])]]


@pytest.fixture(scope="module")
def corpus(spark: SparkSession, peer: Peer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("dv_corpus")
    (base / "delta").mkdir()
    (base / "strata").mkdir()
    paths = {name: base / "strata" / name for name in DV_TABLES}

    def run_mine() -> list[dict[str, Any]]:
        for name, ddl in DV_TABLES.items():
            for statement in ddl:
                spark.sql(statement.format(t=f"strata.`{paths[name]}`", using="strata"))
        results: list[dict[str, Any]] = []
        state = {name: rows_by_file(spark, path) for name, path in paths.items()}
        for _, table, sql in DV_STATEMENTS:
            path = paths[table]
            (columns, before), version_before = state[table], log_version(path)
            result: dict[str, Any] = {"table": table}
            try:
                spark.sql(sql.format(t=f"strata.`{path}`", using="strata"))
            except Exception as e:
                result["error"] = str(e).strip().splitlines()[0][:500]
            result["version"] = log_version(path)
            state[table] = new_columns, after = rows_by_file(spark, path)
            keep = [new_columns.index(c) for c in columns]  # the columns before (MERGE WITH SCHEMA EVOLUTION adds one)
            after = Counter({(f, tuple(r[i] for i in keep)): n for (f, r), n in after.items()})
            commit = commit_actions(path, result["version"]) if result["version"] > version_before else None
            result["problems"] = layout_problems(before, after, commit)
            result["rows_left_files"] = sum((before - after).values())
            result["vectors"] = len(vector_adds(commit or []))
            result["committed"], result["operation"], result["metrics"] = last_commit(path, version_before,
                                                                                       result["version"])
            result["rows"] = strata_json(spark, path)
            results.append(result)
        return results

    delta, results = peer.beside("corpus", run_mine, tables=DV_TABLES, base=str(base / "delta"),
                                 statements=[{"table": table, "sql": sql} for _, table, sql in DV_STATEMENTS])
    assert len(delta["results"]) == len(DV_STATEMENTS)
    last = {name: len(ddl) - 1 for name, ddl in DV_TABLES.items()}  # CREATE is version 0, the INSERT version 1
    for (_, table, _), result in zip(DV_STATEMENTS, delta["results"]):
        result["committed"], result["operation"], result["metrics"] = last_commit(base / "delta" / table,
                                                                                   last[table], result["version"])
        last[table] = result["version"]
    # delta-spark reads every version of Strata's tables that a statement left.
    versions = {name: sorted({r["version"] for r in results if r["table"] == name}) for name in DV_TABLES}
    read = {name: dict(zip(versions[name], peer.read(paths[name], versions[name]))) for name in DV_TABLES}
    return {"strata": results, "delta": delta["results"], "paths": paths, "delta_paths": base / "delta",
            "peer_reads": read}


def last_commit(path: Path, version_before: int, version: int) -> tuple[bool, str | None, dict[str, str]]:
    """Whether a statement that left the table at `version` committed, and its commit's operation and metrics."""
    if version == version_before:
        return False, None, {}
    info = next(a["commitInfo"] for a in commit_actions(path, version) if "commitInfo" in a)
    return True, info["operation"], info.get("operationMetrics", {})


def statement_params() -> list[Any]:
    return [pytest.param(i, id=s[0]) for i, s in enumerate(DV_STATEMENTS)]


@pytest.mark.parametrize("index", statement_params())
def test_statement_on_dv_table_gives_delta_spark_contents(corpus: dict[str, Any], index: int) -> None:
    mine, theirs = corpus["strata"][index], corpus["delta"][index]
    sql = DV_STATEMENTS[index][2]
    assert ("error" in mine) == ("error" in theirs), (sql, mine.get("error"), theirs.get("error"))
    assert mine["rows"] == theirs["rows"], sql


def affected_rows(result: dict[str, Any]) -> int | None:
    """The target rows a statement deleted or changed, by its commit's metrics (None: not recorded)."""
    if not result["committed"] or result["operation"] == "WRITE":  # nothing, or an insert-only MERGE (an append)
        return 0
    m = result["metrics"]
    names = {"DELETE": ["numDeletedRows"], "UPDATE": ["numUpdatedRows"],
             "MERGE": ["numTargetRowsUpdated", "numTargetRowsDeleted"]}[result["operation"]]
    return sum(int(m[n]) for n in names) if all(n in m for n in names) else None


@pytest.mark.parametrize("index", statement_params())
def test_commit_marks_deleted_rows_in_vectors(corpus: dict[str, Any], index: int) -> None:
    """The commit's files agree with where the rows were read from before and after it (layout_problems), and the
    rows that left their files are exactly the ones delta-spark says the statement deleted or changed: no row was
    copied to a new file unchanged (copy-on-write)."""
    mine, sql = corpus["strata"][index], DV_STATEMENTS[index][2]
    assert mine["problems"] == [], sql
    expected = affected_rows(corpus["delta"][index])
    if expected is not None:
        assert mine["rows_left_files"] == expected, sql


@pytest.mark.parametrize("index", statement_params())
def test_delta_spark_and_deltalake_read_the_version_strata_wrote(spark: SparkSession, corpus: dict[str, Any],
                                                                  index: int) -> None:
    mine, sql = corpus["strata"][index], DV_STATEMENTS[index][2]
    path = corpus["paths"][mine["table"]]
    assert corpus["peer_reads"][mine["table"]][mine["version"]] == mine["rows"], sql
    columns, rows = strata_rows(spark, path, mine["version"])
    assert delta_rs_tuples(path, columns, mine["version"]) == rows, sql


def test_corpus_writes_vectors_on_both_engines(corpus: dict[str, Any]) -> None:
    """Not vacuous: many statements left vectors, in Strata's log and in delta-spark's."""
    mine = [DV_STATEMENTS[i][0] for i, r in enumerate(corpus["strata"]) if r["vectors"]]
    theirs = 0
    for name in DV_TABLES:
        for f in (corpus["delta_paths"] / name / "_delta_log").glob("*.json"):
            actions = [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
            theirs += 1 if vector_adds(actions) else 0
    assert len(mine) >= 12 and theirs >= 12, (mine, theirs)
    assert {"dv-merge-filler-rows", "dv-flat-merge-filler-rows", "flat-merge-matched-delete-conditional"} \
        <= set(mine), mine
    for name, path in corpus["paths"].items():
        assert list(path.glob("deletion_vector_*.bin")) or name in ("empty", "evo"), name


@pytest.mark.parametrize("vectorized", [True, False])
def test_dataframe_reader_on_partitioned_dv_table(spark: SparkSession, corpus: dict[str, Any],
                                                  vectorized: bool) -> None:
    """spark.read.format("strata").load(path) (also Table.for_path(...).to_df()) reads what the catalog reads: once
    fixed bugs, an NPE in the vectorized reader (WritableColumnVector.arrayData) and NULL partition values from the
    row-based one for the files without a vector when another file of the scan has one."""
    path = corpus["paths"]["part"]
    spark.conf.set("spark.sql.parquet.enableVectorizedReader", str(vectorized).lower())
    try:
        assert sorted(spark.read.format("strata").load(str(path)).toJSON().collect()) == strata_json(spark, path)
    finally:
        spark.conf.unset("spark.sql.parquet.enableVectorizedReader")


# Row-count metrics of each DML, as delta-spark names them; a statement's must equal delta-spark's. File and vector
# counts depend on how each engine laid out the files, so they are not compared.
ROW_METRICS = ["numDeletedRows", "numUpdatedRows", "numCopiedRows", "numTargetRowsInserted", "numTargetRowsUpdated",
               "numTargetRowsDeleted", "numTargetRowsCopied", "numTargetRowsMatchedUpdated",
               "numTargetRowsMatchedDeleted", "numTargetRowsNotMatchedBySourceUpdated",
               "numTargetRowsNotMatchedBySourceDeleted"]


@pytest.mark.parametrize("index", statement_params())
def test_row_metrics_equal_delta_spark(corpus: dict[str, Any], index: int) -> None:
    """Where both engines committed (delta-spark commits nothing for a statement that changes nothing; Strata does)."""
    mine, theirs = corpus["strata"][index], corpus["delta"][index]
    if not (mine["committed"] and theirs["committed"]):
        return
    if mine["operation"] == "WRITE":  # Spark runs a MERGE with only NOT MATCHED INSERT clauses as an append
        assert mine["metrics"]["numOutputRows"] == theirs["metrics"]["numTargetRowsInserted"], DV_STATEMENTS[index][2]
        return
    expected = {k: theirs["metrics"][k] for k in ROW_METRICS if k in theirs["metrics"]}
    assert {k: mine["metrics"].get(k) for k in expected} == expected, DV_STATEMENTS[index][2]


# delta-spark's MERGE names its vector and byte counts so; strata.MergeMetrics reads the byte counts by these names.
MERGE_METRICS = ["numTargetBytesAdded", "numTargetBytesRemoved", "numTargetDeletionVectorsAdded",
                 "numTargetDeletionVectorsRemoved", "numTargetDeletionVectorsUpdated"]


def test_dv_merge_commits_record_delta_spark_merge_metrics(corpus: dict[str, Any]) -> None:
    """A merge-on-read MERGE's commit names its byte and vector counts as delta-spark does (numTarget*), which
    strata.MergeMetrics reads."""
    merges = [(DV_STATEMENTS[i][0], r["metrics"]) for i, r in enumerate(corpus["strata"]) if r["operation"] == "MERGE"]
    assert len(merges) >= 8
    for statement, metrics in merges:
        assert [k for k in MERGE_METRICS if k not in metrics] == [], statement


# ------------------------------------------------------------------------------------------------ round trips
