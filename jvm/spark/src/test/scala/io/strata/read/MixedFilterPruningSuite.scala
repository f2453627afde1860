package io.strata.read

import io.strata.SparkTestSession
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.execution.FileSourceScanExec
import org.apache.spark.sql.execution.datasources.FilePartition
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec
import org.apache.spark.sql.functions._
import org.scalatest.funsuite.AnyFunSuite

/**
 * A filter mixing partition and data columns (`p = 0 OR id = 1234`) skips files: each file's partition values serve
 * as exact bounds next to its statistics, on path reads (the optimizer rule) and catalog reads (the V2 scan). The rows
 * are those of the same query without pruning.
 */
class MixedFilterPruningSuite extends AnyFunSuite with SparkTestSession {
  import spark.implicits._

  /** p = 0..3 (ids 0-1999, 500 each) and p = null (ids 2000-2499): 5 files a partition, 100 consecutive ids a file. */
  private lazy val path: String = {
    val p = tempDir().resolve("mixed").toString
    spark.range(0, 2500, 1, 1)
      .select($"id", when($"id" < 2000, ($"id" / 500).cast("int")).as("p"), concat(lit("v"), $"id").as("v"))
      .repartitionByRange(25, $"id").write.format("strata").partitionBy("p").save(p)
    p
  }

  private def rows(df: DataFrame): Seq[Row] = df.collect().toSeq.sortBy(_.toString)

  /** The rows of `condition` computed by Spark over all rows held locally: nothing the log says is involved. */
  private def unpruned(condition: String): Seq[Row] = {
    val all = spark.read.format("strata").load(path).select("id", "p", "v").collect().toSeq
    rows(spark.createDataFrame(spark.sparkContext.parallelize(all, 1), all.head.schema).where(condition))
  }

  /** condition -> files it keeps: whole partitions, plus the files whose id range may hold a match. */
  private val cases = Seq(
    "p = 0 OR id = 1234" -> 6, "id = 1234 OR p = 0" -> 6, "p IS NULL OR id < 50" -> 6,
    "(p = 1 AND id = 777) OR (p = 3 AND id > 1950)" -> 2, "p = 2 OR v = 'x'" -> 5, "p = 9 OR id >= 2450" -> 1,
    "NOT (p <=> 0) AND id < 120" -> 0, "p = 1 OR id + 1 = 5" -> 25)

  test("path reads: inputFiles() and the scan keep only the files a mixed filter may match; rows unchanged") {
    val read = spark.read.format("strata").load(path)
    assert(read.inputFiles.length == 25)
    cases.foreach { case (condition, files) =>
      val df = read.where(condition).select("id", "p", "v")
      assert(df.inputFiles.length == files, condition)
      assert(rows(df) == unpruned(condition), condition) // runs df: its scan's metrics below are this run's
      val scanned = df.queryExecution.executedPlan.collect { case s: FileSourceScanExec => s.metrics("numFiles").value }
      assert(scanned == Seq(files.toLong), condition)
    }
    // `NOT (p <=> 0) AND id < 120`: partition filter p <> 0 keeps p = 1..3 and null, whose ids are all >= 500
    assert(rows(read.where("NOT (p <=> 0) AND id < 120")).isEmpty)
  }

  test("catalog reads: the V2 scan plans only the files a mixed filter may match; rows unchanged") {
    cases.foreach { case (condition, files) =>
      val df = spark.table(s"strata.`$path`").where(condition).select("id", "p", "v")
      val planned = df.queryExecution.executedPlan.collectFirst { case b: BatchScanExec => b.batch.planInputPartitions() }
        .get.flatMap(_.asInstanceOf[FilePartition].files)
      assert(planned.length == files, condition)
      assert(rows(df) == unpruned(condition), condition)
    }
  }
}
