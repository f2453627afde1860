package io.strata.write.v2

import io.strata.log.AddFile
import io.strata.write.{DataFiles, JobFiles, ParquetFiles, PartitionSplitter, RowChecks}
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.metric.CustomTaskMetric
import org.apache.spark.sql.connector.write.{DataWriter, DataWriterFactory, WriterCommitMessage}

import scala.collection.mutable
import scala.util.control.NonFatal

/** `maxOpenFiles` > 0 selects the fanout writer (unclustered input); 0 the clustered writer. */
final class StrataDataWriterFactory(jobFiles: JobFiles, files: ParquetFiles, splitter: PartitionSplitter,
                                    numIndexedCols: Int, maxRecordsPerFile: Long, targetFileSize: Long,
                                    maxOpenFiles: Int, checks: RowChecks)
    extends DataWriterFactory {
  override def createWriter(partitionId: Int, taskId: Long): DataWriter[InternalRow] =
    new StrataDataWriter(jobFiles, files, splitter, numIndexedCols, maxRecordsPerFile, targetFileSize, maxOpenFiles,
      checks, partitionId, taskId)
}

/**
 * Writes one task's rows into data files, rolling to a new file every `maxRecordsPerFile` rows and when a file
 * reaches `targetFileSize` bytes. Parquet buffers a row group in memory, so the size is estimated: the in-memory
 * size of the rows written times the on-disk/in-memory ratio this task learned from its first larger files (1 until
 * then, so early files err small).
 *  - clustered (default): rows arrive grouped by partition (the write requires that ordering), so one file is open
 *    at a time; a partition seen again after another one means the input was not clustered, which is an error.
 *  - fanout (distribution mode `none`): one open file per partition, at most `maxOpenFiles`; when more are needed the
 *    least recently used is closed, and its partition gets a new file if rows for it come again.
 * Every row is checked against the table's CHECK constraints first. Commit turns the files into add actions (footer
 * statistics); abort deletes them.
 */
final class StrataDataWriter(jobFiles: JobFiles, files: ParquetFiles, splitter: PartitionSplitter, numIndexedCols: Int,
                             maxRecordsPerFile: Long, targetFileSize: Long, maxOpenFiles: Int, checks: RowChecks,
                             partitionId: Int, taskId: Long)
    extends DataWriter[InternalRow] {
  private final class OpenFile(val key: InternalRow, val dir: String, val relative: String,
                               val values: Map[String, Option[String]], val writer: ParquetFiles.FileWriter) {
    var rows = 0L
    var rowBytes = 0L
  }

  private val tableRoot = jobFiles.tableRoot
  private val fanout = maxOpenFiles > 0
  private val task = files.forTask(partitionId, taskId)
  private val finished = mutable.ArrayBuffer.empty[(String, Map[String, Option[String]])]
  private val closedPartitions = mutable.HashSet.empty[InternalRow]
  // Access-ordered, so the head is the least recently written file.
  private val open = new java.util.LinkedHashMap[InternalRow, OpenFile](16, 0.75f, true)
  private val NoKey = InternalRow.empty
  private var fileCounter = 0
  private var rows = 0L
  private var bytesPerRowByte = 1.0 // on-disk bytes per in-memory row byte, learned from closed files
  private var learnedFrom = 0

  /** Rows written without a source file (DELETE / UPDATE / MERGE: rows that are new or changed, not copied). */
  private var rowsWithoutFile = 0L

  /**
   * A row of a copy-on-write operation with its metadata ([[io.strata.read.FileColumn]]): the file it was read from,
   * or null for a row an UPDATE changed (the column is not preserved on update).
   */
  override def write(metadata: InternalRow, row: InternalRow): Unit = {
    if (metadata.numFields > 0 && metadata.isNullAt(0)) rowsWithoutFile += 1
    write(row)
  }

  override def write(row: InternalRow): Unit = {
    checks.check(row)
    val key = if (splitter.isPartitioned) splitter.key(row) else NoKey // a reused buffer: copied only when kept
    var file = open.get(key)
    if (file == null) file = start(key.copy(), row)
    else if ((maxRecordsPerFile > 0 && file.rows >= maxRecordsPerFile) ||
      (targetFileSize > 0 && file.rowBytes * bytesPerRowByte >= targetFileSize)) {
      close(file.key)
      file = openFile(file.key, file.dir, file.values)
    }
    val data = splitter.data(row)
    file.writer.write(data)
    file.rows += 1
    file.rowBytes += splitter.sizeInBytes(data)
    rows += 1
  }

  private def start(key: InternalRow, row: InternalRow): OpenFile = {
    if (!fanout) {
      open.keySet.toArray.foreach(k => close(k.asInstanceOf[InternalRow]))
      if (closedPartitions.contains(key)) throw new IllegalStateException("The rows of one partition arrived in " +
        "more than one group: the clustered writer needs its input clustered by the partition columns " +
        "(use distribution mode 'hash' or 'range', or 'none' for the fanout writer).")
    } else if (open.size >= maxOpenFiles) close(open.keySet.iterator.next())
    val (dir, values) = if (splitter.isPartitioned) splitter.partition(row) else ("", Map.empty[String, Option[String]])
    openFile(key, dir, values)
  }

  /** Opens a new file for partition `key` in its directory `dir` ("" when unpartitioned). */
  private def openFile(key: InternalRow, dir: String, values: Map[String, Option[String]]): OpenFile = {
    val name = jobFiles.fileName(partitionId, fileCounter, task.extension)
    fileCounter += 1
    val relative = if (dir.isEmpty) name else s"$dir/$name"
    val file = new OpenFile(key, dir, relative, values, task.open(new Path(tableRoot, relative).toString))
    open.put(key, file)
    file
  }

  private def close(key: InternalRow): Unit = {
    val file = open.remove(key)
    if (file != null) {
      file.writer.close()
      finished += ((file.relative, file.values))
      closedPartitions += file.key
      if (targetFileSize > 0 && learnedFrom < 3 && file.rowBytes >= StrataDataWriter.LearnFromRowBytes) {
        val p = new Path(tableRoot, file.relative)
        bytesPerRowByte = p.getFileSystem(files.hadoopConf).getFileStatus(p).getLen.toDouble / file.rowBytes
        learnedFrom += 1
      }
    }
  }

  override def commit(): WriterCommitMessage = {
    open.keySet.toArray.foreach(k => close(k.asInstanceOf[InternalRow]))
    val dataFiles = new DataFiles(tableRoot, files.hadoopConf, numIndexedCols)
    val adds: Seq[AddFile] = finished.toSeq.flatMap { case (relative, values) => dataFiles.finish(relative, values) }
    StrataTaskCommit(adds, JobFiles.isRerun, rowsWithoutFile)
  }

  override def abort(): Unit = {
    open.values.forEach { f =>
      try f.writer.close() catch { case NonFatal(_) => }
      finished += ((f.relative, f.values))
    }
    open.clear()
    finished.foreach { case (relative, _) =>
      try { val p = new Path(tableRoot, relative); p.getFileSystem(files.hadoopConf).delete(p, false) }
      catch { case NonFatal(_) => }
    }
  }

  override def close(): Unit = ()

  // Files and bytes are exact only once files close (after Spark's last poll): the driver reports them at commit.
  override def currentMetricsValues(): Array[CustomTaskMetric] = Array(StrataWrite.metric("strataRowsWritten", rows))
}

object StrataDataWriter {
  /** Files with fewer row bytes than this say little about the compression ratio (headers, dictionaries). */
  private val LearnFromRowBytes: Long = 1L << 20
}
