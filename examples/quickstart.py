"""Strata quickstart: write a partitioned table, append, overwrite, read it back and print its history.

Run it with `make demo`, or `.venv/bin/python examples/quickstart.py [TABLE_PATH]`.
"""
import datetime as dt
import shutil
import sys
import tempfile
from decimal import Decimal
from pathlib import Path

from pyspark.sql import SparkSession

import strata

base = Path(tempfile.gettempdir()) / "strata-quickstart"
path = Path(sys.argv[1]) if len(sys.argv) > 1 else base / "sales"
shutil.rmtree(path, ignore_errors=True)  # start from scratch

spark = (
    strata.configure_spark(SparkSession.builder.master("local[2]"), str(base / "warehouse"))
    .appName("strata-quickstart")
    .config("spark.ui.enabled", "false")
    .config("spark.ui.showConsoleProgress", "false")
    .config("spark.sql.shuffle.partitions", "2")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")

schema = "id long, country string, amount decimal(10,2), day date"


def sales(first_id: int, country: str, n: int) -> list[tuple[int, str, Decimal, dt.date]]:
    return [(i, country, Decimal(i * 125) / 100, dt.date(2024, 5, 1 + i % 28)) for i in range(first_id, first_id + n)]


# version 0: create the table, partitioned by country
spark.createDataFrame(sales(0, "FR", 3) + sales(3, "DE", 2), schema).write.format("strata") \
    .partitionBy("country").save(str(path))
# versions 1 and 2: two appends
spark.createDataFrame(sales(5, "FR", 2), schema).write.format("strata").mode("append").save(str(path))
spark.createDataFrame(sales(7, "IT", 4), schema).write.format("strata").mode("append").save(str(path))
# version 3: replace everything
spark.createDataFrame(sales(100, "ES", 3), schema).write.format("strata").mode("overwrite").save(str(path))

table = strata.Table.for_path(spark, path)
print(f"Table {path}, version {table.version()}:")
table.to_df().orderBy("id").show()
print("Version 2 (time travel):")
table.to_df(version=2).groupBy("country").count().orderBy("country").show()

print("History:")
print(f"{'version':>7}  {'operation':<9}  {'mode':<9}  {'rows written':>12}")
for c in table.history().orderBy("version").collect():
    print(f"{c.version:>7}  {c.operation:<9}  {c.operationParameters['mode']:<9}  {c.numOutputRows:>12}")

spark.stop()
