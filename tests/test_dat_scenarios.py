"""The Delta Acceptance Testing (DAT) reader scenarios `column_mapping` and `iceberg_compat_v1`, regenerated here
with delta-spark 4.4.0 (the `peer`): the DAT release tables are not in this repository or its fixtures, so delta-spark's
own read of each version stands for DAT's expected data. Strata must read every version as delta-spark does, the
latest as delta-rs does, and refuse writes it cannot do by the feature's name.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import strata
from delta_spark_peer import Peer
from table_reads import delta_rs_tuples, log_versions, strata_history, strata_tuples


@pytest.mark.parametrize("scenario", ["column_mapping", "iceberg_compat_v1"])
def test_dat_scenario_reads_as_delta_spark(spark: SparkSession, peer: Peer, tmp_path: Path, scenario: str) -> None:
    path = tmp_path / scenario
    d = f"delta.`{path}`"
    props = "'delta.columnMapping.mode' = 'name'" + (
        ", 'delta.enableIcebergCompatV1' = 'true'" if scenario == "iceberg_compat_v1" else "")
    statements = [
        f"CREATE TABLE {d} (letter STRING, `int` BIGINT, `date` DATE) USING delta TBLPROPERTIES ({props})",
        f"INSERT INTO {d} VALUES ('a', 1, DATE'1970-01-01'), ('b', 2, DATE'1970-01-02'), (NULL, 3, NULL)",
    ]
    if scenario == "column_mapping":  # DAT's scenario renames a column after the first write
        statements += [f"ALTER TABLE {d} RENAME COLUMN letter TO new_letter",
                       f"INSERT INTO {d} VALUES ('c', 4, DATE'1970-01-03')"]
    peer.call("sql", statements=statements)
    assert strata_history(spark, path) == peer.read(path, log_versions(path))
    columns = ["new_letter" if scenario == "column_mapping" else "letter", "int", "date"]
    assert strata_tuples(spark, path, columns) == delta_rs_tuples(path, columns)
    if scenario == "iceberg_compat_v1":
        with pytest.raises(strata.ProtocolError, match="icebergCompatV1"):
            strata.write(spark.sql("SELECT 'z' AS letter, 9L AS `int`, CAST(NULL AS DATE) AS `date`"), path,
                         mode="append")
