package io.strata.write

import io.strata.SparkTestSession
import io.strata.log.{InvalidTableOperationException, TableLog}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions.{col, concat, lit}
import org.scalatest.funsuite.AnyFunSuite

/**
 * Optimized path writes: delta.autoOptimize.optimizeWrite (table property), delta-spark's session conf and the
 * optimizeWrite write option.
 */
class OptimizedWriteSuite extends AnyFunSuite with SparkTestSession {
  private def snapshot(path: String) = TableLog.forPath(new Path(path), new Configuration()).snapshot()

  /** 6 input tasks, each holding rows of all 3 partitions (p = a, b and NULL). */
  private def scattered(n: Int): DataFrame = spark.range(0, n, 1, 6)
    .select(col("id"), org.apache.spark.sql.functions.when(col("id") % 3 === 2, lit(null))
      .otherwise(concat(lit("p"), (col("id") % 3).cast("string"))).as("p"))

  private def filesPerPartition(path: String): Map[Option[String], Int] =
    snapshot(path).files.groupBy(_.partitionValues("p")).map { case (p, fs) => p -> fs.size }

  test("a partitioned append makes one file per partition with the table property, one per task and partition without") {
    val plain = tempDir("ow").resolve("plain").toString
    val optimized = tempDir("ow").resolve("optimized").toString
    spark.sql(s"CREATE TABLE strata.`$optimized` (id BIGINT, p STRING) USING strata PARTITIONED BY (p) " +
      "TBLPROPERTIES ('delta.autoOptimize.optimizeWrite' = 'true')")
    scattered(600).write.format("strata").partitionBy("p").save(plain)
    scattered(600).write.format("strata").mode("append").save(optimized)
    assert(filesPerPartition(plain) == Map(Some("p0") -> 6, Some("p1") -> 6, None -> 6))
    assert(filesPerPartition(optimized) == Map(Some("p0") -> 1, Some("p1") -> 1, None -> 1))
    def contents(p: String) = spark.read.format("strata").load(p).collect().map(_.toString).sorted.toSeq
    assert(contents(optimized) == contents(plain) && contents(plain).size == 600)
    // The write option overrides the property, both ways.
    scattered(60).write.format("strata").mode("append").option("optimizeWrite", "false").save(optimized)
    assert(filesPerPartition(optimized).values.sum == 3 + 18)
    scattered(60).write.format("strata").mode("append").option("optimizeWrite", "true").save(plain)
    assert(filesPerPartition(plain).values.sum == 18 + 3)
  }

  test("delta-spark's session conf optimizeWrite.enabled turns it on, over the table property and under the option") {
    val key = "spark.databricks.delta.optimizeWrite.enabled"
    val path = tempDir("ow").resolve("session").toString
    scattered(60).write.format("strata").partitionBy("p").save(path)
    assert(filesPerPartition(path).values.sum == 18)
    spark.conf.set(key, "true")
    try {
      scattered(60).write.format("strata").mode("append").save(path)
      assert(filesPerPartition(path).values.sum == 18 + 3)
      scattered(60).write.format("strata").mode("append").option("optimizeWrite", "false").save(path)
      assert(filesPerPartition(path).values.sum == 18 + 3 + 18)
      spark.conf.set(key, "sometimes")
      val e = intercept[InvalidTableOperationException](scattered(6).write.format("strata").mode("append").save(path))
      assert(e.getMessage == s"[STRATA_INVALID_CONF_VALUE] session conf $key has invalid value 'sometimes': it " +
        "must be true or false.")
      assert(snapshot(path).version == 2, "nothing committed")
    } finally spark.conf.unset(key)
  }

  test("optimizeWrite must be true or false") {
    val path = tempDir("ow").resolve("t").toString
    val e = intercept[InvalidTableOperationException](
      scattered(6).write.format("strata").option("optimizeWrite", "yes").save(path))
    assert(e.getMessage == "[STRATA_INVALID_OPTION_VALUE] Option 'optimizeWrite' has invalid value 'yes': it must be " +
      "true or false.")
    assert(e.getCondition == "STRATA_INVALID_OPTION_VALUE" && e.getSqlState == "42616")
    assert(!new java.io.File(path, "_delta_log").exists())
  }
}
