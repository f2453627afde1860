"""The systems of the benchmark, as its Spark applications (bench/app.py) drive them: how each one creates, appends to,
overwrites and opens a table (Spark Parquet, Strata V1 and V2, delta-spark, Iceberg), the Spark session each runs in,
and the data every workload writes.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spec import COMMON_CONF, DELTA_JARS, DISTRIBUTION, ICEBERG_JARS, ICEBERG_TABLE_PROPERTIES, MASTER

COLUMNS = "id BIGINT, k BIGINT, x DOUBLE, s STRING, d DATE, ts TIMESTAMP, amt DECIMAL(12,2)"


def data(spark: SparkSession, start: int, rows: int, slices: int, modulus: int | None = None,
         fixed_partition: int | None = None) -> DataFrame:
    """Deterministic mixed schema (longs, doubles, strings, dates, timestamps, decimals), generated on the fly.

    Partitioned tables get p = id % modulus (every write task holds rows of every partition), or a fixed p.
    """
    df = spark.range(start, start + rows, 1, slices).select(
        F.col("id"),
        (F.col("id") * 7 % 1000003).alias("k"),
        (F.col("id") / 3.0).alias("x"),
        F.concat(F.lit("name-"), (F.col("id") % 50000).cast("string")).alias("s"),
        F.date_add(F.lit("2020-01-01").cast("date"), (F.col("id") % 1500).cast("int")).alias("d"),
        (F.lit(1_600_000_000) + F.col("id")).cast("timestamp").alias("ts"),
        (F.col("id") % 100000 / 100).cast("decimal(12,2)").alias("amt"),
    )
    if modulus is not None:
        df = df.withColumn("p", (F.col("id") % modulus).cast("int"))
    if fixed_partition is not None:
        df = df.withColumn("p", F.lit(fixed_partition).cast("int"))
    return df


def jvm(spark: SparkSession) -> Any:
    """The py4j view of the application's JVM."""
    view = spark._jvm
    assert view is not None
    return view


@dataclass(frozen=True)
class Table:
    name: str
    path: Path  # the table's directory
    ref: str  # how SQL and DataFrameWriterV2 name it
    partitioned: bool
    properties: tuple[tuple[str, str], ...] = ()  # extra table properties of CREATE TABLE (workloads 7)


class Engine:
    """How one system creates, appends to, overwrites and opens a table."""
    log_dir: str | None = None  # the transaction log's folder inside the table directory

    def __init__(self, spark: SparkSession, root: Path) -> None:
        self.spark = spark
        self.root = root

    def table(self, name: str, partitioned: bool) -> Table:
        path = self.root / "tables" / name
        return Table(name, path, f"`{path}`", partitioned)

    def create(self, t: Table) -> None:
        raise NotImplementedError

    def append(self, df: DataFrame, t: Table) -> None:
        raise NotImplementedError

    def overwrite_partitions(self, df: DataFrame, t: Table) -> None:
        raise NotImplementedError

    def open(self, t: Table) -> DataFrame:
        raise NotImplementedError

    def commits(self, t: Table) -> int:
        """Commits after the table's creation (appends and overwrites)."""
        logs = t.path / "_delta_log"
        return sum(1 for f in logs.iterdir() if f.name.endswith(".json") and f.name[:-5].isdigit()) - 1

    def drop(self, t: Table) -> None:
        shutil.rmtree(t.path, ignore_errors=True)

    def clear_caches(self) -> None:
        pass

    def ddl(self, t: Table) -> str:
        return COLUMNS + (", p INT" if t.partitioned else "")


def tblproperties(props: dict[str, str]) -> str:
    """A CREATE TABLE's TBLPROPERTIES clause ("" for none)."""
    pairs = ", ".join(f"'{k}' = '{v}'" for k, v in props.items())
    return f" TBLPROPERTIES ({pairs})" if props else ""


class Parquet(Engine):
    def create(self, t: Table) -> None:
        pass  # a directory; the first write creates it

    def append(self, df: DataFrame, t: Table) -> None:
        w = df.write.mode("append")
        (w.partitionBy("p") if t.partitioned else w).parquet(str(t.path))

    def overwrite_partitions(self, df: DataFrame, t: Table) -> None:
        df.write.mode("overwrite").option("partitionOverwriteMode", "dynamic").partitionBy("p").parquet(str(t.path))

    def open(self, t: Table) -> DataFrame:
        return self.spark.read.parquet(str(t.path))

    def commits(self, t: Table) -> int:
        raise NotImplementedError("Spark Parquet has no commits")


class PathFormat(Engine):
    """A table at a path, written through `df.write.format(fmt)` (the DataSource V1 path) and named `fmt.`path``
    in SQL: Strata V1 and delta-spark."""
    log_dir = "_delta_log"
    fmt = ""

    def table(self, name: str, partitioned: bool) -> Table:
        path = self.root / "tables" / name
        return Table(name, path, f"{self.fmt}.`{path}`", partitioned)

    def properties(self, t: Table) -> str:
        """The CREATE TABLE's TBLPROPERTIES clause, if any."""
        return tblproperties(dict(t.properties))

    def create(self, t: Table) -> None:
        part = " PARTITIONED BY (p)" if t.partitioned else ""
        self.spark.sql(f"CREATE TABLE {t.ref} ({self.ddl(t)}) USING {self.fmt}{part}{self.properties(t)}")

    def append(self, df: DataFrame, t: Table) -> None:
        w = df.write.format(self.fmt).mode("append")
        (w.partitionBy("p") if t.partitioned else w).save(str(t.path))

    def overwrite_partitions(self, df: DataFrame, t: Table) -> None:
        df.write.format(self.fmt).mode("overwrite").option("partitionOverwriteMode", "dynamic") \
            .partitionBy("p").save(str(t.path))

    def open(self, t: Table) -> DataFrame:
        return self.spark.read.format(self.fmt).load(str(t.path))


class StrataV1(PathFormat):
    fmt = "strata"

    def properties(self, t: Table) -> str:
        return tblproperties({"write.distribution-mode": DISTRIBUTION[t.partitioned], **dict(t.properties)})


class CatalogWrites(Engine):
    """Writes and reads through the catalog: DataFrameWriterV2 and `spark.table` (the DataSource V2 path)."""

    def append(self, df: DataFrame, t: Table) -> None:
        df.writeTo(t.ref).append()

    def overwrite_partitions(self, df: DataFrame, t: Table) -> None:
        df.writeTo(t.ref).overwritePartitions()

    def open(self, t: Table) -> DataFrame:
        return self.spark.table(t.ref)


class StrataV2(CatalogWrites, StrataV1):
    """Strata V1's tables, written and read through the catalog."""


class Delta(PathFormat):
    fmt = "delta"  # with delta-spark's default table properties

    def clear_caches(self) -> None:
        jvm(self.spark).org.apache.spark.sql.delta.DeltaLog.clearCache()


class Iceberg(CatalogWrites, Engine):
    """Hadoop catalogs: `ice` for the run's tables, `icesnap` for the cached 1,000-commit table."""
    log_dir = "metadata"

    def __init__(self, spark: SparkSession, root: Path, catalog: str = "ice") -> None:
        super().__init__(spark, root)
        self.catalog = catalog
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {catalog}.bench")

    def table(self, name: str, partitioned: bool) -> Table:
        warehouse = self.spark.conf.get(f"spark.sql.catalog.{self.catalog}.warehouse")
        assert warehouse is not None
        return Table(name, Path(warehouse) / "bench" / name, f"{self.catalog}.bench.`{name}`", partitioned)

    def create(self, t: Table) -> None:
        part = " PARTITIONED BY (p)" if t.partitioned else ""
        props = dict(ICEBERG_TABLE_PROPERTIES, **{"write.distribution-mode": DISTRIBUTION[t.partitioned]},
                     **dict(t.properties))
        self.spark.sql(f"CREATE TABLE {t.ref} ({self.ddl(t)}) USING iceberg{part}{tblproperties(props)}")

    def commits(self, t: Table) -> int:
        return int(self.spark.sql(f"SELECT count(*) FROM {t.ref}.snapshots").collect()[0][0])


ENGINES: dict[str, type[Engine]] = {
    "parquet": Parquet, "strata-v1": StrataV1, "strata-v2": StrataV2, "delta": Delta, "iceberg": Iceberg}


def session(system: str, root: Path, jars_dir: Path, snapshots: Path, memory: str,
            conf: dict[str, str] | None = None) -> SparkSession:
    """The system's Spark application: the same settings for every system (plus `conf`), plus what the system needs."""
    b = SparkSession.builder.master(MASTER).appName(f"bench-{system}")
    for key, value in dict(COMMON_CONF, **(conf or {})).items():
        b = b.config(key, value)
    b = b.config("spark.driver.memory", memory).config("spark.sql.warehouse.dir", str(root / "spark-warehouse"))
    if system.startswith("strata"):
        import strata
        b = strata.configure_spark(b, str(root / "strata-warehouse"))
    elif system == "delta":
        b = (b.config("spark.jars", ",".join(str(jars_dir / j) for j in DELTA_JARS))
             .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
             .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"))
    elif system == "iceberg":
        b = (b.config("spark.jars", ",".join(str(jars_dir / j) for j in ICEBERG_JARS))
             .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"))
        for name, warehouse in (("ice", root / "iceberg-warehouse"), ("icesnap", snapshots / "iceberg-warehouse")):
            b = (b.config(f"spark.sql.catalog.{name}", "org.apache.iceberg.spark.SparkCatalog")
                 .config(f"spark.sql.catalog.{name}.type", "hadoop")
                 .config(f"spark.sql.catalog.{name}.warehouse", str(warehouse))
                 .config(f"spark.sql.catalog.{name}.cache-enabled", "false"))
    elif system != "parquet":
        raise ValueError(f"unknown system {system}")
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
