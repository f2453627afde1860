"""Nested schema evolution of DataFrame appends (issue 24), step by step against delta-spark 4.4.0 (the `peer`): struct
fields matched by name in any order, a nullable column or nested field the data lacks written as null, new nested fields added
by `mergeSchema` inside structs and inside arrays' element structs. After every step both engines must agree on
whether it failed and on the table's rows and schema; at the end delta-spark and deltalake read Strata's table as Strata does.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from delta_spark_peer import Peer, same_step
from table_reads import delta_rs_tuples, strata_json, strata_tuples

# (the rows' query, write options)
STEPS: list[tuple[str, dict[str, str]]] = [
    ("SELECT 1L AS id, named_struct('a', 1) AS s", {}),
    ("SELECT 2L AS id, named_struct('a', 2, 'b', 'x') AS s", {}),                        # refused: b is new
    ("SELECT 2L AS id, named_struct('a', 2, 'b', 'x') AS s", {"mergeSchema": "true"}),
    ("SELECT 3L AS id, named_struct('b', 'y', 'a', 3) AS s", {}),                        # by name, any order
    ("SELECT 4L AS id, named_struct('a', 4) AS s", {}),                                  # b null
    ("SELECT 5L AS id, named_struct('c', 1.5D, 'a', 5) AS s", {"mergeSchema": "true"}),  # c added, b null
    ("SELECT 6L AS id, named_struct('a', 6, 'b', 'z', 'c', 2.5D) AS s, array(named_struct('x', 1)) AS arr",
     {"mergeSchema": "true"}),
    ("SELECT 7L AS id, named_struct('a', 7) AS s, array(named_struct('x', 1, 'y', 2)) AS arr", {"mergeSchema": "true"}),
    ("SELECT 8L AS id, named_struct('a', 8) AS s, array(named_struct('y', 3, 'x', 4), null) AS arr", {}),
    ("SELECT 9L AS id, named_struct('a', 9) AS s, array(named_struct('x', 5)) AS arr", {}),
    ("SELECT 10L AS id, named_struct('a', 10, 'd', 1) AS s, CAST(NULL AS ARRAY<STRUCT<x: INT>>) AS arr", {}),  # refused
    ("SELECT 11L AS id", {}),                                                            # s and arr null
    ("SELECT array(named_struct('x', 6)) AS arr, named_struct('a', 12) AS s", {}),       # id null
]


def test_nested_schema_evolution_step_by_step_as_delta_spark(spark: SparkSession, peer: Peer, tmp_path: Path) -> None:
    mine, theirs = tmp_path / "strata", tmp_path / "delta"
    for n, (query, options) in enumerate(STEPS):
        same_step(spark, peer, mine, theirs, lambda: spark.sql(query).write.format("strata").mode("append")
                  .options(**options).save(str(mine)), "write", (n, query), query=query, path=str(theirs),
                  mode="append", options=options)
    assert peer.read(mine)[0] == strata_json(spark, mine)
    columns = spark.read.format("strata").load(str(mine)).columns
    assert columns == ["id", "s", "arr"]
    assert strata_tuples(spark, mine, ["id"]) == delta_rs_tuples(mine, ["id"])


@pytest.mark.parametrize("query,message", [
    ("SELECT 1L AS id, named_struct('a', 1, 'extra', 2) AS s", r"column 's': field 'extra' is not in the table \(use option mergeSchema to add it\)"),
    ("SELECT 1L AS id, named_struct('a', 1L) AS s", r"field 's.a': bigint in the data cannot be written as int"),
])
def test_nested_refusals_name_the_field(spark: SparkSession, tmp_path: Path, query: str, message: str) -> None:
    import strata
    path = tmp_path / "t"
    spark.sql("SELECT 0L AS id, named_struct('a', 0) AS s").write.format("strata").save(str(path))
    with pytest.raises(strata.SchemaMismatchError, match=message), strata.errors.translate():
        spark.sql(query).write.format("strata").mode("append").save(str(path))
    assert strata_json(spark, path) == ['{"id":0,"s":{"a":0}}']
