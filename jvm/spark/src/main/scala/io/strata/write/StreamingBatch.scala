package io.strata.write

import java.nio.charset.StandardCharsets
import java.util.UUID

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.runtime.{MicroBatchExecution, StreamExecution}

/**
 * One micro-batch of a streaming write into a table. Its commit carries the application transaction (`appId`,
 * version `batchId`), so a replayed batch is recognized inside the commit's conflict check. `sweepEarlierAttempts`:
 * an earlier attempt of this very batch may have died without cleaning up (the first batch a restarted query
 * commits), so after the commit the files of earlier attempts are deleted ([[JobFiles.sweepEarlierAttempts]]).
 */
final case class StreamingBatch(appId: String, batchId: Long, queryId: String, outputMode: String,
                                sweepEarlierAttempts: Boolean) {
  /** delta-spark's parameters of a STREAMING UPDATE commit. */
  def operationParameters: Map[String, String] =
    Map("outputMode" -> outputMode, "queryId" -> queryId, "epochId" -> batchId.toString)

  /** The batch's data files: named after the batch, so that a later attempt of it finds what this one left. */
  def jobFiles(tableRoot: String): JobFiles = JobFiles.forAppVersion(tableRoot, appId, batchId)
}

object StreamingBatch {
  /**
   * On the thread running a streaming query's micro-batch: its batch id (a local property Spark sets before it plans
   * the batch). None elsewhere, and in continuous processing.
   */
  def runningBatchId(spark: SparkSession): Option[Long] = {
    val sc = spark.sparkContext
    val continuous = Option(sc.getLocalProperty(StreamExecution.IS_CONTINUOUS_PROCESSING)).contains("true")
    if (continuous) None else Option(sc.getLocalProperty(MicroBatchExecution.BATCH_ID_KEY)).flatMap(_.toLongOption)
  }

  /** On a streaming query's thread: the query's id (stable across restarts from the same checkpoint). */
  def runningQueryId(spark: SparkSession): Option[String] =
    Option(spark.sparkContext.getLocalProperty(StreamExecution.QUERY_ID_KEY))

  /** The first 18 characters of the job token of every attempt of (`appId`, `version`). */
  def tokenPrefix(appId: String, version: Long): String =
    UUID.nameUUIDFromBytes(s"$appId\u0000$version".getBytes(StandardCharsets.UTF_8)).toString.take(18)
}
