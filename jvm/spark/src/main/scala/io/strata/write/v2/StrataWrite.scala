package io.strata.write.v2

import io.strata.config.DistributionMode
import io.strata.log.TableLog
import io.strata.table.ColumnNames
import io.strata.write.{JobFiles, ReplaceWhereFiles, RowAlignment, StreamingBatch, TableWrite, WriteMode}
import io.strata.write.streaming.{SinkProgress, StreamingWrites}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.distributions.{Distribution, Distributions}
import org.apache.spark.sql.connector.expressions.{Expression, Expressions, NullOrdering, SortDirection, SortOrder}
import org.apache.spark.sql.connector.metric.{CustomMetric, CustomTaskMetric}
import org.apache.spark.sql.connector.write.streaming.StreamingWrite
import org.apache.spark.sql.connector.write._
import org.apache.spark.sql.strata.SparkInternals


/**
 * A V2 write. By default (distribution mode `hash`) it asks Spark to cluster and sort rows by partition columns, so
 * each task keeps one file open at a time and a partitioned write makes about one file per partition; `range`
 * orders instead of hashing; `none` asks for nothing and the tasks fan out into one open file per partition.
 * All task files are committed in one log commit. `commitParameters`: operation parameters the commit records too,
 * computed when it runs (MERGE's clauses, which the row-level operation reads from the running statement).
 */
final class StrataWrite(log: TableLog, info: LogicalWriteInfo, tableWrite: TableWrite, onCommit: () => Unit,
                        commitParameters: () => Map[String, String] = () => Map.empty,
                        streaming: Option[(StreamingBatch, SinkProgress)] = None)
    extends Write with RequiresDistributionAndOrdering {
  private val mode = tableWrite.mode
  private val partitionColumns = tableWrite.schema.partitionColumns
  mode match {
    case WriteMode.ReplaceWhere(p) => ReplaceWhereFiles.choose(tableWrite, p)
    case _ =>
  }
  private val conf = tableWrite.conf
  val distributionMode: DistributionMode = conf.distributionMode(partitionColumns.nonEmpty)
  private val maxOpenFiles = conf.maxOpenFiles
  private val targetFileSize = conf.targetFileSizeBytes
  private def partitionSort = partitionColumns.map(c =>
    Expressions.sort(ColumnNames.reference(c), SortDirection.ASCENDING, NullOrdering.NULLS_FIRST)).toArray

  override def description(): String = s"Strata(${log.tablePath}, ${mode.name})"

  override def requiredDistribution(): Distribution = distributionMode match {
    case _ if partitionColumns.isEmpty => Distributions.unspecified()
    case DistributionMode.None => Distributions.unspecified()
    case DistributionMode.Hash =>
      Distributions.clustered(partitionColumns.map(c => ColumnNames.reference(c): Expression).toArray)
    case DistributionMode.Range => Distributions.ordered(partitionSort)
  }

  override def requiredOrdering(): Array[SortOrder] =
    if (distributionMode == DistributionMode.None) Array.empty else partitionSort

  // Let AQE split skewed partitions: one partition's rows may then land in a few files.
  override def distributionStrictlyRequired(): Boolean = false

  // Spark refuses an advisory size without a distribution.
  override def advisoryPartitionSizeInBytes(): Long =
    if (partitionColumns.isEmpty || distributionMode == DistributionMode.None) 0L else targetFileSize

  override def supportedCustomMetrics(): Array[CustomMetric] = Array[CustomMetric](new FilesWrittenMetric,
    new RowsWrittenMetric, new BytesWrittenMetric, new CommitDurationMetric, new CommitAttemptsMetric,
    new CommittedVersionMetric) ++ rowLevelMetrics

  /** DELETE / UPDATE / MERGE: their commitInfo counts (delta-spark's names), shown on the write node too. */
  private val rowLevelMetrics: Array[CustomMetric] = mode match {
    case WriteMode.RewriteRows("MERGE") => Array(new TargetRowsInsertedMetric, new TargetRowsUpdatedMetric,
      new TargetRowsDeletedMetric, new TargetRowsCopiedMetric, new TargetFilesAddedMetric, new TargetFilesRemovedMetric)
    case WriteMode.RewriteRows("DELETE") => Array(new DeletedRowsMetric, new CopiedRowsMetric, new AddedFilesMetric,
      new RemovedFilesMetric)
    case WriteMode.RewriteRows(_) => Array(new UpdatedRowsMetric, new CopiedRowsMetric, new AddedFilesMetric,
      new RemovedFilesMetric)
    case _ => Array.empty
  }

  private lazy val batch = new StrataBatchWrite(log, tableWrite,
    fanout = distributionMode == DistributionMode.None, maxOpenFiles, targetFileSize, onCommit, commitParameters,
    streaming.fold(new JobFiles(log.tablePath.toString))(_._1.jobFiles(log.tablePath.toString)),
    sweepEarlierAttempts = streaming.exists(_._1.sweepEarlierAttempts))

  override def toBatch: BatchWrite = batch

  /** One micro-batch of a streaming query ([[StrataStreamingWriteBuilder]]): the batch write behind an epoch. */
  override def toStreaming: StreamingWrite = streaming match {
    case Some((b, progress)) => new StrataStreamingWrite(batch, b.batchId, progress,
      RowAlignment.compile(info.schema(), tableWrite.feeds, log.tablePath.toString,
        SparkInternals.sessionTimeZone(SparkSession.active)))
    // Micro-batches come through StrataStreamingWriteBuilder; a streaming write built otherwise is continuous.
    case None => throw StreamingWrites.continuousRefused(log.tablePath.toString)
  }

  /** Driver-side metrics of the log commit, shown on the write node next to the tasks' files, rows and bytes. */
  override def reportDriverMetrics(): Array[CustomTaskMetric] = batch.committed match {
    case Some((result, millis)) => Array(
      StrataWrite.metric("strataFilesWritten", batch.written.size.toLong),
      StrataWrite.metric("strataBytesWritten", batch.written.map(_.size).sum),
      StrataWrite.metric("strataCommitDurationMs", millis),
      StrataWrite.metric("strataCommitAttempts", result.attempts.toLong),
      StrataWrite.metric("strataCommittedVersion", result.version)) ++ rowLevelMetrics.flatMap { m =>
        // Only the counts the commit recorded (a count that cannot be known is left out, not shown as 0).
        Option(result.commitInfo.json.get("operationMetrics")).flatMap(o => Option(o.get(m.name())))
          .map(v => StrataWrite.metric(m.name(), v.asText.toLong))
      }
    case None => Array.empty
  }
}

object StrataWrite {
  def metric(n: String, v: Long): CustomTaskMetric = new CustomTaskMetric {
    override def name(): String = n
    override def value(): Long = v
  }
}
