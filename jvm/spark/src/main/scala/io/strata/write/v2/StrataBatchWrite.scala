package io.strata.write.v2

import io.strata.table.PhysicalSchema

import io.strata.log.{AddFile, CheckConstraints, StrataException, TableLog}
import io.strata.write.{InputReads, JobFiles, ParquetFiles, PartitionSplitter, RowChecks, TableWrite, WriteMode}
import io.strata.write.v1.DirectCommitProtocol
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.write._
import org.apache.spark.sql.strata.SparkInternals

/**
 * The job and the log commit of one write. `sweepEarlierAttempts`: an earlier attempt of this write (a streaming
 * micro-batch, its files named by [[JobFiles.forAppVersion]]) may have died; after the commit its files are deleted.
 */
final class StrataBatchWrite(log: TableLog, tableWrite: TableWrite, fanout: Boolean,
                             maxOpenFiles: Int, targetFileSize: Long, onCommit: () => Unit,
                             commitParameters: () => Map[String, String], jobFiles: JobFiles,
                             sweepEarlierAttempts: Boolean = false) extends BatchWrite {

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
    val conf = tableWrite.conf
    // Column mapping: files, partition values and statistics by physical name (rows are positional).
    val splitter = new PartitionSplitter(PhysicalSchema.forWrite(schema.schema),
      PhysicalSchema.physicalColumns(schema.schema, schema.partitionColumns))
    val files = ParquetFiles.prepare(spark, Map("compression" -> conf.compression), splitter.dataSchema)
    // An overwrite by condition replaces what the condition matches: a written row outside it is refused, as on V1.
    val replaceWhere = tableWrite.mode match { case WriteMode.ReplaceWhere(p) => Some(p); case _ => None }
    val checks = RowChecks.compile(spark, schema.schema, tableWrite.txn.metadata.toSeq.flatMap(CheckConstraints.of),
      replaceWhere)
    new StrataDataWriterFactory(jobFiles, files, splitter, tableWrite.numIndexedColumns,
      conf.maxRecordsPerFile.getOrElse(0L), targetFileSize, fanoutFiles, checks)
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
