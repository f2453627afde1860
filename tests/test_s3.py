"""Strata tables on S3 through Spark's real S3A client, against a real S3 server on localhost.

The server is s3proxy 4.0.0 (Maven Central, fetched by `make s3-test-jars`), started by this module on a free port
and stopped at the end, with its in-memory `transient-nio2` backend (its `filesystem-nio2` backend's LIST drops
existing keys while other PUTs land; see jvm/spark/src/test/scala/io/strata/s3/S3Proxy.scala). The tests look at the
objects through a third client, pyarrow's S3 file system. Commits go through Strata's S3 log store: one conditional
PUT (`If-None-Match: *`) per commit.
"""
from __future__ import annotations

import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from deltalake import DeltaTable
from pyarrow import fs as pafs
from pyspark.sql import SparkSession

import strata

REPO = Path(__file__).resolve().parent.parent
S3PROXY_JAR = REPO / "build" / "s3proxy" / "s3proxy-4.0.0-jar-with-dependencies.jar"
BUCKET = "strata-test"
NO_CONDITIONAL_BUCKET = "strata-nocond"  # S3A is told not to send conditional PUTs to this one
ACCESS_KEY, SECRET_KEY = "strata-test-key", "strata-test-secret"


@dataclass(frozen=True)
class S3Server:
    endpoint: str

    def client(self) -> pafs.S3FileSystem:
        return pafs.S3FileSystem(access_key=ACCESS_KEY, secret_key=SECRET_KEY, region="us-east-1",
                                 endpoint_override=self.endpoint, scheme="http", allow_bucket_creation=True)

    def objects(self, bucket: str, prefix: str) -> list[str]:
        """The names of the objects directly under `prefix` of a bucket."""
        infos = self.client().get_file_info(pafs.FileSelector(f"{bucket}/{prefix}", allow_not_found=True))
        return sorted(i.base_name for i in infos if i.type == pafs.FileType.File)

    def delta_rs_options(self) -> dict[str, str]:
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ALLOW_HTTP": "true",
            "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false",
        }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def s3(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    assert S3PROXY_JAR.is_file(), f"{S3PROXY_JAR} is missing: run `make s3-test-jars`"
    root = tmp_path_factory.mktemp("s3proxy")
    port = _free_port()
    conf = root / "s3proxy.conf"
    conf.write_text(
        f"s3proxy.endpoint=http://127.0.0.1:{port}\ns3proxy.authorization=aws-v2-or-v4\n"
        f"s3proxy.identity={ACCESS_KEY}\ns3proxy.credential={SECRET_KEY}\n"
        "jclouds.provider=transient-nio2\n"
    )
    java = shutil.which("java") or "java"
    with open(root / "s3proxy.log", "wb") as log:
        proc = subprocess.Popen([java, "-Xmx256m", "-jar", str(S3PROXY_JAR), "--properties", str(conf)],
                                stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"s3proxy did not start: {(root / 's3proxy.log').read_text()}") from None
                time.sleep(0.05)
        server = S3Server(f"http://127.0.0.1:{port}")
        for bucket in (BUCKET, NO_CONDITIONAL_BUCKET):
            server.client().create_dir(bucket)
        hadoop = spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[union-attr]
        for key, value in {
            "fs.s3a.endpoint": server.endpoint,
            "fs.s3a.endpoint.region": "us-east-1",
            "fs.s3a.path.style.access": "true",
            "fs.s3a.connection.ssl.enabled": "false",
            "fs.s3a.access.key": ACCESS_KEY,
            "fs.s3a.secret.key": SECRET_KEY,
            "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
            "fs.s3a.attempts.maximum": "2",
            "fs.s3a.retry.limit": "2",
            f"fs.s3a.bucket.{NO_CONDITIONAL_BUCKET}.create.conditional.enabled": "false",
        }.items():
            hadoop.set(key, value)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def ids(df: object) -> list[int]:
    return sorted(r.id for r in df.collect())  # type: ignore[attr-defined]


def test_v1_v2_writes_time_travel_checkpoint_and_delta_rs_reads_the_bucket(spark: SparkSession, s3: S3Server) -> None:
    key = f"t-{uuid.uuid4().hex[:8]}"
    path = f"s3a://{BUCKET}/{key}"
    spark.sql(f"CREATE TABLE strata.`{path}` (id BIGINT) USING strata TBLPROPERTIES ('delta.checkpointInterval'='2')")
    spark.range(0, 3).write.format("strata").mode("append").save(path)  # V1, version 1
    spark.range(3, 5).writeTo(f"strata.`{path}`").append()  # V2, version 2 (checkpoint)
    spark.range(5, 6).write.format("strata").mode("append").save(path)  # V1, version 3

    assert ids(spark.read.format("strata").load(path)) == list(range(6))
    assert ids(spark.read.format("strata").option("versionAsOf", 1).load(path)) == [0, 1, 2]
    assert ids(spark.sql(f"SELECT * FROM strata.`{path}` VERSION AS OF 2")) == [0, 1, 2, 3, 4]

    log = s3.objects(BUCKET, f"{key}/_delta_log")
    assert [n for n in log if n.endswith(".json")] == [f"{v:020d}.json" for v in range(4)]
    assert f"{2:020d}.checkpoint.parquet" in log and "_last_checkpoint" in log, log
    assert not [n for n in log if n.startswith(".") or n.endswith(".tmp")], f"temporary objects left: {log}"
    data_files = [n for n in s3.objects(BUCKET, key) if n.endswith(".parquet")]
    assert len(data_files) >= 3, "data files went to the bucket through S3A"

    # delta-rs reads the same table from the same bucket (s3:// for delta-rs; the objects are the same).
    table = DeltaTable(f"s3://{BUCKET}/{key}", storage_options=s3.delta_rs_options())
    assert table.version() == 3
    assert sorted(table.to_pyarrow_table().column("id").to_pylist()) == list(range(6))
    old = DeltaTable(f"s3://{BUCKET}/{key}", version=1, storage_options=s3.delta_rs_options())
    assert sorted(old.to_pyarrow_table().column("id").to_pylist()) == [0, 1, 2]


def test_overwrite_then_read_through_s3_scheme(spark: SparkSession, s3: S3Server) -> None:
    """`s3://` is served by the same S3A client (configure_spark(s3=True) maps it); an overwrite replaces the rows."""
    key = f"t-{uuid.uuid4().hex[:8]}"
    spark.range(0, 4).write.format("strata").save(f"s3://{BUCKET}/{key}")
    spark.range(10, 12).write.format("strata").mode("overwrite").save(f"s3a://{BUCKET}/{key}")
    assert ids(spark.read.format("strata").load(f"s3://{BUCKET}/{key}")) == [10, 11]
    assert ids(spark.read.format("strata").option("versionAsOf", 0).load(f"s3a://{BUCKET}/{key}")) == [0, 1, 2, 3]


def test_refuses_to_commit_without_conditional_writes(spark: SparkSession, s3: S3Server) -> None:
    key = f"t-{uuid.uuid4().hex[:8]}"
    path = f"s3a://{NO_CONDITIONAL_BUCKET}/{key}"
    with pytest.raises(strata.StrataError, match=r"conditional PUT.*fs\.s3a\.create\.conditional\.enabled=true"):
        with strata.errors.translate():
            spark.range(3).write.format("strata").save(path)
    assert s3.objects(NO_CONDITIONAL_BUCKET, f"{key}/_delta_log") == [], "nothing committed"


def test_vacuum_on_s3(spark: SparkSession, s3: S3Server) -> None:
    """CALL strata.system.vacuum lists (a Spark job over the partition prefixes) and deletes through S3A: the files an
    overwrite removed and an uncommitted leftover go, the live files and the log stay, delta-rs reads the same rows."""
    key = f"t-{uuid.uuid4().hex[:8]}"
    path = f"s3a://{BUCKET}/{key}"
    df = spark.range(0, 6).selectExpr("id", "CAST(id % 3 AS STRING) AS p")
    df.write.format("strata").partitionBy("p").save(path)
    replaced = s3.objects(BUCKET, f"{key}/p=1")
    df.where("p = '1'").write.format("strata").mode("overwrite").option("replaceWhere", "p = '1'").save(path)
    with s3.client().open_output_stream(f"{BUCKET}/{key}/p=2/part-00000-leftover.c000.snappy.parquet") as out:
        out.write(b"left over by a failed job")
    old = {p: s3.objects(BUCKET, f"{key}/{p}") for p in ("p=0", "p=1", "p=2")}
    spark.conf.set("spark.strata.vacuum.retentionCheck.enabled", "false")
    spark.conf.set("spark.strata.vacuum.orphanMinAgeHours", "0")
    try:
        dry = spark.sql(f"CALL strata.system.vacuum('{path}', 0, true)").collect()
        rows = spark.sql(f"CALL strata.system.vacuum(table => '{path}', retention_hours => 0)").collect()
    finally:
        spark.conf.unset("spark.strata.vacuum.retentionCheck.enabled")
        spark.conf.unset("spark.strata.vacuum.orphanMinAgeHours")
    assert sorted(rows) == sorted(dry) and all(r.kind == "data" for r in rows), rows
    deleted = {"/".join(r.path.rsplit("/", 2)[-2:]) for r in rows}
    now = {p: s3.objects(BUCKET, f"{key}/{p}") for p in ("p=0", "p=1", "p=2")}
    assert now["p=1"] and set(now["p=1"]) == set(old["p=1"]) - set(replaced), "the overwrite's files stay"
    assert deleted == {f"p=1/{n}" for n in replaced} | {"p=2/part-00000-leftover.c000.snappy.parquet"}
    assert now["p=0"] == old["p=0"] and len(now["p=2"]) == len(old["p=2"]) - 1
    assert ids(spark.read.format("strata").load(path)) == list(range(6))
    table = DeltaTable(f"s3://{BUCKET}/{key}", storage_options=s3.delta_rs_options())
    assert sorted(table.to_pyarrow_table().column("id").to_pylist()) == list(range(6))
    assert [h.operation for h in spark.sql(f"CALL strata.system.history('{path}', 2)").collect()] == [
        "VACUUM END", "VACUUM START"]
