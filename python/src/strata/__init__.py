"""Strata: transactional Delta-protocol tables for Apache Spark 4.1.

The wheel carries the Strata connector jar (``strata/jars/strata-spark.jar``). Set up a session with
:func:`configure_spark`, then use the ordinary Spark APIs with ``format("strata")``:

>>> from pyspark.sql import SparkSession
>>> import strata
>>> spark = strata.configure_spark(SparkSession.builder.master("local[2]")).getOrCreate()
>>> spark.range(3).write.format("strata").save("/tmp/t")
>>> strata.Table.for_path(spark, "/tmp/t").version()
0
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from strata._version import __version__

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "__version__",
    "StrataSetupError",
    "ClassicSessionRequiredError",
    "jar_path",
    "jar_version",
    "configure_spark",
    "Table",
]

CATALOG_CLASS = "io.strata.catalog.StrataCatalog"
SESSION_CATALOG_CLASS = "io.strata.catalog.StrataSessionCatalog"
_VERSION_ENTRY = "io/strata/strata-version.properties"

B = TypeVar("B", bound="SparkSession.Builder")


class StrataSetupError(RuntimeError):
    """The Strata package cannot set up Spark: its jar is missing, unreadable or of another version.

    >>> try:
    ...     strata.jar_path()
    ... except strata.StrataSetupError as e:
    ...     print(e)  # says how to rebuild
    """


class ClassicSessionRequiredError(RuntimeError):
    """A Strata call needs the JVM of a classic (py4j) session and was given a Spark Connect session.

    ``Table.version()`` and ``Table.history()`` call the connector through py4j; ``Table.to_df()`` and
    ``spark.read/write.format("strata")`` work on both kinds of session.
    """


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


class Table:
    """A Strata table at a path. A thin wrapper: reads use the public data source API, while ``version()`` and
    ``history()`` call the JVM through py4j and so need a classic session (not Spark Connect) for now.

    >>> t = strata.Table.for_path(spark, "/data/events")
    >>> t.version()
    2
    >>> t.to_df(version=0).count()
    100
    >>> t.history().select("version", "operation", "numOutputRows").show()
    """

    def __init__(self, spark: SparkSession, path: str | os.PathLike[str]) -> None:
        self._spark = spark
        self._path = os.fspath(path)

    @classmethod
    def for_path(cls, spark: SparkSession, path: str | os.PathLike[str]) -> Table:
        """The table stored at ``path`` (nothing is read until a method is called).

        >>> strata.Table.for_path(spark, "/data/events")
        Table('/data/events')
        """
        return cls(spark, path)

    @property
    def path(self) -> str:
        """The table's path, as given."""
        return self._path

    def __repr__(self) -> str:
        return f"Table({self._path!r})"

    def to_df(self, version: int | None = None) -> DataFrame:
        """The table's rows as a DataFrame: the latest version, or ``version`` (time travel, ``versionAsOf``).

        Works on classic and Spark Connect sessions.

        >>> strata.Table.for_path(spark, "/data/events").to_df(version=1).show()
        """
        reader = self._spark.read.format("strata")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        return reader.load(self._path)

    def version(self) -> int:
        """The latest committed version of the table (py4j: classic sessions only).

        >>> strata.Table.for_path(spark, "/data/events").version()
        2
        """
        return int(self._api("version").version(self._jsession(), self._path))

    def history(self) -> DataFrame:
        """The table's commits, newest first (py4j: classic sessions only).

        Columns: ``version`` long, ``timestamp`` timestamp, ``operation`` string (e.g. ``WRITE``),
        ``operationParameters`` map<string,string> (e.g. ``mode`` -> ``Append``), ``numFiles``,
        ``numOutputRows``, ``numOutputBytes`` long, ``userMetadata`` string, ``engineInfo`` string.

        >>> strata.Table.for_path(spark, "/data/events").history().select("version", "operation").show()
        """
        from pyspark.sql import DataFrame

        jdf = self._api("history").history(self._jsession(), self._path)
        return DataFrame(jdf, self._spark)

    def _jsession(self) -> Any:
        return getattr(self._spark, "_jsparkSession")

    def _api(self, method: str) -> Any:
        """The JVM object ``io.strata.api.StrataTable``."""
        jvm = getattr(self._spark, "_jvm", None)
        if jvm is None or not hasattr(self._spark, "_jsparkSession"):
            raise ClassicSessionRequiredError(
                f"strata.Table.{method}() calls the Strata JVM API through py4j and needs a classic SparkSession; "
                "this is a Spark Connect session. Use Table.to_df() or spark.read.format('strata') instead, or a "
                "classic session (SparkSession.builder.master(...), not .remote(...))."
            )
        return jvm.io.strata.api.StrataTable
