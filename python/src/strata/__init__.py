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
from typing import TYPE_CHECKING, Any, TypeVar

from strata import errors
from strata._version import __version__
from strata.errors import (
    ClassicSessionRequiredError,
    ConcurrentModificationError,
    ConstraintViolationError,
    CorruptLogError,
    InvalidOptionError,
    ProtocolError,
    SchemaMismatchError,
    StrataError,
    StrataSetupError,
    TableExistsError,
    TableNotFoundError,
)
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
    "errors",
    "StrataError",
    "StrataSetupError",
    "ClassicSessionRequiredError",
    "InvalidOptionError",
    "SchemaMismatchError",
    "ConcurrentModificationError",
    "ConstraintViolationError",
    "TableNotFoundError",
    "TableExistsError",
    "ProtocolError",
    "CorruptLogError",
]

CATALOG_CLASS = "io.strata.catalog.StrataCatalog"
SESSION_CATALOG_CLASS = "io.strata.catalog.StrataSessionCatalog"
_VERSION_ENTRY = "io/strata/strata-version.properties"

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


def configure_spark(builder: B, warehouse: str | None = None, *, catalog_name: str = "strata") -> B:
    """Adds the Strata jar and catalogs to a ``SparkSession.Builder`` and returns the builder.

    * appends the bundled jar to ``spark.jars`` (keeping any jars already configured on the builder);
    * ``spark.sql.catalog.<catalog_name>`` = ``io.strata.catalog.StrataCatalog``, with its warehouse directory
      ``spark.sql.catalog.<catalog_name>.warehouse`` (absolute; default ``./strata-warehouse``; URIs such as
      ``s3a://bucket/wh`` are kept as they are);
    * ``spark.sql.catalog.spark_catalog`` = ``io.strata.catalog.StrataSessionCatalog``, so ``USING strata``
      tables in the session catalog go through Strata.

    Raises :class:`StrataSetupError` if the jar is missing or its version is not this package's version.
    It only applies to a session the builder creates: ``spark.jars`` of an already running session do not change.

    >>> spark = strata.configure_spark(SparkSession.builder.master("local[2]"), "/data/wh").getOrCreate()
    >>> spark.sql("CREATE TABLE strata.db.t (id BIGINT) USING strata")
    """
    jar = jar_path()
    found = jar_version(jar)
    if found != __version__:
        raise StrataSetupError(
            f"Strata jar version {found} ({jar}) does not match the strata Python package version {__version__}. "
            "Rebuild and reinstall with `make build`."
        )
    options: dict[str, Any] = getattr(builder, "_options", {})
    jars = [j for j in str(options.get("spark.jars", "")).split(",") if j.strip()]
    if jar not in jars:
        jars.append(jar)
    wh = warehouse if warehouse is not None else "strata-warehouse"
    if "://" not in wh:
        wh = os.path.abspath(os.path.expanduser(wh))
    builder.config("spark.jars", ",".join(jars))
    builder.config(f"spark.sql.catalog.{catalog_name}", CATALOG_CLASS)
    builder.config(f"spark.sql.catalog.{catalog_name}.warehouse", wh)
    builder.config("spark.sql.catalog.spark_catalog", SESSION_CATALOG_CLASS)
    return builder
