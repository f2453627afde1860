"""A corpus of RENAME / DROP COLUMN sequences on tables with column mapping, run on Strata tables and, in the delta-spark
peer, on delta-spark tables: after every statement both tables hold the same rows (or both statements failed). Then
delta-spark reads every version of each Strata table as Strata reads it (time travel across the renames and drops),
and deltalake reads the final Strata tables."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from delta_spark_peer import Peer
from table_reads import log_version, strata_json


def mapped(columns: str, mode: str = "name", partitioned: str = "", props: str = "") -> str:
    part = f" PARTITIONED BY ({partitioned})" if partitioned else ""
    return (f"CREATE TABLE {{t}} ({columns}) USING {{using}}{part} "
            f"TBLPROPERTIES ('delta.columnMapping.mode' = '{mode}'{props})")


FLAT = "id BIGINT, v STRING, n INT"
PART = "id BIGINT, v STRING, p STRING"
NESTED = "id BIGINT, s STRUCT<a: INT, b: STRING>, arr ARRAY<STRUCT<e: INT>>, m MAP<STRING, STRUCT<w: INT>>"
INSERT_FLAT = "INSERT INTO {t} VALUES (1, 'a', 10), (2, 'b', 20), (3, NULL, 30)"
INSERT_PART = "INSERT INTO {t} VALUES (1, 'a', 'x'), (2, 'b', 'y'), (3, 'c', 'x')"
INSERT_NESTED = ("INSERT INTO {t} VALUES (1, named_struct('a', 1, 'b', 'one'), array(named_struct('e', 1)), "
                 "map('k', named_struct('w', 1))), (2, NULL, NULL, NULL)")

# name -> (table DDL, statements run one by one after it)
SEQUENCES: dict[str, tuple[list[str], list[str]]] = {
    "rename-top-level": ([mapped(FLAT), INSERT_FLAT], [
        "ALTER TABLE {t} RENAME COLUMN v TO w", "INSERT INTO {t} VALUES (4, 'd', 40)",
        "ALTER TABLE {t} RENAME COLUMN w TO v", "INSERT INTO {t} (id, v, n) VALUES (5, 'e', 50)"]),
    "swap-two-names": ([mapped(FLAT), INSERT_FLAT], [
        "ALTER TABLE {t} RENAME COLUMN v TO tmp", "ALTER TABLE {t} RENAME COLUMN n TO v",
        "ALTER TABLE {t} RENAME COLUMN tmp TO n", "INSERT INTO {t} VALUES (4, 40, 'd')"]),
    "rename-partition-column": ([mapped(PART, partitioned="p"), INSERT_PART], [
        "ALTER TABLE {t} RENAME COLUMN p TO q", "INSERT INTO {t} VALUES (4, 'd', 'z')",
        "DELETE FROM {t} WHERE q = 'x'"]),
    "drop-and-readd-same-name": ([mapped(FLAT), INSERT_FLAT], [
        "ALTER TABLE {t} DROP COLUMN v", "INSERT INTO {t} VALUES (4, 40)",
        "ALTER TABLE {t} ADD COLUMNS (v STRING)", "INSERT INTO {t} VALUES (5, 50, 'new')"]),
    "drop-nested-field": ([mapped(NESTED), INSERT_NESTED], [
        "ALTER TABLE {t} DROP COLUMN s.b",
        "INSERT INTO {t} VALUES (3, named_struct('a', 3), NULL, NULL)"]),
    "rename-nested-struct-field": ([mapped(NESTED), INSERT_NESTED], [
        "ALTER TABLE {t} RENAME COLUMN s.a TO `a a`",
        "INSERT INTO {t} VALUES (3, named_struct('a a', 3, 'b', 'three'), NULL, NULL)"]),
    "rename-array-element-field": ([mapped(NESTED), INSERT_NESTED], [
        "ALTER TABLE {t} RENAME COLUMN arr.element.e TO f",
        "INSERT INTO {t} VALUES (3, NULL, array(named_struct('f', 3)), NULL)"]),
    "rename-map-value-field": ([mapped(NESTED), INSERT_NESTED], [
        "ALTER TABLE {t} RENAME COLUMN m.value.w TO x",
        "INSERT INTO {t} VALUES (3, NULL, NULL, map('k3', named_struct('x', 3)))"]),
    "names-with-spaces-and-dots": ([mapped("id BIGINT, `a b` STRING, `c.d` INT"),
                                    "INSERT INTO {t} VALUES (1, 'one', 1), (2, 'two', 2)"], [
        "ALTER TABLE {t} RENAME COLUMN `a b` TO `e.f g`", "ALTER TABLE {t} RENAME COLUMN `c.d` TO `a b`",
        "INSERT INTO {t} VALUES (3, 'three', 3)", "UPDATE {t} SET `a b` = `a b` * 10 WHERE `e.f g` = 'two'"]),
    "drop-partition-column-refused": ([mapped(PART, partitioned="p"), INSERT_PART], [
        "ALTER TABLE {t} DROP COLUMN p", "INSERT INTO {t} VALUES (4, 'd', 'y')"]),
    "rename-onto-existing-name-refused": ([mapped(FLAT), INSERT_FLAT], [
        "ALTER TABLE {t} RENAME COLUMN v TO n", "INSERT INTO {t} VALUES (4, 'd', 40)"]),
    "rename-then-update": ([mapped(FLAT), INSERT_FLAT], [
        "ALTER TABLE {t} RENAME COLUMN n TO amount", "UPDATE {t} SET amount = amount + 1 WHERE amount > 10"]),
    "rename-then-delete": ([mapped(FLAT), INSERT_FLAT], [
        "ALTER TABLE {t} RENAME COLUMN v TO label", "DELETE FROM {t} WHERE label IS NULL"]),
    "rename-then-merge": ([mapped(FLAT), INSERT_FLAT], [
        "ALTER TABLE {t} RENAME COLUMN v TO label",
        "MERGE INTO {t} AS t USING (SELECT * FROM VALUES (2, 'B', 21), (9, 'I', 90) AS s(id, label, n)) s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET label = s.label "
        "WHEN NOT MATCHED THEN INSERT (id, label, n) VALUES (s.id, s.label, s.n)"]),
    "drop-then-insert-overwrite": ([mapped(FLAT), INSERT_FLAT], [
        "ALTER TABLE {t} DROP COLUMN n", "INSERT OVERWRITE {t} SELECT id * 2, v FROM VALUES (1, 'x') AS s(id, v)"]),
    "add-then-rename-added": ([mapped(FLAT), INSERT_FLAT], [
        "ALTER TABLE {t} ADD COLUMNS (extra DOUBLE)", "INSERT INTO {t} VALUES (4, 'd', 40, 4.5)",
        "ALTER TABLE {t} RENAME COLUMN extra TO more", "INSERT INTO {t} VALUES (5, 'e', 50, 5.5)"]),
    "mode-id-rename-and-drop": ([mapped(PART, mode="id", partitioned="p"), INSERT_PART], [
        "ALTER TABLE {t} RENAME COLUMN v TO w", "ALTER TABLE {t} DROP COLUMN w",
        "INSERT INTO {t} VALUES (4, 'y')", "ALTER TABLE {t} ADD COLUMNS (v STRING)",
        "INSERT INTO {t} VALUES (5, 'x', 'back')"]),
    "mode-id-nested": ([mapped(NESTED, mode="id"), INSERT_NESTED], [
        "ALTER TABLE {t} RENAME COLUMN s TO t2", "ALTER TABLE {t} RENAME COLUMN t2.b TO c",
        "INSERT INTO {t} VALUES (3, named_struct('a', 3, 'c', 'three'), NULL, NULL)"]),
    "upgrade-then-rename": ([f"CREATE TABLE {{t}} ({PART}) USING {{using}} PARTITIONED BY (p)", INSERT_PART], [
        "ALTER TABLE {t} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
        "ALTER TABLE {t} RENAME COLUMN v TO w", "ALTER TABLE {t} RENAME COLUMN p TO q",
        "INSERT INTO {t} VALUES (4, 'd', 'z')", "DELETE FROM {t} WHERE q = 'y'"]),
    "upgrade-then-drop-and-readd": ([f"CREATE TABLE {{t}} ({FLAT}) USING {{using}}", INSERT_FLAT], [
        "ALTER TABLE {t} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
        "ALTER TABLE {t} DROP COLUMN v", "ALTER TABLE {t} ADD COLUMNS (v STRING)",
        "INSERT INTO {t} VALUES (4, 40, 'd')"]),
    "upgrade-with-deletion-vectors": ([f"CREATE TABLE {{t}} ({FLAT}) USING {{using}} "
                                       "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')", INSERT_FLAT], [
        "ALTER TABLE {t} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
        "ALTER TABLE {t} RENAME COLUMN n TO amount", "DELETE FROM {t} WHERE amount = 20",
        "INSERT INTO {t} VALUES (4, 'd', 40)"]),
    "rename-unmapped-refused": ([f"CREATE TABLE {{t}} ({FLAT}) USING {{using}}", INSERT_FLAT], [
        "ALTER TABLE {t} RENAME COLUMN v TO w", "INSERT INTO {t} VALUES (4, 'd', 40)"]),
    "rename-constrained-column-refused": ([mapped(FLAT), INSERT_FLAT, "ALTER TABLE {t} ADD CONSTRAINT pos CHECK (n > 0)"], [
        "ALTER TABLE {t} RENAME COLUMN n TO m", "ALTER TABLE {t} DROP COLUMN n", "INSERT INTO {t} VALUES (4, 'd', 40)"]),
    "deletion-vectors-rename-delete": ([mapped(FLAT, props=", 'delta.enableDeletionVectors' = 'true'"),
                                        INSERT_FLAT], [
        "ALTER TABLE {t} RENAME COLUMN v TO label", "DELETE FROM {t} WHERE label = 'a'",
        "UPDATE {t} SET n = n * 2 WHERE label IS NULL"]),
}
STATEMENTS = [(name, sql) for name, (_, statements) in SEQUENCES.items() for sql in statements]


def run_strata(spark: SparkSession, base: Path) -> list[dict[str, Any]]:
    for name, (ddl, _) in SEQUENCES.items():
        for statement in ddl:
            spark.sql(statement.format(t=f"strata.`{base / name}`", using="strata"))
    results: list[dict[str, Any]] = []
    for name, sql in STATEMENTS:
        result: dict[str, Any] = {}
        try:
            spark.sql(sql.format(t=f"strata.`{base / name}`"))
        except Exception as e:  # recorded: delta-spark must fail on the same statements
            result["error"] = str(e).strip().splitlines()[0][:500]
            result["message"] = str(e)[:5000]
        result["rows"] = strata_json(spark, base / name)
        results.append(result)
    return results


@pytest.fixture(scope="module")
def corpus(spark: SparkSession, peer: Peer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("colmap_corpus")
    (base / "delta").mkdir()
    (base / "strata").mkdir()
    reply, mine = peer.beside(  # delta-spark runs the corpus while Strata runs it here
        "corpus", lambda: run_strata(spark, base / "strata"), base=str(base / "delta"),
        tables={name: ddl for name, (ddl, _) in SEQUENCES.items()},
        statements=[{"table": name, "sql": sql} for name, sql in STATEMENTS])
    return {"strata": mine, "delta": reply["results"], "base": base / "strata"}


def test_corpus_is_large_enough() -> None:
    assert len(SEQUENCES) >= 20


@pytest.mark.parametrize("index", [pytest.param(i, id=f"{s[0]}-{i}") for i, s in enumerate(STATEMENTS)])
def test_statement_gives_delta_spark_contents(corpus: dict[str, Any], index: int) -> None:
    mine, theirs = corpus["strata"][index], corpus["delta"][index]
    assert ("error" in mine) == ("error" in theirs), (STATEMENTS[index], mine.get("error"), theirs.get("error"))
    assert mine["rows"] == theirs["rows"], STATEMENTS[index]


def test_refusals_name_what_is_needed(corpus: dict[str, Any]) -> None:
    errors = {name: r["message"] for (name, _), r in zip(STATEMENTS, corpus["strata"]) if "error" in r}
    assert "delta.columnMapping.mode" in errors["rename-unmapped-refused"]
    assert "partition column" in errors["drop-partition-column-refused"]
    assert "already exists" in errors["rename-onto-existing-name-refused"]  # Spark's analyzer refuses it first
    assert "CHECK constraint pos" in errors["rename-constrained-column-refused"]


@pytest.mark.parametrize("name", list(SEQUENCES))
def test_delta_spark_reads_every_strata_version(spark: SparkSession, peer: Peer, corpus: dict[str, Any],
                                                name: str) -> None:
    path = corpus["base"] / name
    versions = list(range(log_version(path) + 1))
    theirs = peer.read(path, versions)
    for v in versions:
        assert strata_json(spark, path, v) == theirs[v], f"version {v}"
