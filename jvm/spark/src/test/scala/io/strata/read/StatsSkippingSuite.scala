package io.strata.read

import io.strata.SparkTestSession
import io.strata.log.TableLog
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.catalyst.expressions.{Expression, PredicateHelper}
import org.apache.spark.sql.catalyst.plans.logical.Filter
import org.apache.spark.sql.execution.FileSourceScanExec
import org.apache.spark.sql.functions._
import org.scalatest.funsuite.AnyFunSuite

/** Reads skip files by the log's statistics, and never lose a matching row doing so. */
class StatsSkippingSuite extends AnyFunSuite with SparkTestSession with PredicateHelper {
  import spark.implicits._

  private def rows(df: DataFrame): Seq[Row] = df.collect().toSeq.sortBy(_.toString)

  /** 10 files (one per task), file i holding ids [100 i, 100 i + 99]; every 7th `s` null; partitioned by `p`. */
  private lazy val table: String = {
    val path = tempDir().resolve("skip").toString
    spark.range(0, 1000, 1, 10).select(
      $"id", ($"id" % 2).cast("string").as("p"),
      when($"id" % 7 =!= 0, concat(lit("s-"), lpad($"id".cast("string"), 4, "0"))).as("s"),
      date_add(lit("2024-01-01").cast("date"), ($"id" / 10).cast("int")).as("d"),
      (lit(1700000000L) + $"id" * 60).cast("timestamp").as("ts"),
      ($"id" / 4).cast("decimal(10,2)").as("amt"), ($"id" * 0.5).as("x"))
      .write.format("strata").partitionBy("p").save(path)
    path
  }

  /** The files the log index lists for a scan of `table` filtered by `condition`. */
  private def listed(condition: String): Int = {
    val df = spark.read.format("strata").load(table).where(condition)
    val filters: Seq[Expression] = df.queryExecution.optimizedPlan.collectFirst { case Filter(c, _) => c }
      .map(splitConjunctivePredicates).getOrElse(Nil)
    val (partitionFilters, dataFilters) = filters.partition(_.references.forall(_.name == "p"))
    val snapshot = TableLog.forPath(new Path(table), new Configuration()).snapshot()
    SnapshotReader.fileIndex(spark, snapshot).listFiles(partitionFilters, dataFilters).map(_.files.size).sum
  }

  test("filters on data columns skip files whose bounds exclude them") {
    assert(listed("true") == 20) // 10 tasks x 2 partitions
    assert(listed("id = 250") == 2) // the range 200-299 was written as one file per partition
    assert(listed("id = 250 AND p = '0'") == 1)
    assert(listed("id = 251 AND p = '0'") == 1) // bounds cannot see parity: the p=0 file of that range stays
    assert(listed("id < 100") == 2)
    assert(listed("id >= 950") == 2)
    assert(listed("id > 2000") == 0)
    assert(listed("id IN (5, 555)") == 4)
    assert(listed("id = 5 OR id = 555") == 4)
    assert(listed("s = 's-0333'") == 2)
    assert(listed("d = DATE'2024-01-05'") == 2)
    assert(listed("ts < TIMESTAMP'2023-11-14 22:13:20' + INTERVAL 30 MINUTES") == 2)
    assert(listed("amt BETWEEN 30 AND 40") == 2)
    assert(listed("x >= 499.0") == 2)
    assert(listed("s IS NULL") == 20)
    assert(listed("id + 1 = 251") == 20) // not understood: no file skipped
    assert(listed("NOT (id = 250)") == 20)
  }

  test("skipping never changes a result: filtered reads equal the same filters over the plain Parquet files") {
    val parquet = spark.read.parquet(table).select($"id", $"p".cast("string").as("p"), $"s", $"d", $"ts", $"amt", $"x")
    val strata = spark.read.format("strata").load(table).select("id", "p", "s", "d", "ts", "amt", "x")
    Seq("id = 250", "id < 100 OR id > 900", "id IN (5, 555, 999)", "s = 's-0333'", "s IS NULL AND id < 50",
      "s IS NOT NULL AND id > 990", "s > 's-0990'", "d <= DATE'2024-01-03'", "amt >= 249.5", "x < 1.0",
      "ts >= TIMESTAMP'2023-11-15 16:00:00'", "p = '1' AND id BETWEEN 100 AND 120", "NOT (id < 990)",
      "id <=> 17", "s <=> NULL AND id < 30")
      .foreach(c => assert(rows(strata.where(c)) == rows(parquet.where(c)), c))
  }

  test("the scan reads only the files the statistics cannot rule out") {
    val q = spark.read.format("strata").load(table).where($"id" === 420)
    assert(q.collect().length == 1)
    val scan = q.queryExecution.executedPlan.collectFirst { case s: FileSourceScanExec => s }.get
    assert(scan.metrics("numFiles").value == 2) // of 20: the two partition files of ids 400-499
  }

  test("catalog (V2) reads skip too, and files without statistics are always read") {
    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.sk")
    spark.sql("CREATE TABLE strata.sk.t (id BIGINT) USING strata TBLPROPERTIES ('delta.dataSkippingNumIndexedCols' = '0')")
    spark.range(0, 100, 1, 4).writeTo("strata.sk.t").append()
    spark.sql("ALTER TABLE strata.sk.t SET TBLPROPERTIES ('delta.dataSkippingNumIndexedCols' = '32')")
    spark.range(100, 200, 1, 4).writeTo("strata.sk.t").append()
    val scan = spark.table("strata.sk.t").where($"id" === 150)
    assert(scan.collect().map(_.getLong(0)).toSeq == Seq(150L))
    val files = scan.queryExecution.executedPlan.collectFirst {
      case b: org.apache.spark.sql.execution.datasources.v2.BatchScanExec => b.batch.planInputPartitions()
    }.get.flatMap(_.asInstanceOf[org.apache.spark.sql.execution.datasources.FilePartition].files)
    assert(files.length == 5, files.map(_.filePath).mkString(", ")) // 4 files without min/max + 1 of the second write
  }
}
