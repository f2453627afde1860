"""strata.Table.stream: the typed streaming read (options checked in Python, then Strata's streaming source)."""
from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import strata
from pyspark.sql import SparkSession


def _drain(df: Any, checkpoint: Path) -> list[int]:
    seen: list[int] = []

    def collect(batch: Any, _batch_id: int) -> None:
        seen.extend(r.id for r in batch.select("id").collect())

    q = df.writeStream.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True) \
        .foreachBatch(collect).start()
    q.awaitTermination()
    return sorted(seen)


def test_stream_by_path_and_name(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.range(0, 5).write.format("strata").save(path)
    spark.range(5, 8).write.format("strata").mode("append").save(path)
    table = strata.Table.for_path(spark, path)
    assert _drain(table.stream(), tmp_path / "cp1") == list(range(8))
    assert _drain(table.stream(starting_version=1, max_files_per_trigger=1), tmp_path / "cp2") == [5, 6, 7]
    assert _drain(table.stream(starting_version="latest"), tmp_path / "cp3") == []

    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.stream_api")
    spark.sql("CREATE TABLE strata.stream_api.t (id BIGINT) USING strata")
    spark.sql("INSERT INTO strata.stream_api.t VALUES (1), (2)")
    named = strata.Table.for_name(spark, "strata.stream_api.t")
    assert _drain(named.stream(max_bytes_per_trigger="1m"), tmp_path / "cp4") == [1, 2]


@pytest.mark.parametrize("kwargs, message", [
    ({"starting_version": 1, "starting_timestamp": "2026-01-01"}, "pick one"),
    ({"starting_version": -1}, "starting_version must be a whole number >= 0"),
    ({"starting_version": "earliest"}, "or 'latest'"),
    ({"max_files_per_trigger": 0}, "max_files_per_trigger must be a whole number >= 1"),
    ({"max_bytes_per_trigger": "lots"}, "'64m'"),
    ({"skip_change_commits": "yes"}, "True or False"),
    ({"starting_timestamp": dt.date(2026, 1, 1), "max_files_per_trigger": True}, "max_files_per_trigger"),
])
def test_stream_arguments_checked_before_spark(spark: SparkSession, tmp_path: Path, kwargs: dict[str, Any],
                                               message: str) -> None:
    with pytest.raises(strata.InvalidOptionError, ) as e:
        strata.Table.for_path(spark, str(tmp_path / "missing")).stream(**kwargs)
    assert message in str(e.value)


def test_stream_starting_timestamp_after_latest_commit_refused(spark: SparkSession, tmp_path: Path) -> None:
    """Refused when the query starts, before any micro-batch; strata.errors.translate() makes it typed."""
    path = str(tmp_path / "t")
    spark.range(0, 3).write.format("strata").save(path)
    stream = strata.Table.for_path(spark, path).stream(starting_timestamp=dt.datetime(2999, 1, 1))
    with pytest.raises(strata.InvalidOptionError) as e, strata.errors.translate():
        _drain(stream, tmp_path / "cp")
    assert str(e.value).startswith(
        f"Option startingTimestamp is 2999-01-01 00:00:00.000 UTC but the latest commit of strata.`{path}` "), e.value
    assert "(version 0) was at " in str(e.value) and "or startingVersion=latest" in str(e.value), e.value
    assert e.value.jvm_class == "io.strata.log.InvalidTableOperationException"
    assert not list((tmp_path / "cp" / "offsets").glob("[0-9]*")), "no micro-batch was planned"
