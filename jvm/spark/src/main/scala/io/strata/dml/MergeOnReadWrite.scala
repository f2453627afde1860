package io.strata.dml

import io.strata.log.{DeletedRows, FilePredicate, Snapshot}
import io.strata.write.TableWrite
import io.strata.write.v2.{CommitDurationMetric, CommittedVersionMetric, FilesWrittenMetric, RowsWrittenMetric,
  StrataDataWriter, StrataDataWriterFactory, StrataTaskCommit, StrataWrite}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.metric.{CustomMetric, CustomTaskMetric}
import org.apache.spark.sql.connector.write._

import scala.collection.mutable

/**
 * The write of a merge-on-read DELETE, UPDATE or MERGE (Spark's WriteDelta). Tasks get a `delete` for each row the
 * operation removes (its row id: data file and row index) and an `insert` / `reinsert` for each new or changed row
 * (an update is a delete and a reinsert). New rows go to new files through [[StrataDataWriter]] (fanout: the input
 * is not clustered); deleted rows travel to the driver as bitmaps per file, where [[DeletionVectorChanges]] merges
 * them with the files' vectors and the commit replaces each file's entry ([[TableOperation.DeleteRows]]).
 * `condition`: the rows the operation's scan selected, as its read set.
 */
final class MergeOnReadWrite(tableWrite: TableWrite, snapshot: Snapshot, command: String, condition: () => FilePredicate)
    extends DeltaWrite {
  private val conf = tableWrite.conf

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
