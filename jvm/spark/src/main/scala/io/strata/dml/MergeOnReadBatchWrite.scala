package io.strata.dml

import io.strata.log.{AddFile, DeletionVectors, FilePredicate, Operation, RowDeleteRebase, Snapshot, StrataException,
  TableOperation}
import io.strata.write.{JobFiles, TableWrite}
import io.strata.write.v1.DirectCommitProtocol
import io.strata.write.v2.StrataBatchWrite
import org.apache.spark.sql.connector.write._

final class MergeOnReadBatchWrite(tableWrite: TableWrite, snapshot: Snapshot, command: String,
                                  condition: () => FilePredicate, maxOpenFiles: Int, targetFileSize: Long,
                                  maxInlineBytes: Int) extends DeltaBatchWrite {
  private val log = tableWrite.log
  private val jobFiles = new JobFiles(log.tablePath.toString)
  @volatile private[dml] var committed: Option[(Long, Long)] = None
  @volatile private[dml] var written: Long = 0L
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
      val result = tableWrite.commitOperation(op, Operation(command, params, metrics, tableWrite.conf.userMetadata))
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
