"""Strata: transactional Delta-protocol tables for Apache Spark 4.1.

The wheel carries the Strata connector jar (``strata/jars/strata-spark.jar``). Set up a session with
:func:`configure_spark`, then write with :func:`write` (typed, checked parameters) or the ordinary Spark APIs with
``format("strata")``, and read with :class:`Table` or ``spark.read.format("strata")``:

>>> from pyspark.sql import SparkSession
>>> import strata
>>> spark = strata.configure_spark(SparkSession.builder.master("local[2]")).getOrCreate()
>>> strata.write(spark.range(3), "/tmp/t")
>>> strata.Table.for_path(spark, "/tmp/t").version()
0

Errors of the connector are raised as :class:`StrataError` subclasses (see :mod:`strata.errors`).
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from strata import errors
from strata._version import __version__
from strata.errors import (
    ClassicSessionRequiredError,
    ConcurrentModificationError,
    ConstraintViolationError,
    CorruptLogError,
    MissingLogFileError,
    InvalidOptionError,
    MergeCardinalityError,
    ProtocolError,
    SchemaMismatchError,
    StrataError,
    StrataSetupError,
    TableExistsError,
    TableNotFoundError,
)
from strata.dml import DeleteMetrics, MergeBuilder, MergeMetrics, UpdateMetrics
from strata.maintenance import LogCleanupResult, OptimizeResult, RestoreResult, TableDetail, VacuumResult
from strata.table import Table
from strata.writer import COMPRESSION_CODECS, WRITE_MODES, Compression, WriteMode, write, write_options

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "__version__",
    "jar_path",
    "jar_version",
    "configure_spark",
    "write",
    "write_options",
    "WriteMode",
    "Compression",
    "WRITE_MODES",
    "COMPRESSION_CODECS",
    "Table",
    "OptimizeResult",
    "VacuumResult",
    "RestoreResult",
    "TableDetail",
    "LogCleanupResult",
    "MergeBuilder",
    "DeleteMetrics",
    "UpdateMetrics",
    "MergeMetrics",
    "errors",
    "StrataError",
    "StrataSetupError",
    "ClassicSessionRequiredError",
    "InvalidOptionError",
    "SchemaMismatchError",
    "ConcurrentModificationError",
    "ConstraintViolationError",
    "MergeCardinalityError",
    "TableNotFoundError",
    "TableExistsError",
    "ProtocolError",
    "CorruptLogError",
    "MissingLogFileError",
]

CATALOG_CLASS = "io.strata.catalog.StrataCatalog"
SESSION_CATALOG_CLASS = "io.strata.catalog.StrataSessionCatalog"
#: Optimizer rules that answer path reads from the log (pruned file lists, aggregates); reads work without it.
EXTENSIONS_CLASS = "io.strata.StrataSessionExtensions"
_VERSION_ENTRY = "io/strata/strata-version.properties"
#: The Hadoop S3A client of Spark 4.1's Hadoop (3.4.2, the first with conditional PUTs); it brings the AWS SDK v2.
HADOOP_AWS_PACKAGE = "org.apache.hadoop:hadoop-aws:3.4.2"
S3A_FILESYSTEM_CLASS = "org.apache.hadoop.fs.s3a.S3AFileSystem"

B = TypeVar("B", bound="SparkSession.Builder")


def _bundled_jar() -> Path:
    """Where the jar sits inside this installed package (whether or not it is there)."""
    return Path(__file__).resolve().parent / "jars" / "strata-spark.jar"


def jar_path() -> str:
    """The absolute path of the Strata connector jar inside the installed package.

    Raises :class:`StrataSetupError` if the package was built without its jar.

    >>> strata.jar_path()
    '/.../site-packages/strata/jars/strata-spark.jar'

    Use it for ``spark-submit --jars "$(python -c 'import strata; print(strata.jar_path())')" app.py``.
    """
    path = _bundled_jar()
    if not path.is_file():
        raise StrataSetupError(
            f"The Strata connector jar is missing: {path} does not exist. This strata package was built without "
            "its jar. Rebuild it from the repository root with `make build` (it builds the jar, the wheel and "
            "installs it into .venv), or install a wheel from build/dist."
        )
    return str(path)


def jar_version(path: str | os.PathLike[str]) -> str:
    """The version recorded in a Strata jar (``io/strata/strata-version.properties``), read without a JVM.

    >>> strata.jar_version(strata.jar_path())
    '0.1.0'
    """
    try:
        with zipfile.ZipFile(path) as jar:
            text = jar.read(_VERSION_ENTRY).decode("utf-8")
    except (OSError, KeyError, zipfile.BadZipFile) as e:
        raise StrataSetupError(f"{os.fspath(path)} is not a readable Strata jar ({_VERSION_ENTRY}): {e}") from e
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "version":
            return value.strip()
    raise StrataSetupError(f"{os.fspath(path)}: {_VERSION_ENTRY} has no `version=` line")


def _append_list_option(options: dict[str, Any], key: str, values: Sequence[str]) -> str:
    """``options[key]`` (comma-separated) with ``values`` appended, each once."""
    items = [v for v in str(options.get(key, "")).split(",") if v.strip()]
    for v in values:
        if v not in items:
            items.append(v)
    return ",".join(items)


def configure_spark(
    builder: B,
    warehouse: str | None = None,
    *,
    catalog_name: str = "strata",
    s3: bool = False,
    s3_jars: Sequence[str] | None = None,
) -> B:
    """Adds the Strata jar and catalogs to a ``SparkSession.Builder`` and returns the builder.

    * appends the bundled jar to ``spark.jars`` (keeping any jars already configured on the builder);
    * ``spark.sql.catalog.<catalog_name>`` = ``io.strata.catalog.StrataCatalog``, with its warehouse directory
      ``spark.sql.catalog.<catalog_name>.warehouse`` (absolute; default ``./strata-warehouse``; URIs such as
      ``s3a://bucket/wh`` are kept as they are);
    * ``spark.sql.catalog.spark_catalog`` = ``io.strata.catalog.StrataSessionCatalog``, so ``USING strata``
      tables in the session catalog go through Strata;
    * ``spark.sql.extensions`` gets ``io.strata.StrataSessionExtensions`` (kept with any extensions already set):
      optimizer rules that plan path reads from the log.

    With ``s3=True``, tables on S3 (``s3a://bucket/...``, and ``s3://`` mapped to the same S3A client) can be
    written and read:

    * ``spark.jars.packages`` gets ``org.apache.hadoop:hadoop-aws:3.4.2`` (Spark fetches it with the AWS SDK v2 it
      declares), unless ``s3_jars`` lists local jars to use instead (hadoop-aws 3.4.2 and an AWS SDK v2, e.g.
      those a Spark distribution or an image already ships), which are added to ``spark.jars``;
    * ``spark.hadoop.fs.s3.impl`` = ``org.apache.hadoop.fs.s3a.S3AFileSystem`` unless already set.

    Credentials, endpoint and region are S3A's own settings (``spark.hadoop.fs.s3a.*``). Commits are conditional
    PUTs (``If-None-Match: *``): keep ``spark.hadoop.fs.s3a.create.conditional.enabled`` at its default ``true``;
    Strata refuses to commit to S3 without them.

    Raises :class:`StrataSetupError` if the jar is missing or its version is not this package's version.
    It only applies to a session the builder creates: ``spark.jars`` of an already running session do not change.

    >>> spark = strata.configure_spark(SparkSession.builder.master("local[2]"), "/data/wh").getOrCreate()
    >>> spark.sql("CREATE TABLE strata.db.t (id BIGINT) USING strata")
    >>> s3_spark = strata.configure_spark(SparkSession.builder, "s3a://bucket/warehouse", s3=True).getOrCreate()
    """
    if s3_jars is not None and not s3:
        raise StrataSetupError("configure_spark: s3_jars is only used with s3=True")
    if isinstance(s3_jars, str):
        raise StrataSetupError("configure_spark(s3_jars=...) takes a list of jar paths, not one string")
    jar = jar_path()
    found = jar_version(jar)
    if found != __version__:
        raise StrataSetupError(
            f"Strata jar version {found} ({jar}) does not match the strata Python package version {__version__}. "
            "Rebuild and reinstall with `make build`."
        )
    options: dict[str, Any] = getattr(builder, "_options", {})
    jars = [jar]
    if s3:
        if s3_jars is not None:
            missing = [j for j in s3_jars if not os.path.isfile(j)]
            if missing or not s3_jars:
                raise StrataSetupError(f"configure_spark(s3_jars=...): no such jar files: {missing or '(none given)'}")
            jars.extend(os.path.abspath(j) for j in s3_jars)
        else:
            packages = _append_list_option(options, "spark.jars.packages", [HADOOP_AWS_PACKAGE])
            builder.config("spark.jars.packages", packages)
        if "spark.hadoop.fs.s3.impl" not in options:
            builder.config("spark.hadoop.fs.s3.impl", S3A_FILESYSTEM_CLASS)
    wh = warehouse if warehouse is not None else "strata-warehouse"
    if "://" not in wh:
        wh = os.path.abspath(os.path.expanduser(wh))
    builder.config("spark.jars", _append_list_option(options, "spark.jars", jars))
    builder.config(f"spark.sql.catalog.{catalog_name}", CATALOG_CLASS)
    builder.config(f"spark.sql.catalog.{catalog_name}.warehouse", wh)
    builder.config("spark.sql.catalog.spark_catalog", SESSION_CATALOG_CLASS)
    builder.config("spark.sql.extensions", _append_list_option(options, "spark.sql.extensions", [EXTENSIONS_CLASS]))
    return builder
