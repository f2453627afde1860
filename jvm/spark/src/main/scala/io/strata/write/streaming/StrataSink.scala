package io.strata.write.streaming

import io.strata.config.WriteConf
import io.strata.log.{PostCommitHook, TableLog}
import io.strata.write.{ForeignFiles, StreamingBatch, WriteBase, WriteMode}
import io.strata.write.v1.V1TableWriter
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.connector.read.streaming.ReportsSinkMetrics
import org.apache.spark.sql.execution.streaming.Sink
import org.apache.spark.sql.strata.SparkInternals

/**
 * The streaming sink of path tables (`writeStream.format("strata").start(path)`, and session-catalog tables that
 * Spark resolves to their location). Each micro-batch is one write of the V1 path ([[V1TableWriter]]: schema
 * enforcement and mergeSchema, partitionBy, CHECK and NOT NULL, Spark's file writer) committed with the application
 * transaction (appId = option txnAppId, else the query id; version = the batch id). A batch the table already holds
 * is skipped before any file is written, and a concurrent commit of it is caught inside the commit's conflict check.
 */
final class StrataSink(tablePath: String, conf: WriteConf, mode: WriteMode, postCommit: PostCommitHook) extends Sink
    with ReportsSinkMetrics {
  private val progress = new SinkProgress

  override def addBatch(batchId: Long, data: DataFrame): Unit = {
    val spark = data.sparkSession
    val queryId = StreamingBatch.runningQueryId(spark).getOrElse(throw new IllegalStateException(
      s"$this: addBatch outside a streaming query"))
    val batchConf = conf.forMicroBatch(queryId, batchId)
    val appId = batchConf.appTransaction.get._1
    val log = TableLog.forPath(new Path(tablePath), SparkInternals.hadoopConf(spark, Map.empty))
    // The cached snapshot, brought up to date by the commits since; only the head above the distributed threshold.
    val base = WriteBase.latest(spark, log, append = mode == WriteMode.Append, batchConf)
    val batch = StreamingBatch(appId, batchId, queryId, StreamingWrites.outputModeName(mode),
      sweepEarlierAttempts = progress.firstCommitOfRun)
    // A first batch that died before its commit left its files where the table is to be: those are not foreign.
    if (base.isEmpty) ForeignFiles.refuse(log, batch.jobFiles(tablePath).isAttemptFile)
    val result = V1TableWriter.write(log, data, mode, batchConf, base, postCommit, Some(batch))
    progress.record(batchId, result)
  }

  override def metrics(): java.util.Map[String, String] = progress.metrics

  override def toString: String = s"StrataSink[$tablePath]"
}
