"""Read options on catalog tables (`spark.read.option(...).table(name)`), in the `strata` catalog and in
`spark_catalog` (USING strata): checked as path reads check theirs, and raised in Python as
:class:`strata.InvalidOptionError` under :func:`strata.errors.translate`. A change data feed request must never
return the whole table."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import Row, SparkSession

import strata


@pytest.fixture
def tables(spark: SparkSession) -> Iterator[list[str]]:
    """One table per catalog; version 1 holds ids 1 and 2, version 2 adds id 3."""
    names = ["strata.readopts.t", "spark_catalog.default.readopts_t"]
    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.readopts")
    for name in names:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
        spark.sql(f"CREATE TABLE {name} (id BIGINT) USING strata")
        spark.sql(f"INSERT INTO {name} VALUES (1), (2)")
        spark.sql(f"INSERT INTO {name} VALUES (3)")
    yield names
    for name in names:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def ids(rows: list[Row]) -> set[int]:
    return {int(r[0]) for r in rows}


def test_read_change_feed_on_a_catalog_table_raises_invalid_option_error(spark: SparkSession,
                                                                          tables: list[str]) -> None:
    for name in tables:
        reader = spark.read.option("readChangeFeed", "true").option("startingVersion", "0")
        with pytest.raises(strata.InvalidOptionError) as err:
            with strata.errors.translate():
                reader.table(name).collect()
        assert err.value.message.startswith(
            "Option 'readChangeFeed': change data feed is not supported by Strata yet; this read would return the "
            "table's rows, not its changes."), name
        assert err.value.jvm_class == "io.strata.log.InvalidTableOperationException"


def test_misspelt_option_on_a_catalog_table_raises_invalid_option_error(spark: SparkSession,
                                                                         tables: list[str]) -> None:
    for name in tables:
        with pytest.raises(strata.InvalidOptionError) as err:
            with strata.errors.translate():
                spark.read.option("versionAsOff", "1").table(name).collect()
        assert str(err.value) == ("Unknown option 'versionAsOff'. Did you mean 'versionAsOf'? Known options: path, "
                                  "versionAsOf, timestampAsOf."), name
        # The accepted spelling works: version 1 of the table.
        assert ids(spark.read.option("versionAsOf", "1").table(name).collect()) == {1, 2}, name
        assert ids(spark.read.table(name).collect()) == {1, 2, 3}, name
