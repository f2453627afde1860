package io.strata.write.v2

import io.strata.dml.MergeClauses
import io.strata.config.WriteConf
import io.strata.log.{AddFile, DeletedRows, DeletionVectors, FilePredicate, Operation, RowDeleteRebase, Snapshot, StrataException, TableOperation}
import io.strata.write.{DeletionVectorChanges, JobFiles, TableWrite}
import io.strata.write.v1.DirectCommitProtocol
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.metric.{CustomMetric, CustomTaskMetric}
import org.apache.spark.sql.connector.write._

import scala.collection.mutable
import scala.jdk.CollectionConverters._

/**
 * The write of a merge-on-read DELETE, UPDATE or MERGE (Spark's WriteDelta). Tasks get a `delete` for each row the
 * operation removes (its row id: data file and row index) and an `insert` / `reinsert` for each new or changed row
 * (an update is a delete and a reinsert). New rows go to new files through [[StrataDataWriter]] (fanout: the input
 * is not clustered); deleted rows travel to the driver as bitmaps per file, where [[DeletionVectorChanges]] merges
 * them with the files' vectors and the commit replaces each file's entry ([[TableOperation.DeleteRows]]).
 * `condition`: the rows the operation's scan selected, as its read set.
 */
final class MergeOnReadWrite(tableWrite: TableWrite, snapshot: Snapshot, command: String, condition: () => FilePredicate,
                             info: LogicalWriteInfo) extends DeltaWrite {
  private val conf = WriteConf(info.options().asCaseSensitiveMap().asScala.toMap,
    k => SparkSession.active.conf.getOption(k), snapshot.metadata.configuration)

  override def description(): String = s"Strata merge-on-read $command (${snapshot.tablePath})"

  private lazy val batch = new MergeOnReadBatchWrite(tableWrite, snapshot, command, condition, conf.maxOpenFiles,
    conf.targetFileSizeBytes, conf.maxInlineVectorBytes)

  override def toBatch: DeltaBatchWrite = batch

  override def supportedCustomMetrics(): Array[CustomMetric] = Array[CustomMetric](new FilesWrittenMetric,
    new RowsWrittenMetric, new CommitDurationMetric, new CommittedVersionMetric)

  override def reportDriverMetrics(): Array[CustomTaskMetric] = batch.committed match {
    case Some((version, millis)) => Array(StrataWrite.metric("strataCommitDurationMs", millis),
      StrataWrite.metric("strataCommittedVersion", version), StrataWrite.metric("strataFilesWritten", batch.written))
    case None => Array.empty
  }
}

final class MergeOnReadBatchWrite(tableWrite: TableWrite, snapshot: Snapshot, command: String,
                                  condition: () => FilePredicate, maxOpenFiles: Int, targetFileSize: Long,
                                  maxInlineBytes: Int) extends DeltaBatchWrite {
  private val log = tableWrite.log
  private val jobFiles = new JobFiles(log.tablePath.toString)
  @volatile private[v2] var committed: Option[(Long, Long)] = None
  @volatile private[v2] var written: Long = 0L
  @volatile private var commitAttempted = false

  override def createBatchWriterFactory(info: PhysicalWriteInfo): DeltaWriterFactory = {
    val rows = StrataBatchWrite.dataWriterFactory(tableWrite, jobFiles, fanoutFiles = math.max(1, maxOpenFiles),
      targetFileSize)
    jobFiles.tagJobs()
    new MergeOnReadWriterFactory(rows)
  }

  override def commit(messages: Array[WriterCommitMessage], summary: WriteSummary): Unit = {
    val counts = summary match {
      case m: MergeSummary => Map(
        "numTargetRowsInserted" -> m.numTargetRowsInserted, "numTargetRowsUpdated" -> m.numTargetRowsUpdated,
        "numTargetRowsDeleted" -> m.numTargetRowsDeleted, "numTargetRowsCopied" -> 0L,
        "numTargetRowsMatchedUpdated" -> m.numTargetRowsMatchedUpdated,
        "numTargetRowsMatchedDeleted" -> m.numTargetRowsMatchedDeleted,
        "numTargetRowsNotMatchedBySourceUpdated" -> m.numTargetRowsNotMatchedBySourceUpdated,
        "numTargetRowsNotMatchedBySourceDeleted" -> m.numTargetRowsNotMatchedBySourceDeleted)
      case _ => Map.empty[String, Long]
    }
    commit(messages, counts)
  }

  override def commit(messages: Array[WriterCommitMessage]): Unit = commit(messages, Map.empty[String, Long])

  private def commit(messages: Array[WriterCommitMessage], counts: Map[String, Long]): Unit = {
    jobFiles.untagJobs()
    commitAttempted = true
    val tasks = messages.toSeq.collect { case m: MergeOnReadTaskCommit => m }
    val added = tasks.flatMap(_.rows.files)
    written = added.size.toLong
    val start = System.nanoTime()
    var vectors: Option[org.apache.hadoop.fs.Path] = None
    var rebase: Option[RowDeleteRebase] = None
    try {
      val deleted = tasks.flatMap(_.deletes).groupMapReduce(_._1)(e => DeletionVectors.decode(e._2))(_ union _)
      val changes = DeletionVectorChanges(snapshot, deleted, log.conf, maxInlineBytes)
      vectors = changes.written
      val reinserted = tasks.map(_.reinserted).sum
      // delta-spark's names: MERGE's carry "Target".
      val removedBytes = changes.changed.collect { case (old, None) => old.size }.sum
      val metrics = (command match {
        case "MERGE" => counts ++ Map("numTargetFilesAdded" -> added.size.toLong,
          "numTargetFilesRemoved" -> changes.filesRemoved, "numTargetBytesAdded" -> added.map(_.size).sum,
          "numTargetBytesRemoved" -> removedBytes, "numOutputRows" -> added.map(TableWrite.numRecords).sum,
          "numTargetDeletionVectorsAdded" -> changes.vectorsAdded,
          "numTargetDeletionVectorsRemoved" -> changes.vectorsRemoved,
          "numTargetDeletionVectorsUpdated" -> changes.vectorsUpdated)
        case other => Map("numDeletionVectorsAdded" -> changes.vectorsAdded,
          "numDeletionVectorsRemoved" -> changes.vectorsRemoved, "numDeletionVectorsUpdated" -> changes.vectorsUpdated,
          "numAddedFiles" -> added.size.toLong, "numRemovedFiles" -> changes.filesRemoved,
          "numAddedBytes" -> added.map(_.size).sum, "numRemovedBytes" -> removedBytes, "numCopiedRows" -> 0L) ++
          (if (other == "DELETE") Map("numDeletedRows" -> changes.deletedRows) else Map("numUpdatedRows" -> reinserted))
      })
      val read = condition()
      val params = Map("predicate" -> io.strata.log.ActionCodec.mapper.writeValueAsString(
        Array(read.toString))) ++ (if (command == "MERGE") MergeClauses.current() else Map.empty)
      // DELETE and UPDATE read exactly the rows they delete: a concurrent vector on other rows of a file is absorbed.
      rebase = if (command == "MERGE") None else Some(new RowDeleteRebase(log.tablePath, log.conf,
        changes.changed.map { case (old, _) => snapshot.absolutePath(old.path).toString -> old }.toMap,
        changes.newRows, f => DeletionVectorChanges.physicalRows(f, log.tablePath, log.conf)))
      val op = TableOperation.DeleteRows(read, changes.changed, added, rebase)
      val result = tableWrite.commitOperation(op, Operation(command, params, metrics, tableWrite.options.userMetadata))
      if (result.alreadyCommitted) cleanUp(added, vectors.toSeq ++ rebase.toSeq.flatMap(_.writtenFiles))
      else {
        committed = Some((result.version, (System.nanoTime() - start) / 1000000L))
        // Vector files superseded when a lost race re-staged the commit: no version references them.
        cleanUp(Nil, rebase.toSeq.flatMap(_.unreferenced(vectors.toSeq)))
      }
      if (tasks.exists(_.rows.rerun)) jobFiles.sweepAfterCommit(log.conf, added)
    } catch {
      case e: StrataException => cleanUp(added, vectors.toSeq ++ rebase.toSeq.flatMap(_.writtenFiles)); throw e
    }
  }

  private def cleanUp(added: Seq[AddFile], vectors: Seq[org.apache.hadoop.fs.Path]): Unit = {
    DirectCommitProtocol.deleteFiles(log.tablePath.toString, added, log.conf)
    vectors.foreach(p => scala.util.Try(p.getFileSystem(log.conf).delete(p, false)))
  }

  override def abort(messages: Array[WriterCommitMessage]): Unit = {
    jobFiles.untagJobs()
    if (!commitAttempted) {
      DirectCommitProtocol.deleteFiles(log.tablePath.toString,
        messages.toSeq.collect { case m: MergeOnReadTaskCommit => m.rows.files }.flatten, log.conf)
      jobFiles.sweepAfterAbort(log.conf)
    }
  }
}

/** One task's output: the files of its new rows, and per data file the rows it deleted (an encoded vector). */
final case class MergeOnReadTaskCommit(rows: StrataTaskCommit, deletes: Seq[(String, Array[Byte])], reinserted: Long)
  extends WriterCommitMessage

final class MergeOnReadWriterFactory(rows: StrataDataWriterFactory) extends DeltaWriterFactory {
  override def createWriter(partitionId: Int, taskId: Long): DeltaWriter[InternalRow] =
    new MergeOnReadWriter(rows.createWriter(partitionId, taskId).asInstanceOf[StrataDataWriter])
}

/** `id`: (data file path, row index in the file), the operation's row id. */
final class MergeOnReadWriter(rows: StrataDataWriter) extends DeltaWriter[InternalRow] {
  private val deletes = mutable.HashMap.empty[String, mutable.ArrayBuilder.ofLong]
  private var reinserted = 0L

  override def delete(metadata: InternalRow, id: InternalRow): Unit =
    deletes.getOrElseUpdate(id.getUTF8String(0).toString, new mutable.ArrayBuilder.ofLong) += id.getLong(1)

  override def update(metadata: InternalRow, id: InternalRow, row: InternalRow): Unit =
    throw new IllegalStateException("Merge-on-read writes updates as a delete and a reinsert")

  override def reinsert(metadata: InternalRow, row: InternalRow): Unit = { reinserted += 1; rows.write(row) }
  override def insert(row: InternalRow): Unit = rows.write(row)

  override def commit(): WriterCommitMessage = {
    val files = rows.commit().asInstanceOf[StrataTaskCommit]
    val vectors = deletes.toSeq.map { case (file, positions) => file -> DeletedRows.of(positions.result()).encode() }
    MergeOnReadTaskCommit(files, vectors, reinserted)
  }

  override def abort(): Unit = rows.abort()
  override def close(): Unit = rows.close()
  override def currentMetricsValues(): Array[CustomTaskMetric] = rows.currentMetricsValues()
}
