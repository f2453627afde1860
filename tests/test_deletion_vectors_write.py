"""Strata WRITING deletion vectors (issue 14): DELETE / UPDATE / MERGE on tables with 'delta.enableDeletionVectors'
are merge-on-read, and other engines must read what Strata wrote and write on top of it.

- The DML corpus of test_dml_delta_spark.py runs again on DV-enabled tables, on Strata and in the delta-spark 4.4.0
  peer (which then writes vectors too): equal contents and errors after every statement; each Strata commit marks
  rows deleted in vectors exactly where rows left files that keep live rows (checked against which file every row was
  read from before and after); delta-spark and deltalake read every version Strata wrote as Strata does.
- Round trips: delta-spark runs DELETE / MERGE / UPDATE on a Strata DV table, Strata reads the result and deletes on
  top of delta-spark's vectors, and all three engines agree on every version; Strata's DML on a DV table delta-spark
  created.
- Checkpoints Strata writes carry the vectors (also read with the JSON commits before them gone).
- The Python API (Table.delete / update / merge) on a DV table: the rows of the same SQL, and sensible metrics.
- A session in America/Los_Angeles with date and timestamp partition columns, against delta-spark in that zone.

The peer is one delta-spark application for the module (tests/delta_spark_peer.py). Strata reads go
through the catalog (SQL); test_dataframe_reader_on_partitioned_dv_table reads with the DataFrame reader. The Strata
bugs this module found are fixed, and their tests pass: the DataFrame reader on a partitioned DV table (an NPE, or
NULL partition values), MERGE metric names, a partition-only DELETE by hour() of a timestamp partition.
"""
from __future__ import annotations

import json
import shutil
import uuid
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame, SparkSession

import strata
from strata import DeleteMetrics, MergeMetrics, UpdateMetrics
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
    peer.send("corpus", tables=DV_TABLES, base=str(base / "delta"),
              statements=[{"table": table, "sql": sql} for _, table, sql in DV_STATEMENTS])
    paths = {name: base / "strata" / name for name in DV_TABLES}
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
    delta = peer.receive()
    assert "error" not in delta, delta
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


def merge_sql(t: str, source: str, inserted_p: str) -> str:
    return (f"MERGE INTO {t} AS t USING (SELECT * FROM VALUES {source} AS s(id, v)) s ON t.id = s.id "
            "WHEN MATCHED AND s.v = 'gone' THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v "
            f"WHEN NOT MATCHED THEN INSERT (id, v, p) VALUES (s.id, s.v, '{inserted_p}')")


def merge_model(model: dict[int, tuple[str, str | None]], source: list[tuple[int, str]], inserted_p: str) -> None:
    for key, v in source:
        if key in model:
            if v == "gone":
                del model[key]
            else:
                model[key] = (v, model[key][1])
        else:
            model[key] = (v, inserted_p)


def model_rows(model: dict[int, tuple[str, str | None]]) -> list[tuple[Any, ...]]:
    return sorted(((k, v, p) for k, (v, p) in model.items()), key=repr)


def removed_vectors(actions: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The vectors of the entries a commit removed, by file name."""
    return {file_name(a["remove"]["path"]): a["remove"]["deletionVector"] for a in actions
            if "remove" in a and a["remove"].get("deletionVector")}


def test_round_trip_strata_and_delta_spark_write_on_each_others_vectors(spark: SparkSession, peer: Peer,
                                                                         tmp_path: Path) -> None:
    path = tmp_path / "round_trip"
    t, d = f"strata.`{path}`", f"delta.`{path}`"
    model: dict[int, tuple[str, str | None]] = {i: (f"v{i}", ["a", "b", None][i % 3]) for i in range(60)}
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING, p STRING) USING strata PARTITIONED BY (p) {DV}")
    spark.sql(f"INSERT INTO {t} SELECT id, concat('v', id), CASE id % 3 WHEN 0 THEN 'a' WHEN 1 THEN 'b' END "
              "FROM range(0, 60, 1, 2)")  # two files in each partition
    # Strata: vectors by a DELETE, an UPDATE and a MERGE.
    spark.sql(f"DELETE FROM {t} WHERE id % 10 = 1")
    model = {k: r for k, r in model.items() if k % 10 != 1}
    spark.sql(f"UPDATE {t} SET v = upper(v) WHERE id % 7 = 0")
    model = {k: (v.upper() if k % 7 == 0 else v, p) for k, (v, p) in model.items()}
    source = [(5, "gone"), (6, "s6"), (100, "s100")]
    spark.sql(merge_sql(t, ", ".join(f"({k}, '{v}')" for k, v in source), "new"))
    merge_model(model, source, "new")
    strata_done = log_version(path)
    assert strata_rows(spark, path)[1] == model_rows(model)
    assert all(vector_adds(commit_actions(path, v)) for v in range(2, strata_done + 1))

    # delta-spark: its own DELETE, MERGE (with NOT MATCHED BY SOURCE) and UPDATE on Strata's vectors.
    source = [(3, "d3"), (4, "gone"), (6, "d6"), (200, "d200")]
    peer.call("sql", statements=[
        f"DELETE FROM {d} WHERE id % 10 = 2",
        merge_sql(d, ", ".join(f"({k}, '{v}')" for k, v in source), "d") + " WHEN NOT MATCHED BY SOURCE AND "
        "t.id = 59 THEN DELETE",
        f"UPDATE {d} SET p = 'moved' WHERE id IN (7, 8)"])
    model = {k: r for k, r in model.items() if k % 10 != 2}
    merge_model(model, source, "d")
    del model[59]
    model.update({k: (model[k][0], "moved") for k in (7, 8)})
    delta_done = log_version(path)
    assert delta_done == strata_done + 3
    delta_commits = [commit_actions(path, v) for v in range(strata_done + 1, delta_done + 1)]
    assert all(vector_adds(c) for c in delta_commits), "delta-spark wrote vectors"
    assert removed_vectors(delta_commits[0]), "delta-spark's DELETE grew vectors Strata wrote"
    assert strata_rows(spark, path)[1] == model_rows(model)
    assert peer.read(path) == [strata_json(spark, path)]

    # Strata again: a DELETE on files whose vectors delta-spark wrote (Strata unions its rows with them).
    spark.sql(f"DELETE FROM {t} WHERE id % 10 = 3 OR id = 200")
    model = {k: r for k, r in model.items() if k % 10 != 3 and k != 200}
    last = commit_actions(path, delta_done + 1)
    theirs = {a["pathOrInlineDv"] for c in delta_commits for a in (x["deletionVector"] for x in vector_adds(c))}
    grown = {f: dv for f, dv in removed_vectors(last).items() if dv["pathOrInlineDv"] in theirs}
    assert grown, "the DELETE replaced vectors delta-spark wrote"
    now = {file_name(a["path"]): a["deletionVector"] for a in vector_adds(last)}
    assert all(now[f]["cardinality"] > dv["cardinality"] for f, dv in grown.items() if f in now)

    columns, rows = strata_rows(spark, path)
    assert rows == model_rows(model)
    assert delta_rs_tuples(path, columns) == rows
    # Time travel: every version, read by the three engines.
    versions = list(range(log_version(path) + 1))
    assert peer.read(path, versions) == [strata_json(spark, path, v) for v in versions]
    for v in versions:
        assert delta_rs_tuples(path, columns, v) == strata_rows(spark, path, v)[1], v


def test_strata_writes_vectors_on_a_table_delta_spark_made(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    """delta-spark creates the DV table (its protocol and table properties) and writes vectors; Strata's DML on it
    grows them, and delta-spark and deltalake read the result."""
    path = tmp_path / "made_by_delta_spark"
    t, d = f"strata.`{path}`", f"delta.`{path}`"
    peer.call("sql", statements=[
        f"CREATE TABLE {d} (id BIGINT, v STRING, p STRING) USING delta PARTITIONED BY (p) {DV}",
        f"INSERT INTO {d} SELECT id, concat('v', id), IF(id % 2 = 0, 'even', 'odd') FROM range(0, 30, 1, 2)",
        f"DELETE FROM {d} WHERE id % 5 = 0"])
    model: dict[int, tuple[str, str | None]] = {i: (f"v{i}", "odd" if i % 2 else "even") for i in range(30) if i % 5}
    assert vector_adds(commit_actions(path, 2))
    for sql in [merge_sql(t, "(1, 's1'), (2, 'gone'), (3, 'gone'), (40, 's40')", "new"),
                f"UPDATE {t} SET v = upper(v) WHERE id > 20", f"DELETE FROM {t} WHERE id IN (4, 6, 7, 40)"]:
        _, before = rows_by_file(spark, path)
        spark.sql(sql)
        _, after = rows_by_file(spark, path)
        assert layout_problems(before, after, commit_actions(path, log_version(path))) == [], sql
    merge_model(model, [(1, "s1"), (2, "gone"), (3, "gone"), (40, "s40")], "new")
    model = {k: (v.upper() if k > 20 else v, p) for k, (v, p) in model.items() if k not in (4, 6, 7, 40)}
    assert removed_vectors(commit_actions(path, 3)), "Strata grew delta-spark's vectors"
    columns, rows = strata_rows(spark, path)
    assert rows == model_rows(model)
    assert delta_rs_tuples(path, columns) == rows
    assert peer.read(path) == [strata_json(spark, path)]


# ------------------------------------------------------------------------------------------------ checkpoints


def replay_json(path: Path, upto: int) -> dict[str, dict[str, Any] | None]:
    """Live files (by name) and their vectors, from the JSON commits 0..upto."""
    live: dict[str, dict[str, Any] | None] = {}
    for v in range(upto + 1):
        actions = commit_actions(path, v)
        for a in actions:
            if "remove" in a:
                live.pop(file_name(a["remove"]["path"]), None)
        for a in actions:
            if "add" in a:
                live[file_name(a["add"]["path"])] = a["add"].get("deletionVector")
    return live


DV_FIELDS = ["storageType", "pathOrInlineDv", "offset", "sizeInBytes", "cardinality"]


def test_checkpoints_strata_writes_carry_the_vectors(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    path = tmp_path / "checkpointed"
    t = f"strata.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING, p STRING) USING strata PARTITIONED BY (p) TBLPROPERTIES "
              "('delta.enableDeletionVectors' = 'true', 'delta.checkpointInterval' = '2')")
    spark.sql(f"INSERT INTO {t} SELECT id, concat('v', id), IF(id % 2 = 0, 'even', 'odd') FROM range(0, 40, 1, 2)")
    for statement in [
        "DELETE FROM {t} WHERE id % 5 = 0",                                           # 2
        "UPDATE {t} SET v = upper(v) WHERE id % 4 = 1",                               # 3
        merge_sql("{t}", "(2, 'gone'), (3, 'm3'), (77, 'm77')", "odd"),               # 4
        "DELETE FROM {t} WHERE id % 3 = 0",                                           # 5
        "DELETE FROM {t} WHERE id = 7",                                               # 6: checkpoint
        "DELETE FROM {t} WHERE id = 11 OR id = 38",                                   # 7: on vectors of the checkpoint
    ]:
        spark.sql(statement.format(t=t))
    assert log_version(path) == 7
    checkpoints = sorted(int(f.name.split(".")[0]) for f in (path / "_delta_log").glob("*.checkpoint.parquet"))
    assert 6 in checkpoints, checkpoints
    checkpoint = pq.read_table(path / "_delta_log" / f"{6:020d}.checkpoint.parquet").to_pylist()
    in_checkpoint = {file_name(r["add"]["path"]): r["add"].get("deletionVector") for r in checkpoint if r.get("add")}
    in_json = replay_json(path, 6)
    assert set(in_checkpoint) == set(in_json)
    assert sum(1 for dv in in_json.values() if dv) >= 2
    for f, dv in in_json.items():
        got = in_checkpoint[f]
        assert (dv is None and got is None) or (
            dv is not None and got is not None and [got[k] for k in DV_FIELDS] == [dv.get(k) for k in DV_FIELDS]), f

    versions = list(range(8))
    assert peer.read(path, versions) == [strata_json(spark, path, v) for v in versions]
    columns, rows = strata_rows(spark, path)
    assert delta_rs_tuples(path, columns) == rows
    # The log cleaned up to the checkpoint: every reader must take the vectors from it.
    copy = tmp_path / "checkpoint_only"
    shutil.copytree(path, copy)
    for v in range(6):
        (copy / "_delta_log" / f"{v:020d}.json").unlink()
    assert strata_json(spark, copy) == strata_json(spark, path)
    assert peer.read(copy) == [strata_json(spark, path)]
    assert delta_rs_tuples(copy, columns) == rows


# ------------------------------------------------------------------------------------------------ Python API


def test_python_api_on_a_dv_table_matches_sql_with_sensible_metrics(spark: SparkSession) -> None:
    from pyspark.sql import functions as F

    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.dv_write")
    api, twin = (f"strata.dv_write.{kind}_{uuid.uuid4().hex[:8]}" for kind in ("api", "sql"))
    try:
        for name in (api, twin):
            spark.sql(f"CREATE TABLE {name} (id BIGINT, v STRING, p STRING) USING strata PARTITIONED BY (p) {DV}")
            spark.range(0, 40).selectExpr("id", "concat('v', id) AS v", "IF(id % 2 = 0, 'even', 'odd') AS p") \
                .coalesce(1).writeTo(name).append()  # one file per partition
        t = strata.Table.for_name(spark, api)
        location = Path(unquote(urlparse(t.path).path))

        def same(sql: str) -> None:
            spark.sql(sql.format(t=twin))
            assert sorted(t.to_df().collect()) == sorted(spark.table(twin).collect()), sql

        m = t.delete("id % 5 = 0")
        same("DELETE FROM {t} WHERE id % 5 = 0")
        assert m == DeleteMetrics(version=2, num_deleted_rows=8, num_copied_rows=0, num_removed_files=0,
                                  num_added_files=0, num_removed_bytes=0, num_added_bytes=0,
                                  num_deletion_vectors_added=2, num_deletion_vectors_removed=0)
        assert len(vector_adds(commit_actions(location, 2))) == 2

        m = t.delete(F.col("p") == F.lit("odd"))  # a whole partition, whose file has a vector: 20 - 4 rows live
        same("DELETE FROM {t} WHERE p = 'odd'")
        assert (m.version, m.num_deleted_rows, m.num_removed_files, m.num_added_files) == (3, 16, 1, 0), m

        u = t.update({"v": F.upper(F.col("v"))}, "id < 12")  # 2, 4, 6, 8 (0 and 10 are deleted)
        same("UPDATE {t} SET v = upper(v) WHERE id < 12")
        assert u == UpdateMetrics(version=4, num_updated_rows=4, num_copied_rows=0, num_removed_files=0,
                                  num_added_files=1, num_removed_bytes=0, num_added_bytes=u.num_added_bytes,
                                  num_deletion_vectors_added=0, num_deletion_vectors_removed=1)  # replaced
        assert u.num_added_bytes > 0

        source = spark.createDataFrame([(2, "m2", False), (4, "x", True), (100, "m100", False)],
                                       "id long, v string, gone boolean")
        m2 = (t.merge(source, "target.id = source.id").when_matched_delete("source.gone")
              .when_matched_update({"v": "source.v"})
              .when_not_matched_insert({"id": "source.id", "v": "source.v", "p": "'new'"})
              .when_not_matched_by_source_delete(F.col("target.id") == 38).execute())
        same("MERGE INTO {t} AS target USING (SELECT * FROM VALUES (2, 'm2', false), (4, 'x', true), "
             "(100, 'm100', false) AS s(id, v, gone)) source ON target.id = source.id "
             "WHEN MATCHED AND source.gone THEN DELETE WHEN MATCHED THEN UPDATE SET v = source.v "
             "WHEN NOT MATCHED THEN INSERT (id, v, p) VALUES (source.id, source.v, 'new') "
             "WHEN NOT MATCHED BY SOURCE AND target.id = 38 THEN DELETE")
        assert m2 == MergeMetrics(
            version=5, num_target_rows_inserted=1, num_target_rows_updated=1, num_target_rows_deleted=2,
            num_target_rows_copied=0, num_target_rows_matched_updated=1, num_target_rows_matched_deleted=1,
            num_target_rows_not_matched_by_source_updated=0, num_target_rows_not_matched_by_source_deleted=1,
            num_output_rows=2, num_target_files_removed=0, num_target_files_added=2,
            num_target_bytes_removed=0, num_target_bytes_added=m2.num_target_bytes_added,
            # A new vector on the UPDATE's file (rows 2 and 4), one replaced on the first file (row 38).
            num_target_deletion_vectors_added=1, num_target_deletion_vectors_removed=1)
        assert m2.num_target_bytes_added > 0
        assert sorted(t.to_df().collect()) == sorted(
            [(i, f"V{i}" if i in (6, 8) else f"v{i}", "even") for i in range(0, 40, 2) if i % 5 and i not in (2, 4, 38)]
            + [(2, "m2", "even"), (100, "m100", "new")])
        assert t.history(limit=1).first()["operation"] == "MERGE"  # type: ignore[index]
    finally:
        for name in (api, twin):
            spark.sql(f"DROP TABLE IF EXISTS {name}")


# ------------------------------------------------------------------------------------------------ time zones


# Partitioned by a date and a timestamp, in America/Los_Angeles: the spring-forward gap (02:30 does not exist on
# 2024-03-10), both sides of the fall-back day, 1969 (before the epoch in UTC: 1970-01-01 00:00), NULLs.
TZ_TABLE = {"tz": [
    f"CREATE TABLE {{t}} (id BIGINT, d DATE, ts TIMESTAMP, v STRING) USING {{using}} PARTITIONED BY (d, ts) {DV}",
    "INSERT INTO {t} VALUES " + ", ".join(
        f"({i}, DATE'{d}', TIMESTAMP'{ts}', '{v}')" if d else f"({i}, NULL, NULL, '{v}')" for i, d, ts, v in [
            (1, "2024-03-10", "2024-03-10 02:30:00", "a"), (2, "2024-03-10", "2024-03-10 02:30:00", "b"),
            (3, "2024-03-10", "2024-03-10 02:30:00", "c"), (4, "2024-11-03", "2024-11-03 00:30:00", "pdt"),
            (5, "2024-11-03", "2024-11-03 00:30:00", "pdt2"), (6, "2024-11-03", "2024-11-03 03:30:00", "pst"),
            (7, "2024-11-03", "2024-11-03 03:30:00", "pst2"), (8, "1969-12-31", "1969-12-31 16:00:00", "epoch"),
            (9, "1969-12-31", "1969-12-31 16:00:00", "epoch2"), (10, "", "", "n1"), (11, "", "", "n2")])]}
TZ_STATEMENTS = [
    "DELETE FROM {t} WHERE id = 2",
    "DELETE FROM {t} WHERE ts = TIMESTAMP'2024-11-03 00:30:00' AND v = 'pdt'",
    "UPDATE {t} SET v = upper(v) WHERE ts = TIMESTAMP'2024-11-03 03:30:00' AND id = 6",
    "UPDATE {t} SET ts = ts + INTERVAL 1 HOUR WHERE id = 8",                                      # moves partition
    "UPDATE {t} SET d = DATE'2024-01-01', ts = TIMESTAMP'2024-01-01 00:00:00' WHERE d IS NULL AND id = 10",
    "MERGE INTO {t} AS t USING (SELECT * FROM VALUES (3, 'm3'), (12, 'm12') AS s(id, v)) s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (id, d, ts, v) "
    "VALUES (s.id, DATE'2024-11-03', TIMESTAMP'2024-11-03 03:30:00', s.v)",
    "DELETE FROM {t} WHERE d = DATE'1969-12-31' AND ts < TIMESTAMP'1969-12-31 16:30:00'",       # a file with a vector
]
# The repeated hour 01:30 of 2024-11-03, PDT and PST: two partitions. Not compared with delta-spark, whose writer puts
# rows of both instants into one partition (it groups rows by the local time string); expected rows in UTC instead.
FALL_BACK = [
    "INSERT INTO {t} VALUES (20, DATE'2024-11-03', TIMESTAMP'2024-11-03 01:30:00-07:00', 'pdt-a'), "
    "(21, DATE'2024-11-03', TIMESTAMP'2024-11-03 01:30:00-07:00', 'pdt-b'), "
    "(22, DATE'2024-11-03', TIMESTAMP'2024-11-03 01:30:00-08:00', 'pst-a'), "
    "(23, DATE'2024-11-03', TIMESTAMP'2024-11-03 01:30:00-08:00', 'pst-b')",
    "DELETE FROM {t} WHERE ts = TIMESTAMP'2024-11-03 01:30:00-08:00' AND v = 'pst-a'",
    "UPDATE {t} SET v = 'PDT' WHERE ts = TIMESTAMP'2024-11-03 01:30:00-07:00' AND id = 20",
]


def test_non_utc_session_with_date_and_timestamp_partitions(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    (tmp_path / "delta").mkdir()
    peer.send("corpus", tables=TZ_TABLE, base=str(tmp_path / "delta"), time_zone=LA,
              statements=[{"table": "tz", "sql": sql} for sql in TZ_STATEMENTS])
    path = tmp_path / "strata_tz"
    t = f"strata.`{path}`"
    mine = []
    spark.conf.set("spark.sql.session.timeZone", LA)
    try:
        for statement in TZ_TABLE["tz"]:
            spark.sql(statement.format(t=t, using="strata"))
        for sql in TZ_STATEMENTS + FALL_BACK:
            _, before = rows_by_file(spark, path)
            version = log_version(path)
            spark.sql(sql.format(t=t))
            _, after = rows_by_file(spark, path)
            assert log_version(path) == version + 1, sql
            if not sql.startswith("INSERT"):
                assert layout_problems(before, after, commit_actions(path, version + 1)) == [], sql
                assert sum((before - after).values()) == 1, sql  # every statement deletes or changes one row
            mine.append(strata_json(spark, path))
        strata_la = strata_json(spark, path)
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    theirs = peer.receive()
    assert "error" not in theirs, theirs
    for sql, json_rows, result in zip(TZ_STATEMENTS, mine, theirs["results"]):
        assert "error" not in result and json_rows == result["rows"], sql
    assert sum(len(vector_adds(commit_actions(path, v))) for v in range(2, log_version(path) + 1)) >= 7
    fall_back = spark.sql(f"SELECT id, CAST(ts AS STRING), v FROM {t} WHERE id >= 20").collect()
    assert sorted(tuple(r) for r in fall_back) == [
        (20, "2024-11-03 08:30:00", "PDT"), (21, "2024-11-03 08:30:00", "pdt-b"), (23, "2024-11-03 09:30:00", "pst-b")]
    assert peer.read(path, time_zone=LA) == [strata_la]
    assert peer.read(path) == [strata_json(spark, path)]
    columns, rows = strata_rows(spark, path)
    assert delta_rs_tuples(path, columns) == rows
    assert len(rows) == 12


def test_partition_delete_by_datetime_function(spark: SparkSession, tmp_path: Path) -> None:
    """A DELETE on partition columns only, by hour(): Spark hands it over as EXTRACT(HOUR FROM ts), which Strata
    evaluates on the partition values (once an INTERNAL_ERROR). More functions and zones: DmlSemanticsSuite."""
    t = f"strata.`{tmp_path / 'by_hour'}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, ts TIMESTAMP) USING strata PARTITIONED BY (ts) {DV}")
    spark.sql(f"INSERT INTO {t} VALUES (1, TIMESTAMP'2024-01-01 16:00:00'), (2, TIMESTAMP'2024-01-01 10:00:00')")
    spark.sql(f"DELETE FROM {t} WHERE hour(ts) = 16")
    assert [r[0] for r in spark.sql(f"SELECT id FROM {t}").collect()] == [2]


def test_property_without_protocol_feature_writes_no_vectors(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    """Issue 30, defect 4: another writer set delta.enableDeletionVectors without adding the deletionVectors feature to
    the protocol. Vectors written then would be ignored by delta-spark and deltalake (the deleted rows read back), so
    Strata's DML rewrites files (copy-on-write), and every engine reads the changed rows alike."""
    path = tmp_path / "t"
    t = f"strata.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING) USING strata")
    spark.range(0, 20, 1, 1).selectExpr("id", "concat('v', id) AS v").write.format("strata").mode("append").save(str(path))
    meta = next(a["metaData"] for a in commit_actions(path, 0) if "metaData" in a)
    meta["configuration"]["delta.enableDeletionVectors"] = "true"
    v = log_version(path) + 1
    (path / "_delta_log" / f"{v:020d}.json").write_text(json.dumps({"metaData": meta}) + "\n", encoding="utf-8")
    spark.sql(f"DELETE FROM {t} WHERE id = 4")
    spark.sql(f"UPDATE {t} SET v = 'u' WHERE id = 5")
    assert not any(vector_adds(commit_actions(path, n)) for n in range(v + 1, log_version(path) + 1))
    columns, mine = strata_rows(spark, path)
    expected = sorted(((i, "u" if i == 5 else f"v{i}") for i in range(20) if i != 4), key=repr)
    assert mine == expected
    assert delta_rs_tuples(path, columns) == expected
    assert peer.read(path, versions=[log_version(path)]) == [strata_json(spark, path)]
