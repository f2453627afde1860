"""The installed strata package: version, bundled jar, session configuration, setup errors, Table API."""
from __future__ import annotations

import importlib.metadata
import os
import sysconfig
import zipfile
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import strata

ROOT = Path(__file__).resolve().parent.parent


def fake_jar(path: Path, version: str) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("io/strata/strata-version.properties", f"# generated\nversion={version}\n")
    return path


def test_version_matches_root_version_file() -> None:
    expected = (ROOT / "VERSION").read_text(encoding="utf-8").strip()
    assert strata.__version__ == expected
    assert importlib.metadata.version("strata") == expected


def test_tests_use_the_installed_package() -> None:
    package_dir = Path(strata.__file__).resolve().parent
    assert ROOT / "python" not in package_dir.parents, f"strata imported from the source tree: {package_dir}"
    assert package_dir.parent == Path(sysconfig.get_paths()["purelib"]).resolve()
    assert (package_dir / "py.typed").is_file()


def test_jar_path_is_inside_the_installed_package() -> None:
    jar = Path(strata.jar_path())
    assert jar.is_absolute() and jar.is_file()
    assert jar.parent.parent == Path(strata.__file__).resolve().parent
    assert jar.name == "strata-spark.jar"


def test_jar_version_matches_package_version() -> None:
    assert strata.jar_version(strata.jar_path()) == strata.__version__


def test_jar_version_reads_the_properties_entry(tmp_path: Path) -> None:
    assert strata.jar_version(fake_jar(tmp_path / "x.jar", "9.8.7")) == "9.8.7"
    with zipfile.ZipFile(tmp_path / "empty.jar", "w") as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    with pytest.raises(strata.StrataSetupError, match="not a readable Strata jar"):
        strata.jar_version(tmp_path / "empty.jar")
    (tmp_path / "junk.jar").write_text("not a zip")
    with pytest.raises(strata.StrataSetupError, match="junk.jar"):
        strata.jar_version(tmp_path / "junk.jar")


def test_configure_spark_sets_jar_and_catalogs(tmp_path: Path) -> None:
    builder = strata.configure_spark(SparkSession.Builder(), str(tmp_path / "wh"))
    opts = builder._options
    assert opts["spark.jars"] == strata.jar_path()
    assert opts["spark.sql.catalog.strata"] == "io.strata.catalog.StrataCatalog"
    assert opts["spark.sql.catalog.strata.warehouse"] == str(tmp_path / "wh")
    assert opts["spark.sql.catalog.spark_catalog"] == "io.strata.catalog.StrataSessionCatalog"
    assert opts["spark.sql.extensions"] == "io.strata.StrataSessionExtensions"


def test_configure_spark_appends_to_existing_jars_once() -> None:
    builder = SparkSession.Builder().config("spark.jars", "/opt/a.jar,/opt/b.jar")
    assert strata.configure_spark(builder) is builder
    strata.configure_spark(builder)  # idempotent
    assert builder._options["spark.jars"] == f"/opt/a.jar,/opt/b.jar,{strata.jar_path()}"


def test_configure_spark_keeps_other_session_extensions() -> None:
    builder = SparkSession.Builder().config("spark.sql.extensions", "com.example.Ext")
    strata.configure_spark(strata.configure_spark(builder))
    assert builder._options["spark.sql.extensions"] == "com.example.Ext,io.strata.StrataSessionExtensions"


def test_configure_spark_default_warehouse_and_catalog_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    opts = strata.configure_spark(SparkSession.Builder(), catalog_name="lake")._options
    assert opts["spark.sql.catalog.lake"] == "io.strata.catalog.StrataCatalog"
    assert opts["spark.sql.catalog.lake.warehouse"] == os.path.join(os.getcwd(), "strata-warehouse")
    assert "spark.sql.catalog.strata" not in opts
    relative = strata.configure_spark(SparkSession.Builder(), "wh")._options
    assert relative["spark.sql.catalog.strata.warehouse"] == str(tmp_path.resolve() / "wh")
    uri = strata.configure_spark(SparkSession.Builder(), "s3a://bucket/wh")._options
    assert uri["spark.sql.catalog.strata.warehouse"] == "s3a://bucket/wh"


def test_configure_spark_s3_adds_hadoop_aws_and_maps_s3_to_s3a(tmp_path: Path) -> None:
    builder = SparkSession.Builder().config("spark.jars.packages", "org.example:x:1")
    opts = strata.configure_spark(builder, "s3a://bucket/wh", s3=True)._options
    assert opts["spark.jars.packages"] == "org.example:x:1,org.apache.hadoop:hadoop-aws:3.4.2"
    assert opts["spark.hadoop.fs.s3.impl"] == "org.apache.hadoop.fs.s3a.S3AFileSystem"
    assert opts["spark.jars"] == strata.jar_path()
    assert "spark.jars.packages" not in strata.configure_spark(SparkSession.Builder())._options

    local = tmp_path / "hadoop-aws-3.4.2.jar"
    local.write_bytes(b"")
    mine = SparkSession.Builder().config("spark.hadoop.fs.s3.impl", "com.example.MyS3")
    opts = strata.configure_spark(mine, s3=True, s3_jars=[str(local)])._options
    assert opts["spark.jars"] == f"{strata.jar_path()},{local}"
    assert "spark.jars.packages" not in opts
    assert opts["spark.hadoop.fs.s3.impl"] == "com.example.MyS3", "a user's own setting is kept"
    with pytest.raises(strata.StrataSetupError, match="no such jar files"):
        strata.configure_spark(SparkSession.Builder(), s3=True, s3_jars=[str(tmp_path / "missing.jar")])
    with pytest.raises(strata.StrataSetupError, match="list of jar paths"):
        strata.configure_spark(SparkSession.Builder(), s3=True, s3_jars=str(local))
    with pytest.raises(strata.StrataSetupError, match="only used with s3=True"):
        strata.configure_spark(SparkSession.Builder(), s3_jars=[str(local)])


def test_missing_jar_is_a_clear_setup_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(strata, "_bundled_jar", lambda: tmp_path / "strata" / "jars" / "strata-spark.jar")
    with pytest.raises(strata.StrataSetupError) as err:
        strata.jar_path()
    message = str(err.value)
    assert "built without its jar" in message and "make build" in message and "strata-spark.jar" in message
    builder = SparkSession.Builder()
    with pytest.raises(strata.StrataSetupError, match="make build"):
        strata.configure_spark(builder)
    assert builder._options == {}
    assert isinstance(err.value, RuntimeError)


def test_wrong_jar_version_is_a_clear_setup_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jar = fake_jar(tmp_path / "old.jar", "0.0.1-old")
    monkeypatch.setattr(strata, "jar_path", lambda: str(jar))
    builder = SparkSession.Builder()
    with pytest.raises(strata.StrataSetupError) as err:
        strata.configure_spark(builder)
    message = str(err.value)
    assert "0.0.1-old" in message and strata.__version__ in message and "make build" in message
    assert builder._options == {}


def test_session_is_configured(spark: SparkSession) -> None:
    assert spark.conf.get("spark.sql.catalog.strata") == "io.strata.catalog.StrataCatalog"
    assert spark.conf.get("spark.sql.catalog.spark_catalog") == "io.strata.catalog.StrataSessionCatalog"
    assert spark.conf.get("spark.sql.extensions") == "io.strata.StrataSessionExtensions"
    assert strata.jar_path() in spark.sparkContext.getConf().get("spark.jars", "")


def test_table_api(spark: SparkSession, table_path: Path) -> None:
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id long, s string")
    df.write.format("strata").save(str(table_path))
    df.write.format("strata").mode("append").save(str(table_path))
    spark.createDataFrame([(3, "c")], "id long, s string").write.format("strata").mode("overwrite").save(
        str(table_path))
    table = strata.Table.for_path(spark, table_path)
    assert repr(table) == f"Table({str(table_path)!r})"
    assert table.version() == 2
    assert sorted(r.id for r in table.to_df().collect()) == [3]
    assert sorted(r.id for r in table.to_df(version=1).collect()) == [1, 1, 2, 2]
    assert sorted(r.id for r in table.to_df(version=0).collect()) == [1, 2]

    history = table.history()
    assert [(f.name, f.dataType.simpleString()) for f in history.schema.fields] == [
        ("version", "bigint"), ("timestamp", "timestamp"), ("operation", "string"),
        ("operationParameters", "map<string,string>"), ("numFiles", "bigint"), ("numOutputRows", "bigint"),
        ("numOutputBytes", "bigint"), ("userMetadata", "string"), ("engineInfo", "string"),
        ("operationMetrics", "map<string,string>"),
    ]
    rows = history.collect()
    assert [(r.version, r.operation, r.operationParameters["mode"], r.numOutputRows) for r in rows] == [
        (2, "WRITE", "Overwrite", 1), (1, "WRITE", "Append", 2), (0, "WRITE", "Append", 2),
    ]
    assert {r.engineInfo for r in rows} == {f"Strata/{strata.__version__} Apache-Spark/{spark.version}"}
