package io.strata.write.v2

import org.apache.spark.sql.strata.SparkInternals
import io.strata.write.{InputReads, ParquetFiles, PartitionSplitter, RowAlignment, RowChecks}
import io.strata.config.{DistributionMode, WriteConf, WriteOptions}
import io.strata.log.{AddFile, StrataException, TableLog}
import io.strata.log.CheckConstraints
import io.strata.write.{JobFiles, ReplaceWhereFiles, StreamingBatch, TableWrite, WriteMode}
import io.strata.write.streaming.{SinkProgress, StreamingWrites}
import org.apache.spark.sql.connector.write.streaming.StreamingWrite
import io.strata.write.v1.DirectCommitProtocol
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.distributions.{Distribution, Distributions}
import org.apache.spark.sql.connector.expressions.{Expression, Expressions, NullOrdering, SortDirection, SortOrder}
import org.apache.spark.sql.connector.metric.{CustomMetric, CustomSumMetric, CustomTaskMetric}
import org.apache.spark.sql.connector.write._

import scala.jdk.CollectionConverters._

/**
 * A V2 write. By default (distribution mode `hash`) it asks Spark to cluster and sort rows by partition columns, so
 * each task keeps one file open at a time and a partitioned write makes about one file per partition; `range`
 * orders instead of hashing; `none` asks for nothing and the tasks fan out into one open file per partition.
 * All task files are committed in one log commit.
 */
final class StrataWrite(log: TableLog, info: LogicalWriteInfo, tableWrite: TableWrite, onCommit: () => Unit,
                        commitParameters: () => Map[String, String] = () => Map.empty,
                        streaming: Option[(StreamingBatch, SinkProgress)] = None)
    extends Write with RequiresDistributionAndOrdering {
  private val mode = tableWrite.mode
  private val options = tableWrite.options
  private val partitionColumns = tableWrite.schema.partitionColumns
  mode match {
    case WriteMode.ReplaceWhere(p) => ReplaceWhereFiles.choose(tableWrite, p)
    case _ =>
  }
  private val conf = WriteConf(info.options().asCaseSensitiveMap().asScala.toMap,
    k => SparkSession.active.conf.getOption(k), tableWrite.txn.metadata.map(_.configuration).getOrElse(Map.empty))
  val distributionMode: DistributionMode = conf.distributionMode(partitionColumns.nonEmpty)
  private val maxOpenFiles = conf.maxOpenFiles
  private val targetFileSize = conf.targetFileSizeBytes
  private def partitionSort = partitionColumns.map(c =>
    Expressions.sort(Expressions.column(c), SortDirection.ASCENDING, NullOrdering.NULLS_FIRST)).toArray

  override def description(): String = s"Strata(${log.tablePath}, ${mode.name})"

  override def requiredDistribution(): Distribution = distributionMode match {
    case _ if partitionColumns.isEmpty => Distributions.unspecified()
    case DistributionMode.None => Distributions.unspecified()
    case DistributionMode.Hash => Distributions.clustered(partitionColumns.map(c => Expressions.column(c): Expression).toArray)
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

  private lazy val batch = new StrataBatchWrite(log, tableWrite, options,
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

/**
 * The job and the log commit of one write. `sweepEarlierAttempts`: an earlier attempt of this write (a streaming
 * micro-batch, its files named by [[JobFiles.forAppVersion]]) may have died; after the commit its files are deleted.
 */
final class StrataBatchWrite(log: TableLog, tableWrite: TableWrite, options: WriteOptions, fanout: Boolean,
                             maxOpenFiles: Int, targetFileSize: Long, onCommit: () => Unit,
                             commitParameters: () => Map[String, String], jobFiles: JobFiles, sweepEarlierAttempts: Boolean = false) extends BatchWrite {

  override def createBatchWriterFactory(info: PhysicalWriteInfo): DataWriterFactory = {
    // An idempotent write whose application version is already in the table: the rows go nowhere.
    if (tableWrite.alreadyCommitted) return new DiscardingWriterFactory
    val factory = StrataBatchWrite.dataWriterFactory(tableWrite, jobFiles, if (fanout) maxOpenFiles else 0,
      targetFileSize)
    // Spark runs the write job on this thread next: tag it, so that an abort can wait for its straggling tasks.
    jobFiles.tagJobs()
    factory
  }

  @volatile private var commitAttempted = false
  /** After a successful commit: its result and how long the log commit took (ms). */
  @volatile private[v2] var committed: Option[(io.strata.log.CommitResult, Long)] = None
  @volatile private[v2] var written: Seq[AddFile] = Nil

  @volatile private var rowCounts: Map[String, Long] = Map.empty
  /** After [[commit]]: its outcome (`alreadyCommitted` when the application version was already in the table). */
  @volatile private[v2] var result: Option[io.strata.log.CommitResult] = None

  /** MERGE passes Spark's row counts (its MergeRows node's metrics); they go into commitInfo. */
  override def commit(messages: Array[WriterCommitMessage], summary: WriteSummary): Unit = {
    rowCounts = summary match {
      case m: MergeSummary => Map(
        "numTargetRowsCopied" -> m.numTargetRowsCopied, "numTargetRowsInserted" -> m.numTargetRowsInserted,
        "numTargetRowsUpdated" -> m.numTargetRowsUpdated, "numTargetRowsDeleted" -> m.numTargetRowsDeleted,
        "numTargetRowsMatchedUpdated" -> m.numTargetRowsMatchedUpdated,
        "numTargetRowsMatchedDeleted" -> m.numTargetRowsMatchedDeleted,
        "numTargetRowsNotMatchedBySourceUpdated" -> m.numTargetRowsNotMatchedBySourceUpdated,
        "numTargetRowsNotMatchedBySourceDeleted" -> m.numTargetRowsNotMatchedBySourceDeleted)
      case _ => Map.empty
    }
    commit(messages)
  }

  override def commit(messages: Array[WriterCommitMessage]): Unit = {
    jobFiles.untagJobs()
    commitAttempted = true
    // UPDATE: Spark gives no summary, but each changed row reaches the writer without its source file.
    if (tableWrite.mode == WriteMode.RewriteRows("UPDATE")) rowCounts += "numUpdatedRows" ->
      messages.toSeq.collect { case m: StrataTaskCommit => m.rowsWithoutFile }.sum
    val files = addedFiles(messages)
    written = files
    val start = System.nanoTime()
    try {
      tableWrite.readInput(InputReads.currentPlan().toSeq.flatMap(plan =>
        InputReads.of(plan, log.tablePath, tableWrite.schema.schema, tableWrite.schema.partitionColumns,
          SparkInternals.sessionZone(SparkSession.active))))
      val result = tableWrite.commit(files, rowCounts, commitParameters())
      this.result = Some(result)
      if (result.alreadyCommitted) DirectCommitProtocol.deleteFiles(log.tablePath.toString, files, log.conf)
      else {
        committed = Some((result, (System.nanoTime() - start) / 1000000L))
        // A rerun task means an attempt may have died without its abort: delete what it left behind.
        if (sweepEarlierAttempts) jobFiles.sweepEarlierAttempts(log.conf, files)
        else if (messages.exists { case m: StrataTaskCommit => m.rerun; case _ => false }) {
          jobFiles.sweepAfterCommit(log.conf, files)
        }
      }
      onCommit()
    } catch {
      case e: StrataException => // certainly not committed: the files will never be referenced
        DirectCommitProtocol.deleteFiles(log.tablePath.toString, files, log.conf)
        throw e
    }
  }

  /**
   * Spark calls this when the job failed, and also when [[commit]] threw. A failed job never committed: every file
   * the tasks reported, and those of tasks that finished after the failure, are garbage. After a commit attempt the
   * files were already deleted if the commit certainly did not happen; otherwise (its outcome unknown, e.g. an I/O
   * error while creating the version file) they must stay, since the version may exist and reference them.
   */
  override def abort(messages: Array[WriterCommitMessage]): Unit = {
    jobFiles.untagJobs()
    if (!commitAttempted) {
      DirectCommitProtocol.deleteFiles(log.tablePath.toString, addedFiles(messages), log.conf)
      jobFiles.sweepAfterAbort(log.conf)
    }
  }

  private def addedFiles(messages: Array[WriterCommitMessage]): Seq[AddFile] =
    messages.toSeq.collect { case m: StrataTaskCommit => m.files }.flatten
}

object StrataBatchWrite {
  /** The task writers of `tableWrite`'s rows; `fanoutFiles` > 0: unclustered input, at most that many open files. */
  def dataWriterFactory(tableWrite: TableWrite, jobFiles: JobFiles, fanoutFiles: Int,
                        targetFileSize: Long): StrataDataWriterFactory = {
    val spark = SparkSession.active
    val schema = tableWrite.schema
    val options = tableWrite.options
    val splitter = new PartitionSplitter(schema.schema, schema.partitionColumns)
    val files = ParquetFiles.prepare(spark, Map("compression" -> options.compression), splitter.dataSchema)
    // An overwrite by condition replaces what the condition matches: a written row outside it is refused, as on V1.
    val replaceWhere = tableWrite.mode match { case WriteMode.ReplaceWhere(p) => Some(p); case _ => None }
    val checks = RowChecks.compile(spark, schema.schema, tableWrite.txn.metadata.toSeq.flatMap(CheckConstraints.of),
      replaceWhere)
    new StrataDataWriterFactory(jobFiles, files, splitter, tableWrite.numIndexedColumns,
      options.maxRecordsPerFile.getOrElse(0L), targetFileSize, fanoutFiles, checks)
  }
}

/** Writers of a write that has nothing to do (already committed): they consume the rows and write no file. */
final class DiscardingWriterFactory extends DataWriterFactory {
  override def createWriter(partitionId: Int, taskId: Long): DataWriter[org.apache.spark.sql.catalyst.InternalRow] =
    new DataWriter[org.apache.spark.sql.catalyst.InternalRow] {
      override def write(row: org.apache.spark.sql.catalyst.InternalRow): Unit = ()
      override def commit(): WriterCommitMessage = StrataTaskCommit(Nil)
      override def abort(): Unit = ()
      override def close(): Unit = ()
    }
}

/**
 * What one task wrote, whether it was a rerun ([[io.strata.write.JobFiles.isRerun]]), and (row-level operations) how
 * many of its rows came without a source file (rows an UPDATE changed).
 */
final case class StrataTaskCommit(files: Seq[AddFile], rerun: Boolean = false, rowsWithoutFile: Long = 0L)
  extends WriterCommitMessage

/** A summed metric of the write node; Spark instantiates each by class name, so each needs a no-arg class. */
abstract class StrataSumMetric(metricName: String, metricDescription: String) extends CustomSumMetric {
  override def name(): String = metricName
  override def description(): String = metricDescription
}
class FilesWrittenMetric extends StrataSumMetric("strataFilesWritten", "number of data files written")
class RowsWrittenMetric extends StrataSumMetric("strataRowsWritten", "number of rows written")
class BytesWrittenMetric extends StrataSumMetric("strataBytesWritten", "bytes of data files written")
class CommitDurationMetric extends StrataSumMetric("strataCommitDurationMs", "log commit duration (ms)")
class CommitAttemptsMetric extends StrataSumMetric("strataCommitAttempts", "log commit attempts")
class CommittedVersionMetric extends StrataSumMetric("strataCommittedVersion", "table version committed")
// DELETE / UPDATE (delta-spark's commitInfo names)
class DeletedRowsMetric extends StrataSumMetric("numDeletedRows", "number of rows deleted")
class UpdatedRowsMetric extends StrataSumMetric("numUpdatedRows", "number of rows updated")
class CopiedRowsMetric extends StrataSumMetric("numCopiedRows", "number of rows copied unchanged")
class AddedFilesMetric extends StrataSumMetric("numAddedFiles", "number of files added")
class RemovedFilesMetric extends StrataSumMetric("numRemovedFiles", "number of files removed")
// MERGE
class TargetRowsInsertedMetric extends StrataSumMetric("numTargetRowsInserted", "number of target rows inserted")
class TargetRowsUpdatedMetric extends StrataSumMetric("numTargetRowsUpdated", "number of target rows updated")
class TargetRowsDeletedMetric extends StrataSumMetric("numTargetRowsDeleted", "number of target rows deleted")
class TargetRowsCopiedMetric extends StrataSumMetric("numTargetRowsCopied", "number of target rows copied unchanged")
class TargetFilesAddedMetric extends StrataSumMetric("numTargetFilesAdded", "number of target files added")
class TargetFilesRemovedMetric extends StrataSumMetric("numTargetFilesRemoved", "number of target files removed")
