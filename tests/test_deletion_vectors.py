"""Deletion vectors: Strata reads tables delta-spark 4.4.0 wrote with `delta.enableDeletionVectors` (DELETE, UPDATE and
MERGE mark rows deleted in a vector instead of rewriting the file) exactly as delta-spark reads them, at every version.

The run's delta-spark peer (tests/peers/delta_spark_job.py, request `dv_history`) builds the
tables of DV_TABLES and records delta-spark's rows of every version; it also reads copies of the golden DV tables
(/work/shared/fixtures/delta-golden, see its README) at every version. Rows are compared as sorted JSON strings, as in
the DML corpus (tests/test_dml_delta_spark.py). delta-rs (`deltalake`, through its DataFusion QueryBuilder: its
pyarrow reader refuses deletion vectors) reads the latest versions as a third reader. A damaged or missing vector file
must fail the read naming the file, never give rows.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from peers.delta_spark_job import DV_TABLES, DV_TIME_ZONE_TABLES, OTHER_TIME_ZONE
import table_reads
from table_reads import delta_rs_tuples, plain, strata_json
from delta_spark_peer import Peer

GOLDEN = Path(os.environ.get("STRATA_GOLDEN_TABLES", "/work/shared/fixtures/delta-golden"))
GOLDEN_DV = ["dv-partitioned-with-checkpoint", "log-replay-dv-key-cases"]
VERSIONS = {name: len(spec["steps"]) + 1 for name, spec in DV_TABLES.items()}  # CREATE TABLE, then one per step
GOLDEN_VERSIONS = {name: len(list((GOLDEN / name / "_delta_log").glob("*.json"))) for name in GOLDEN_DV}


def copy_table(src: Path, dst: Path) -> Path:
    """A writable copy (the golden fixtures are read-only files in read-only folders)."""
    shutil.copytree(src, dst)
    for folder, dirs, files in os.walk(dst):
        for name in dirs + files:
            p = Path(folder) / name
            p.chmod(p.stat().st_mode | stat.S_IWUSR)
    dst.chmod(dst.stat().st_mode | stat.S_IWUSR)
    return dst


@pytest.fixture(scope="module")
def dv(peer: Peer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """{"tables": {name: history}, "read": {golden name: history}, "golden": {name: copy}}; a history is the table's
    path (tables only), columns, operations, and per time zone the rows of every version (see the peer job)."""
    base = tmp_path_factory.mktemp("deletion_vectors")
    golden = {name: copy_table(GOLDEN / name, base / "golden" / name) for name in GOLDEN_DV}
    theirs = peer.call("dv_history", base=str(base / "delta"), read=[str(p) for p in golden.values()])
    theirs["read"] = {name: theirs["read"][str(path)] for name, path in golden.items()}
    theirs["golden"] = golden
    return theirs


def table(dv: dict[str, Any], name: str) -> tuple[Path, dict[str, Any]]:
    history = dv["tables"][name]
    return Path(history["path"]), history


def commits(path: Path) -> list[list[dict[str, Any]]]:
    return [[json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line]
            for f in sorted((path / "_delta_log").glob("*.json"))]


def vector_facts(path: Path) -> dict[str, Any]:
    """What the log shows of the table's deletion vectors."""
    facts: dict[str, Any] = {"operations_adding_vectors": set(), "vector_grown": False,  # by a DELETE
                             "file_with_vector_removed_whole": False}  # by a DELETE
    for actions in commits(path):
        adds = {a["add"]["path"]: a["add"] for a in actions if "add" in a}
        removes = [a["remove"] for a in actions if "remove" in a]
        operation = next(a["commitInfo"]["operation"] for a in actions if "commitInfo" in a)
        if any("deletionVector" in add for add in adds.values()):
            facts["operations_adding_vectors"].add(operation)
        for r in removes:
            if "deletionVector" not in r or operation != "DELETE":
                continue
            if r["path"] not in adds:
                facts["file_with_vector_removed_whole"] = True
            elif adds[r["path"]].get("deletionVector", {}).get("cardinality", 0) > r["deletionVector"]["cardinality"]:
                facts["vector_grown"] = True
    checkpoints = sorted((path / "_delta_log").glob("*.checkpoint.parquet"))
    facts["checkpoint_vectors"] = {  # version: adds with a vector in its checkpoint
        int(c.name.split(".")[0]): sum(1 for add in pq.read_table(c, columns=["add"]).column("add").to_pylist()
                                       if add and add["deletionVector"]) for c in checkpoints}
    return facts


@pytest.mark.parametrize("name", sorted(DV_TABLES))
def test_delta_spark_tables_hold_the_vector_cases(dv: dict[str, Any], name: str) -> None:
    """The peer's tables really have what the read tests are meant to cover."""
    path, history = table(dv, name)
    assert len(history["operations"]) == VERSIONS[name] == len(history["UTC"])
    protocol = next(a["protocol"] for a in commits(path)[0] if "protocol" in a)
    assert "deletionVectors" in protocol["readerFeatures"]
    facts = vector_facts(path)
    assert facts["vector_grown"]  # a DELETE on a file with a vector replaced it by a bigger one
    assert {"DELETE", "UPDATE"} <= facts["operations_adding_vectors"]
    if name == "row_groups":
        data_files = [a["add"]["path"] for a in commits(path)[1] if "add" in a]
        assert all(pq.ParquetFile(path / f).metadata.num_row_groups > 10 for f in data_files)
        return
    assert "MERGE" in facts["operations_adding_vectors"] and "OPTIMIZE" in history["operations"]
    assert facts["file_with_vector_removed_whole"]  # a DELETE took every row left in a file that had a vector
    checkpoints = facts["checkpoint_vectors"]
    assert sum(checkpoints.values()) > 0 and max(checkpoints) < VERSIONS[name] - 1, checkpoints


def test_golden_tables_have_deletion_vectors_and_a_checkpoint(dv: dict[str, Any]) -> None:
    for name, path in dv["golden"].items():
        assert list(path.glob("deletion_vector_*.bin")), name
        assert len(dv["read"][name]["UTC"]) == GOLDEN_VERSIONS[name] > 1
    assert vector_facts(dv["golden"]["dv-partitioned-with-checkpoint"])["checkpoint_vectors"][10] > 0


APIS = ["load", "sql"]  # spark.read.format("strata").option("versionAsOf", v).load(path) / strata.`path` VERSION AS OF v
def cases(versions: dict[str, int]) -> list[Any]:
    """(name, api, version) params. A V1 read mixing files with and without a vector once broke (its two Parquet
    readers shared one Hadoop conf): the partitioned tables' versions cover that case."""
    return [(name, api, v) for name in sorted(versions) for api in APIS for v in range(versions[name])]


def read_rows(spark: SparkSession, api: str, path: Path, columns: list[str], version: int,
              where: str | None = None) -> list[str]:
    if api == "load":
        df = spark.read.format("strata").option("versionAsOf", version).load(str(path))
    else:
        df = spark.sql(f"SELECT * FROM strata.`{path}` VERSION AS OF {version}")
    return sorted((df.where(where) if where else df).select(*columns).toJSON().collect())


@pytest.mark.parametrize("name,api,version", cases(VERSIONS))
def test_strata_reads_every_version_as_delta_spark(spark: SparkSession, dv: dict[str, Any], name: str, api: str,
                                                   version: int) -> None:
    path, history = table(dv, name)
    assert read_rows(spark, api, path, history["columns"], version) == history["UTC"][version]


FILTER_FROM = {"flat": 150, "part": 100, "row_groups": 9000}  # a filter Strata pushes down (files, row groups)


@pytest.mark.parametrize("name,api", [(name, api) for name in sorted(DV_TABLES) for api in APIS])
def test_strata_filtered_reads_skip_no_live_row_and_keep_no_deleted_one(spark: SparkSession, dv: dict[str, Any],
                                                                         name: str, api: str) -> None:
    """Data skipping (a file with a vector has loose statistics) and Parquet row-group pruning (the row indexes a
    vector holds count the pruned row groups too) must keep the rows delta-spark gives, filtered here."""
    path, history = table(dv, name)
    low = FILTER_FROM[name]
    for version in range(VERSIONS[name]):
        expected = [r for r in history["UTC"][version] if (i := json.loads(r)["id"]) >= low and i % 5 != 0]
        assert read_rows(spark, api, path, history["columns"], version, f"id >= {low} AND id % 5 <> 0") == \
            expected, version
    assert expected


@pytest.mark.parametrize("name", sorted(DV_TABLES))
def test_strata_reads_latest_version_as_delta_spark(spark: SparkSession, dv: dict[str, Any], name: str) -> None:
    """The latest snapshot, without time travel: V1 load and the V2 path table."""
    path, history = table(dv, name)
    expected = history["UTC"][-1]
    assert strata_json(spark, path, columns=history["columns"]) == expected
    assert sql_rows(spark, f"SELECT * FROM strata.`{path}`", history["columns"]) == expected


def sql_rows(spark: SparkSession, query: str, columns: list[str]) -> list[str]:
    return sorted(spark.sql(query).select(*columns).toJSON().collect())


@pytest.fixture(scope="module")
def catalog_tables(spark: SparkSession, dv: dict[str, Any]) -> Iterator[str]:
    """Copies of the peer's tables in the `strata` catalog's warehouse: catalog tables `strata.dv_reads.<name>`."""
    namespace = "dv_reads"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS strata.{namespace}")
    folder = Path(spark.conf.get("spark.sql.catalog.strata.warehouse") or "") / namespace
    for name in DV_TABLES:
        shutil.copytree(table(dv, name)[0], folder / name)
    yield f"strata.{namespace}"
    spark.sql(f"DROP NAMESPACE strata.{namespace} CASCADE")


@pytest.mark.parametrize("name", sorted(DV_TABLES))
def test_strata_catalog_table_reads_as_delta_spark(spark: SparkSession, dv: dict[str, Any], catalog_tables: str,
                                                   name: str) -> None:
    history = dv["tables"][name]
    latest, columns = VERSIONS[name] - 1, history["columns"]
    assert sql_rows(spark, f"SELECT * FROM {catalog_tables}.{name}", columns) == history["UTC"][latest]
    for version in (latest - 1, 3):
        assert sql_rows(spark, f"SELECT * FROM {catalog_tables}.{name} VERSION AS OF {version}", columns) == \
            history["UTC"][version], version


@pytest.mark.parametrize("name", sorted(DV_TABLES))
def test_deltalake_reads_latest_version_as_strata(spark: SparkSession, dv: dict[str, Any], name: str) -> None:
    path, history = table(dv, name)
    columns = history["columns"]
    mine = sorted((tuple(plain(v) for v in r) for r in
                   spark.read.format("strata").load(str(path)).select(*columns).collect()), key=repr)
    assert delta_rs_tuples(path, columns) == mine
    assert len(mine) == len(history["UTC"][-1]) > 0


@pytest.fixture
def session_time_zone(spark: SparkSession) -> Iterator[str]:
    with table_reads.session_time_zone(spark, OTHER_TIME_ZONE) as zone:
        yield zone


@pytest.mark.parametrize("name,api", [(name, api) for name in DV_TIME_ZONE_TABLES for api in APIS])
def test_strata_reads_every_version_in_another_session_time_zone(spark: SparkSession, dv: dict[str, Any],
                                                                 session_time_zone: str, name: str, api: str) -> None:
    """Rows as JSON in America/Los_Angeles on both sides (timestamps carry the zone's offset)."""
    path, history = table(dv, name)
    zoned = history[session_time_zone]
    assert zoned[-1] != history["UTC"][-1]  # the zone shows in the JSON: the comparison is not the UTC one again
    for version in range(VERSIONS[name]):
        assert read_rows(spark, api, path, history["columns"], version) == zoned[version], version


READER_CONFS = {
    # Files split into many read tasks: a task's rows start in the middle of a file, after some row groups.
    "files-split": {"spark.sql.files.maxPartitionBytes": "16384", "spark.sql.files.openCostInBytes": "0"},
    "row-based-reader": {"spark.sql.parquet.enableVectorizedReader": "false"},
}


@pytest.fixture
def reader_conf(spark: SparkSession, request: pytest.FixtureRequest) -> Iterator[str]:
    confs = READER_CONFS[request.param]
    saved = {k: spark.conf.get(k) for k in confs}
    for k, v in confs.items():
        spark.conf.set(k, v)
    try:
        yield request.param
    finally:
        for k, old in saved.items():
            spark.conf.set(k, old or "")


@pytest.mark.parametrize("reader_conf,name,api", [
    (conf, name, api) for conf in READER_CONFS for name in ["part", "row_groups"] for api in APIS],
    indirect=["reader_conf"])
def test_strata_reads_every_version_with_other_reader_settings(spark: SparkSession, dv: dict[str, Any],
                                                                reader_conf: str, name: str, api: str) -> None:
    path, history = table(dv, name)
    for version in range(VERSIONS[name]):
        assert read_rows(spark, api, path, history["columns"], version) == history["UTC"][version], version


@pytest.mark.parametrize("name,api,version", cases(GOLDEN_VERSIONS))
def test_strata_reads_golden_dv_table_as_delta_spark(spark: SparkSession, dv: dict[str, Any], name: str, api: str,
                                                     version: int) -> None:
    history = dv["read"][name]
    assert read_rows(spark, api, dv["golden"][name], history["columns"], version) == history["UTC"][version]


def test_dv_table_with_column_mapping_reads_as_deltalake_reads_it(spark: SparkSession, tmp_path: Path) -> None:
    """Column mapping (name) and deletion vectors together: physical columns, vectors applied, both APIs."""
    path = copy_table(GOLDEN / "dv-with-columnmapping", tmp_path / "t")
    columns = spark.read.format("strata").load(str(path)).columns
    expected = delta_rs_tuples(path, columns)
    assert len(expected) > 0
    for df in (spark.read.format("strata").load(str(path)), spark.sql(f"SELECT * FROM strata.`{path}`")):
        assert sorted((tuple(plain(v) for v in r) for r in df.collect()), key=repr) == expected


Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def vector_file(table_path: Path, descriptor: dict[str, Any]) -> Path:
    """The file of an on-disk ('u') vector: its id is a random prefix folder (maybe empty) and a Z85-coded UUID."""
    assert descriptor["storageType"] == "u", descriptor
    text: str = descriptor["pathOrInlineDv"]
    prefix, encoded = text[:-20], text[-20:]
    data = b""
    for i in range(0, 20, 5):
        value = 0
        for c in encoded[i:i + 5]:
            value = value * 85 + Z85.index(c)
        data += value.to_bytes(4, "big")
    return table_path / prefix / f"deletion_vector_{uuid.UUID(bytes=data)}.bin"


@pytest.fixture
def vector_in_latest(dv: dict[str, Any], tmp_path: Path) -> tuple[Path, Path, dict[str, Any]]:
    """A copy of a delta-spark table whose last commit is a DELETE, with a vector that commit added (so the latest
    snapshot uses it): (table, vector file, descriptor)."""
    path = copy_table(table(dv, "row_groups")[0], tmp_path / "row_groups")
    last = commits(path)[-1]
    descriptor = next(a["add"]["deletionVector"] for a in last if "deletionVector" in a.get("add", {}))
    file = vector_file(path, descriptor)
    assert file.is_file(), file
    return path, file, descriptor


def read_errors(spark: SparkSession, path: Path) -> list[str]:
    """The error of each way to read the latest version; a read that gives rows fails the test."""
    messages = []
    for query in (None, f"SELECT * FROM strata.`{path}`"):
        with pytest.raises(Exception) as e:
            (spark.sql(query) if query else spark.read.format("strata").load(str(path))).collect()
        messages.append(str(e.value))
    return messages


def test_damaged_deletion_vector_fails_the_read_naming_the_file(
        spark: SparkSession, vector_in_latest: tuple[Path, Path, dict[str, Any]]) -> None:
    path, file, descriptor = vector_in_latest
    data = bytearray(file.read_bytes())
    inside = descriptor.get("offset", 1) + 4 + descriptor["sizeInBytes"] // 2  # in the vector's bitmap data
    data[inside] ^= 0xFF
    file.write_bytes(bytes(data))
    for message in read_errors(spark, path):
        assert file.name in message and any(w in message.lower() for w in ("crc", "corrupt")), message[:3000]


def test_missing_deletion_vector_file_fails_the_read_naming_it(
        spark: SparkSession, vector_in_latest: tuple[Path, Path, dict[str, Any]]) -> None:
    path, file, _ = vector_in_latest
    file.unlink()
    for message in read_errors(spark, path):
        assert file.name in message, message[:3000]
