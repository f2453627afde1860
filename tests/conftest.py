"""One local Spark session for the whole pytest run, set up with the INSTALLED strata package (`make build`)."""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

# Timestamps cross Python, the JVM and delta-rs: keep all of them in UTC (the JVM inherits TZ).
os.environ["TZ"] = "UTC"
time.tzset()
# Every Spark driver JVM the run starts (this session's, the delta-spark peer's, the child applications') collects
# with the parallel collector: on 2 cores G1's concurrent marking cost the peer about a sixth of its CPU time.
os.environ["SPARK_SUBMIT_OPTS"] = (os.environ.get("SPARK_SUBMIT_OPTS", "") + " -XX:+UseParallelGC").strip()
# Python UDF workers run this interpreter (the .venv's, with deltalake for rival commits inside a job).
os.environ["PYSPARK_PYTHON"] = sys.executable

import strata  # noqa: E402  (after TZ)
from pyspark.sql import SparkSession  # noqa: E402

from delta_spark_peer import Peer, start_peer  # noqa: E402


REPO = Path(__file__).resolve().parent.parent
S3_JARS_DIR = REPO / "build" / "s3-jars"


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    warehouse = tmp_path_factory.mktemp("warehouse")
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("strata-pytest")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.warehouse.dir", str(warehouse / "spark-warehouse"))
        .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={warehouse}")
    )
    # The S3 tests (test_s3.py) need S3A on the class path: hadoop-aws and the slim AWS SDK `make s3-test-jars`
    # fetched (local jars instead of spark.jars.packages, which would download the 600 MB SDK bundle).
    s3_jars = sorted(str(j) for j in S3_JARS_DIR.glob("*.jar"))
    session = strata.configure_spark(
        builder, str(warehouse / "strata"), s3=bool(s3_jars), s3_jars=s3_jars or None
    ).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Peer]:
    """The delta-spark 4.4.0 peer application (tests/delta_spark_peer.py), one for the whole run: each start costs
    about 17 s, and the modules that use it only run SQL on their own tables and read them."""
    yield from start_peer(tmp_path_factory)


@pytest.fixture
def table_path(tmp_path: Path) -> Path:
    """A fresh, not yet existing table directory."""
    return tmp_path / "table"
