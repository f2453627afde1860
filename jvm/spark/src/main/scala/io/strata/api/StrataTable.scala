package io.strata.api

import io.strata.log.TableLog
import io.strata.procedures.{DetailProcedure, HistoryProcedure}
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.strata.SparkInternals
import org.apache.spark.sql.types._

import scala.jdk.CollectionConverters._

/** JVM entry points for the Python package (py4j) and Scala users: table version and history by path. */
object StrataTable {
  private def log(spark: SparkSession, path: String): TableLog =
    TableLog.forPath(new Path(path), SparkInternals.hadoopConf(spark, Map.empty))

  /** The latest committed version of the table at `path`. */
  def version(spark: SparkSession, path: String): Long = log(spark, path).snapshot().version

  val HistorySchema: StructType = HistoryProcedure.outputType

  /** The table's commits, newest first (at most `limit`). */
  def history(spark: SparkSession, path: String, limit: Int): DataFrame =
    spark.createDataFrame(HistoryProcedure.rows(log(spark, path), limit).asJava, HistorySchema)

  def history(spark: SparkSession, path: String): DataFrame = history(spark, path, Int.MaxValue)

  val DetailSchema: StructType = DetailProcedure.outputType

  /** One row describing the table at `path` (the columns of Delta's DESCRIBE DETAIL, plus the version). */
  def detail(spark: SparkSession, path: String): DataFrame =
    spark.createDataFrame(java.util.List.of(DetailProcedure.row(log(spark, path))), DetailSchema)
}
