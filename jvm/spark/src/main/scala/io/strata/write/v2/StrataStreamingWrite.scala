package io.strata.write.v2

import io.strata.config.{WriteConf, WriteEntry}
import io.strata.log.{PostCommitHook, TableLog}
import io.strata.write.{RowAlignment, StreamingBatch, TableWrite, WriteBase, WriteMode}
import io.strata.write.streaming.{SinkProgress, StreamingWrites}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.metric.CustomTaskMetric
import org.apache.spark.sql.connector.write.streaming.{StreamingDataWriterFactory, StreamingWrite}
import org.apache.spark.sql.connector.write._

import scala.jdk.CollectionConverters._

/**
 * The write of one micro-batch into a catalog table (`writeStream.toTable`). Spark builds a write per micro-batch,
 * so each starts from the table's latest snapshot (the snapshot cache: one listing, no replay) with the application
 * transaction of the batch (appId = option txnAppId, else the query id; version = the batch id). `truncate` is output
 * mode complete: the batch's rows replace all rows of the table in the same commit. The rows are clustered by
 * partition columns like a batch write ([[StrataWrite]]'s distribution) and written by the same task writers.
 */
final class StrataStreamingWriteBuilder(log: TableLog, info: LogicalWriteInfo, progress: SinkProgress,
                                        postCommit: PostCommitHook)
    extends WriteBuilder with SupportsTruncate {
  private var mode: WriteMode = WriteMode.Append

  override def truncate(): WriteBuilder = { mode = WriteMode.Overwrite; this }

  override def build(): Write = {
    val spark = SparkSession.active
    val conf = WriteConf.forWrite(info.options().asCaseSensitiveMap().asScala.toMap, WriteEntry.CatalogStream,
      spark.conf.getOption)
    val batchId = StreamingBatch.runningBatchId(spark).getOrElse(
      throw StreamingWrites.continuousRefused(log.tablePath.toString))
    val batchConf = conf.forMicroBatch(info.queryId(), batchId)
    val appId = batchConf.appTransaction.get._1
    val write = TableWrite.begin(log, info.schema(), mode, batchConf, postCommit,
      Some(WriteBase.latest(SparkSession.active, log, append = mode == WriteMode.Append, batchConf)))
    val batch = StreamingBatch(appId, batchId, info.queryId(), StreamingWrites.outputModeName(mode),
      sweepEarlierAttempts = progress.firstCommitOfRun)
    write.forStreamingBatch(batch)
    new StrataWrite(log, info, write, () => (), streaming = Some((batch, progress)))
  }
}

/** One epoch (micro-batch) as Spark's streaming write interface: the batch write, committed for that epoch only. */
final class StrataStreamingWrite(batch: StrataBatchWrite, epoch: Long, progress: SinkProgress,
                                 alignment: Option[RowAlignment]) extends StreamingWrite {
  override def createStreamingWriterFactory(info: PhysicalWriteInfo): StreamingDataWriterFactory =
    new StrataStreamingWriterFactory(batch.createBatchWriterFactory(info), alignment)

  override def commit(epochId: Long, messages: Array[WriterCommitMessage]): Unit = {
    if (epochId != epoch) {
      batch.abort(messages)
      throw new IllegalStateException(s"A write built for micro-batch $epoch was asked to commit epoch $epochId.")
    }
    batch.commit(messages)
    progress.record(epoch, batch.result)
  }

  override def abort(epochId: Long, messages: Array[WriterCommitMessage]): Unit = batch.abort(messages)
}

final class StrataStreamingWriterFactory(factory: DataWriterFactory, alignment: Option[RowAlignment])
    extends StreamingDataWriterFactory {
  override def createWriter(partitionId: Int, taskId: Long, epochId: Long): DataWriter[InternalRow] = {
    val writer = factory.createWriter(partitionId, taskId)
    alignment.fold(writer)(a => new AligningDataWriter(writer, a))
  }
}

/** Hands each row to `writer` in the table's layout. */
final class AligningDataWriter(writer: DataWriter[InternalRow], alignment: RowAlignment)
    extends DataWriter[InternalRow] {
  override def write(row: InternalRow): Unit = writer.write(alignment(row))
  override def commit(): WriterCommitMessage = writer.commit()
  override def abort(): Unit = writer.abort()
  override def close(): Unit = writer.close()
  override def currentMetricsValues(): Array[CustomTaskMetric] = writer.currentMetricsValues()
}
