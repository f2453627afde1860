"""Write-path overhead of Strata's V1 path against Spark's own Parquet writer (the ceiling for a Spark write).

Measures, in one Spark application, interleaved rounds of the same write (same data, codec and parallelism):
  parquet        df.write.parquet(path)
  strata         df.write.format("strata").save(path)             (statistics from the Parquet footer)
  strata-nostats the same with delta.dataSkippingNumIndexedCols=0 on the table (footer still read for numRecords)
and a noop sink as the data-generation control. Reports median/min/max seconds and ratios computed per round.

Usage: python bench/write_overhead.py [--rows N] [--rounds R] [--out bench/results]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import strata


def data(spark: SparkSession, rows: int) -> DataFrame:
    """Deterministic mixed schema: longs, doubles, strings, dates, timestamps, decimals."""
    return spark.range(rows).select(
        F.col("id"),
        (F.col("id") * 7 % 1000003).alias("k"),
        (F.col("id") / 3.0).alias("x"),
        F.concat(F.lit("name-"), (F.col("id") % 50000).cast("string")).alias("s"),
        F.date_add(F.lit("2020-01-01").cast("date"), (F.col("id") % 1500).cast("int")).alias("d"),
        (F.lit(1_600_000_000) + F.col("id")).cast("timestamp").alias("ts"),
        (F.col("id") % 100000 / 100).cast("decimal(12,2)").alias("amt"),
    )


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default="bench/results")
    args = ap.parse_args()

    spark = strata.configure_spark(
        SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2").config("spark.driver.memory", "4g")).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    df = data(spark, args.rows).repartition(4).cache()
    df.count()
    work = Path(tempfile.mkdtemp(prefix="strata-bench-"))

    def run(system: str, target: Path) -> None:
        if system == "noop":
            df.write.format("noop").mode("overwrite").save()
        elif system == "parquet":
            df.write.mode("overwrite").parquet(str(target))
        elif system == "strata":
            df.write.format("strata").save(str(target))
        elif system == "strata-nostats":
            # The table property is set by creating the table first with an empty write.
            spark.sql(f"CREATE TABLE strata.`{target}` (id BIGINT, k BIGINT, x DOUBLE, s STRING, d DATE, "
                      "ts TIMESTAMP, amt DECIMAL(12,2)) TBLPROPERTIES ('delta.dataSkippingNumIndexedCols'='0')")
            df.write.format("strata").mode("append").save(str(target))

    systems = ["noop", "parquet", "strata", "strata-nostats"]
    results: dict[str, list[float]] = {s: [] for s in systems}
    for rnd in range(args.rounds + 1):  # round 0 is a discarded warm-up
        for system in systems:
            target = work / f"{system}-{rnd}"
            seconds = timed(lambda: run(system, target))
            if rnd > 0:
                results[system].append(seconds)
            shutil.rmtree(target, ignore_errors=True)
    ratios = {s: [results[s][i] / results["parquet"][i] for i in range(args.rounds)] for s in systems}
    summary = {
        s: {"median_s": statistics.median(v), "min_s": min(v), "max_s": max(v),
            "median_ratio_vs_parquet": statistics.median(ratios[s])}
        for s, v in results.items()
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")
    record = {"benchmark": "write_overhead", "rows": args.rows, "rounds": args.rounds, "runs": results,
              "summary": summary, "spark": spark.version, "strata": strata.__version__}
    (out / f"{stamp}-write-overhead.json").write_text(json.dumps(record, indent=2))
    lines = [f"# Write overhead vs Spark Parquet ({args.rows:,} rows, {args.rounds} rounds, local[2])", "",
             "| system | median s | min s | max s | median ratio vs parquet |", "|---|---|---|---|---|"]
    for s, m in summary.items():
        lines.append(f"| {s} | {m['median_s']:.2f} | {m['min_s']:.2f} | {m['max_s']:.2f} | "
                     f"{m['median_ratio_vs_parquet']:.3f} |")
    (out / "write-overhead.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    shutil.rmtree(work, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main()
