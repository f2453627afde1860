"""Strata and delta-spark writing on each other's deletion vectors (issue 14; the DML corpus on DV tables is in
test_deletion_vectors_write.py, whose helpers this module shares).

- Round trips: delta-spark runs DELETE / MERGE / UPDATE on a Strata DV table, Strata reads the result and deletes on
  top of delta-spark's vectors, and all three engines agree on every version; Strata's DML on a DV table delta-spark
  created.
- Checkpoints Strata writes carry the vectors (also read with the JSON commits before them gone).
- The Python API (Table.delete / update / merge) on a DV table: the rows of the same SQL, and sensible metrics.
- A session in America/Los_Angeles with date and timestamp partition columns, against delta-spark in that zone.
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow.parquet as pq
from pyspark.sql import SparkSession

import strata
from strata import DeleteMetrics, MergeMetrics, UpdateMetrics
from delta_spark_peer import Peer
from table_reads import commit_actions, delta_rs_tuples, log_version
from test_deletion_vectors_write import (DV, LA, file_name, layout_problems, rows_by_file, strata_json, strata_rows,
                                         vector_adds)


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
    path = tmp_path / "strata_tz"
    t = f"strata.`{path}`"

    def run_mine() -> tuple[list[list[str]], list[str]]:
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
        return mine, strata_la

    statements = [{"table": "tz", "sql": sql} for sql in TZ_STATEMENTS]
    theirs, (mine, strata_la) = peer.beside("corpus", run_mine, tables=TZ_TABLE, base=str(tmp_path / "delta"),
                                            time_zone=LA, statements=statements)
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
