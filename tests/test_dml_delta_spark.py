"""A corpus of DELETE / UPDATE / MERGE statements run on Strata tables and, in the run's delta-spark peer (while Strata
runs it here), on delta-spark tables made by the same SQL: the contents must be equal after every
statement (each statement is its own test, so a failure names it), a statement failing on one must fail on the
other, and delta-rs (`deltalake`) reads Strata's final tables as Strata does.

`{t}` stands for the table (``strata.`path` `` / ``delta.`path` ``) and `{using}` for the format.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession

from delta_spark_peer import Peer, same_step
from table_reads import plain

COLS = "id BIGINT, k STRING, d DATE, ts TIMESTAMP, amt DECIMAL(10,2), v STRING"
ROWS = [
    "(1, 'a', DATE'2024-01-01', TIMESTAMP'2024-01-01 10:00:00', 1.50, 'v1'{p_x})",
    "(2, 'b', DATE'2024-01-02', TIMESTAMP'2024-01-02 10:00:00', 2.50, 'v2'{p_x})",
    "(3, NULL, DATE'2024-01-03', NULL, NULL, 'v3'{p_y})",
    "(4, 'd', NULL, TIMESTAMP'2024-03-10 02:30:00', 4.00, NULL{p_y})",
    "(NULL, 'e', DATE'2024-01-05', TIMESTAMP'2024-01-05 00:00:00', 5.25, 'v5'{p_z})",
    "(6, 'f', DATE'2024-01-06', TIMESTAMP'2024-01-06 23:59:59.999999', -6.75, 'v6'{p_null})",
    "(7, 'g', DATE'1969-12-31', TIMESTAMP'1969-12-31 23:59:59', 0.00, 'v7'{p_z})",
    "(8, 'h', DATE'2024-02-29', TIMESTAMP'2024-02-29 12:00:00', 8.88, 'v8'{p_x})",
]
PART = {"p_x": ", 'x'", "p_y": ", 'y'", "p_z": ", 'z'", "p_null": ", NULL"}
FLAT = {k: "" for k in PART}
TABLES = {
    "part": [f"CREATE TABLE {{t}} ({COLS}, p STRING) USING {{using}} PARTITIONED BY (p)",
             "INSERT INTO {t} VALUES " + ", ".join(r.format(**PART) for r in ROWS)],
    "flat": [f"CREATE TABLE {{t}} ({COLS}) USING {{using}}",
             "INSERT INTO {t} VALUES " + ", ".join(r.format(**FLAT) for r in ROWS)],
    "empty": ["CREATE TABLE {t} (id BIGINT, v STRING) USING {using}"],
    "evo": ["CREATE TABLE {t} (id BIGINT, v STRING) USING {using}", "INSERT INTO {t} VALUES (1, 'a'), (2, 'b')"],
}
M = "MERGE INTO {t} AS t USING "
ALL_COLS = ("SELECT 101 AS id, 'k101' AS k, DATE'2024-05-01' AS d, TIMESTAMP'2024-05-01 00:00:00' AS ts, "
            "CAST(1.01 AS DECIMAL(10,2)) AS amt, 'n101' AS v, 'new' AS p")
STATEMENTS: list[tuple[str, str, str]] = [  # (id, table, SQL)
    ("delete-one-key", "part", "DELETE FROM {t} WHERE id = 2"),
    ("delete-null-key-condition", "part", "DELETE FROM {t} WHERE k IS NULL"),
    ("delete-no-op", "part", "DELETE FROM {t} WHERE amt > 100"),
    ("update-one-row", "part", "UPDATE {t} SET v = 'u4' WHERE id = 4"),
    ("update-skips-null-id", "part", "UPDATE {t} SET v = upper(v) WHERE id > 5"),
    ("update-partition-column-moves-row", "part", "UPDATE {t} SET p = 'moved' WHERE id = 1"),
    ("update-by-partition", "part", "UPDATE {t} SET amt = amt * 2 WHERE p = 'z'"),
    ("update-where-id-is-null", "part", "UPDATE {t} SET v = 'none' WHERE id IS NULL"),
    ("update-set-null-by-date", "part", "UPDATE {t} SET k = NULL WHERE d < DATE'2000-01-01'"),
    ("update-no-op", "part", "UPDATE {t} SET v = 'never' WHERE 1 = 0"),
    ("delete-null-partition", "part", "DELETE FROM {t} WHERE p IS NULL"),
    ("merge-matched-update", "part", M + "(SELECT * FROM VALUES (4, 'D') AS s(id, v)) s ON t.id = s.id "
     "WHEN MATCHED THEN UPDATE SET v = s.v"),
    ("merge-matched-delete", "part", M + "(SELECT * FROM VALUES (7) AS s(id)) s ON t.id = s.id "
     "WHEN MATCHED THEN DELETE"),
    ("merge-not-matched-insert-columns", "part", M + "(SELECT * FROM VALUES (100, 'n100', 'x') AS s(id, v, p)) s "
     "ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id, v, p) VALUES (s.id, s.v, s.p)"),
    ("merge-insert-star-new-partition", "part", M + f"({ALL_COLS}) s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *"),
    ("merge-update-star", "part", M + f"({ALL_COLS.replace('101', '100')}) s ON t.id = s.id "
     "WHEN MATCHED THEN UPDATE SET *"),
    ("merge-by-source-delete-conditional", "part", M + "(SELECT * FROM VALUES (1), (3) AS s(id)) s ON t.id = s.id "
     "WHEN NOT MATCHED BY SOURCE AND t.p = 'new' THEN DELETE"),
    ("merge-by-source-update-conditional", "part", M + "(SELECT * FROM VALUES (1) AS s(id)) s ON t.id = s.id "
     "WHEN NOT MATCHED BY SOURCE AND t.amt IS NULL THEN UPDATE SET amt = 0"),
    ("merge-null-source-key-never-matches", "part", M + "(SELECT * FROM VALUES (CAST(NULL AS BIGINT), 'nullsrc') "
     "AS s(id, v)) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
     "WHEN NOT MATCHED THEN INSERT (id, v, p) VALUES (s.id, s.v, 'x')"),
    ("merge-null-safe-key", "part", M + "(SELECT * FROM VALUES (CAST(NULL AS BIGINT), 'nullsafe') AS s(id, v)) s "
     "ON t.id <=> s.id WHEN MATCHED THEN UPDATE SET v = s.v"),
    ("merge-all-clause-kinds", "part", M + "(SELECT * FROM VALUES (1, 'c1', false), (3, 'c3', true), "
     "(200, 'c200', false), (201, 'c201', true) AS s(id, v, gone)) s ON t.id = s.id "
     "WHEN MATCHED AND s.gone THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v "
     "WHEN NOT MATCHED AND NOT s.gone THEN INSERT (id, v, p) VALUES (s.id, s.v, 'x') "
     "WHEN NOT MATCHED BY SOURCE AND t.p = 'y' THEN UPDATE SET v = 'orphan' "
     "WHEN NOT MATCHED BY SOURCE AND t.id > 150 THEN DELETE"),
    ("merge-empty-source-by-source-delete", "part", M + "(SELECT * FROM VALUES (0) AS s(id) WHERE id > 0) s "
     "ON t.id = s.id WHEN NOT MATCHED BY SOURCE AND t.p = 'moved' THEN DELETE"),
    ("merge-empty-source-no-op", "part", M + "(SELECT * FROM {t} WHERE false) s ON t.id = s.id "
     "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"),
    ("merge-date-key", "part", M + "(SELECT * FROM VALUES (DATE'2024-01-03', 'bydate') AS s(d, v)) s ON t.d = s.d "
     "WHEN MATCHED THEN UPDATE SET v = s.v"),
    ("merge-timestamp-key", "part", M + "(SELECT * FROM VALUES (TIMESTAMP'2024-03-10 02:30:00', 'byts') AS s(ts, v)) "
     "s ON t.ts = s.ts WHEN MATCHED THEN UPDATE SET v = s.v"),
    ("merge-decimal-key", "part", M + "(SELECT * FROM VALUES (CAST(8.88 AS DECIMAL(10,2)), 'bydec') AS s(amt, v)) s "
     "ON t.amt = s.amt WHEN MATCHED THEN UPDATE SET v = s.v, amt = s.amt + 1"),
    ("merge-string-key-moves-partition", "part", M + "(SELECT * FROM VALUES ('h', 'moved2') AS s(k, p)) s "
     "ON t.k = s.k WHEN MATCHED THEN UPDATE SET p = s.p"),
    ("delete-by-timestamp", "part", "DELETE FROM {t} WHERE ts < TIMESTAMP'2000-01-01 00:00:00'"),
    ("update-date-arithmetic", "part", "UPDATE {t} SET d = date_add(d, 1) WHERE d IS NOT NULL AND p = 'x'"),
    ("merge-condition-on-null-source-value", "part", M + "(SELECT * FROM VALUES (4, CAST(NULL AS STRING)) "
     "AS s(id, v)) s ON t.id = s.id WHEN MATCHED AND s.v IS NULL THEN UPDATE SET v = 'was-null-src'"),
    ("delete-null-or-value", "part", "DELETE FROM {t} WHERE v IS NULL OR v = 'orphan'"),
    ("merge-insert-condition-false-no-op", "part", M + "(SELECT * FROM VALUES (300, 'n300') AS s(id, v)) s "
     "ON t.id = s.id WHEN NOT MATCHED AND s.id < 0 THEN INSERT (id, v, p) VALUES (s.id, s.v, 'x')"),
    ("flat-delete-in-list", "flat", "DELETE FROM {t} WHERE id IN (1, 2)"),
    ("flat-update-not-null-condition", "flat", "UPDATE {t} SET v = concat(v, '!') WHERE k IS NOT NULL"),
    ("flat-merge-upsert", "flat", M + "(SELECT * FROM VALUES (3, 'm3'), (50, 'm50') AS s(id, v)) s ON t.id = s.id "
     "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)"),
    ("flat-merge-matched-delete-conditional", "flat", M + "(SELECT * FROM VALUES (4), (6), (8) AS s(id)) s "
     "ON t.id = s.id WHEN MATCHED AND t.amt > 5 THEN DELETE"),
    ("flat-merge-by-source-delete", "flat", M + "(SELECT * FROM VALUES (3), (50) AS s(id)) s ON t.id = s.id "
     "WHEN NOT MATCHED BY SOURCE THEN DELETE"),
    ("flat-update-all-rows", "flat", "UPDATE {t} SET amt = NULL"),
    ("flat-delete-all", "flat", "DELETE FROM {t}"),
    ("flat-merge-into-emptied-table", "flat", M + "(SELECT * FROM VALUES (1, 'a'), (2, 'b') AS s(id, v)) s "
     "ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)"),
    ("empty-target-merge-insert-star", "empty", M + "(SELECT * FROM VALUES (1, 'a'), (CAST(NULL AS BIGINT), 'n') "
     "AS s(id, v)) s ON t.id = s.id WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT *"),
    ("empty-update-no-match", "empty", "UPDATE {t} SET v = 'x' WHERE id = 999"),
    ("empty-merge-null-safe-update-star", "empty", M + "(SELECT * FROM VALUES (CAST(NULL AS BIGINT), 'nn') "
     "AS s(id, v)) s ON t.id <=> s.id WHEN MATCHED THEN UPDATE SET *"),
    ("merge-cardinality-violation-fails-on-both", "empty", M + "(SELECT * FROM VALUES (1, 'x'), (1, 'y') "
     "AS s(id, v)) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v"),
    # The key cast to the table's BIGINT: with an INT key Spark 4.1.1 asks the table to change id to INT, which Strata
    # refuses with an error saying to cast (jvm RowLevelSuite), while delta-spark keeps BIGINT.
    ("merge-with-schema-evolution", "evo", "MERGE WITH SCHEMA EVOLUTION INTO {t} AS t USING (SELECT CAST(id AS BIGINT) "
     "AS id, v, score FROM VALUES (2, 'B', 2.5D), (3, 'C', 3.5D) AS s(id, v, score)) s ON t.id = s.id "
     "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"),
]
KNOWN_BUGS: dict[str, str] = {}  # statement id -> why Strata differs (none today)


def run_strata(spark: SparkSession, base: Path) -> tuple[list[dict[str, Any]], dict[str, Path]]:
    paths = {name: base / name for name in TABLES}
    for name, ddl in TABLES.items():
        for statement in ddl:
            spark.sql(statement.format(t=f"strata.`{paths[name]}`", using="strata"))
    results: list[dict[str, Any]] = []
    for _, table, sql in STATEMENTS:
        result: dict[str, Any] = {}
        try:
            spark.sql(sql.format(t=f"strata.`{paths[table]}`", using="strata"))
        except Exception as e:
            result["error"] = str(e).strip().splitlines()[0][:500]
        result["rows"] = sorted(spark.read.format("strata").load(str(paths[table])).toJSON().collect())
        results.append(result)
    return results, paths


@pytest.fixture(scope="module")
def corpus(spark: SparkSession, peer: Peer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("dml_corpus")
    (base / "delta").mkdir()
    (base / "strata").mkdir()
    reply, (strata_results, paths) = peer.beside(  # delta-spark runs the corpus while Strata runs it here
        "corpus", lambda: run_strata(spark, base / "strata"), tables=TABLES, base=str(base / "delta"),
        statements=[{"table": table, "sql": sql} for _, table, sql in STATEMENTS])
    delta_results = reply["results"]
    assert len(delta_results) == len(STATEMENTS)
    return {"strata": strata_results, "delta": delta_results, "paths": paths}


def test_corpus_is_large_enough() -> None:
    assert len(STATEMENTS) >= 40 and len({s[0] for s in STATEMENTS}) == len(STATEMENTS)
    assert sum(1 for s in STATEMENTS if s[2].startswith("MERGE")) >= 20


@pytest.mark.parametrize("index", [
    pytest.param(i, id=s[0], marks=[pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[s[0]])] if s[0] in KNOWN_BUGS
                 else []) for i, s in enumerate(STATEMENTS)])
def test_statement_gives_delta_spark_contents(corpus: dict[str, Any], index: int) -> None:
    mine, theirs = corpus["strata"][index], corpus["delta"][index]
    assert ("error" in mine) == ("error" in theirs), (STATEMENTS[index][2], mine.get("error"), theirs.get("error"))
    assert mine["rows"] == theirs["rows"], STATEMENTS[index][2]


def test_cardinality_violation_is_an_error_on_both(corpus: dict[str, Any]) -> None:
    """Both refuse it; the error classes differ by design: Strata raises Spark's own, delta-spark its own."""
    i = [s[0] for s in STATEMENTS].index("merge-cardinality-violation-fails-on-both")
    assert corpus["strata"][i]["error"].startswith("[MERGE_CARDINALITY_VIOLATION]")
    assert corpus["delta"][i]["error"].startswith("[DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE]")


@pytest.mark.parametrize("table", ["part", "flat", "empty"])
def test_deltalake_reads_strata_final_tables(spark: SparkSession, corpus: dict[str, Any], table: str) -> None:
    path = corpus["paths"][table]
    df = spark.read.format("strata").load(str(path))
    mine = sorted((tuple(plain(v) for v in r) for r in df.collect()), key=repr)
    arrow = DeltaTable(str(path)).to_pyarrow_table().select(df.columns).to_pylist()
    theirs = sorted((tuple(plain(r[c]) for c in df.columns) for r in arrow), key=repr)
    assert theirs == mine and len(mine) > 0


AUTO_MERGE = "spark.databricks.delta.schema.autoMerge.enabled"
AUTO_MERGE_STEPS = [  # MERGE without WITH SCHEMA EVOLUTION, under delta-spark's session conf
    M + "(SELECT 2L AS id, 'B' AS v, 2.5D AS score UNION ALL SELECT 3L, 'C', 3.5D) s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",                        # score added
    M + "(SELECT 1L AS id, 'x' AS extra) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.extra = s.extra",  # refused
    M + "(SELECT 4L AS id, 'y' AS other) s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id, other) "
    "VALUES (s.id, s.other)",                                                                # other added
    M + "(SELECT 1L AS id, named_struct('a', 1) AS st) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *",
]


def test_auto_merge_conf_evolves_merge_as_delta_spark_does(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    """delta-spark's session conf makes every MERGE one WITH SCHEMA EVOLUTION: the same schema and rows as delta-spark
    after every statement (and the same statement refused); without the conf the source's new columns are ignored."""
    mine, theirs = tmp_path / "strata", tmp_path / "delta"
    for statement in TABLES["evo"]:
        spark.sql(statement.format(t=f"strata.`{mine}`", using="strata"))
    peer.call("sql", statements=[s.format(t=f"delta.`{theirs}`", using="delta") for s in TABLES["evo"]])
    spark.sql(AUTO_MERGE_STEPS[0].format(t=f"strata.`{mine}`"))  # the conf unset: score is not added
    assert spark.read.format("strata").load(str(mine)).columns == ["id", "v"]
    spark.sql("DELETE FROM strata.`{}` WHERE id = 3".format(mine))
    spark.sql("UPDATE strata.`{}` SET v = 'b' WHERE id = 2".format(mine))
    spark.conf.set(AUTO_MERGE, "true")
    peer.call("sql", statements=[f"SET {AUTO_MERGE} = true"])
    try:
        for n, step in enumerate(AUTO_MERGE_STEPS):
            same_step(spark, peer, mine, theirs, lambda: spark.sql(step.format(t=f"strata.`{mine}`")), "sql",
                      (n, step), statements=[step.format(t=f"delta.`{theirs}`")])
    finally:
        spark.conf.unset(AUTO_MERGE)
        peer.call("sql", statements=[f"RESET {AUTO_MERGE}"])
    assert spark.read.format("strata").load(str(mine)).columns == ["id", "v", "score", "other", "st"]
    assert peer.read(mine)[0] == sorted(spark.read.format("strata").load(str(mine)).toJSON().collect())
