package io.strata.write.v2

import io.strata.log.AddFile
import io.strata.shim.{ParquetFiles, PartitionSplitter}
import io.strata.write.DataFiles
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.metric.CustomTaskMetric
import org.apache.spark.sql.connector.write.{DataWriter, DataWriterFactory, WriterCommitMessage}

import scala.collection.mutable
import scala.util.control.NonFatal

final class StrataDataWriterFactory(tableRoot: String, files: ParquetFiles, splitter: PartitionSplitter,
                                    numIndexedCols: Int, maxRecordsPerFile: Long) extends DataWriterFactory {
  override def createWriter(partitionId: Int, taskId: Long): DataWriter[InternalRow] =
    new StrataDataWriter(tableRoot, files, splitter, numIndexedCols, maxRecordsPerFile, partitionId, taskId)
}

/**
 * Writes one task's rows: the clustered writer. Rows arrive grouped by partition (the write requires that
 * ordering), so one file is open at a time; a new file starts at each partition change and every
 * `maxRecordsPerFile` rows. Commit turns the files into add actions (footer statistics); abort deletes them.
 */
final class StrataDataWriter(tableRoot: String, files: ParquetFiles, splitter: PartitionSplitter, numIndexedCols: Int,
                             maxRecordsPerFile: Long, partitionId: Int, taskId: Long) extends DataWriter[InternalRow] {
  private val task = files.forTask(partitionId, taskId)
  private val finished = mutable.ArrayBuffer.empty[(String, Map[String, Option[String]])]
  private val seenPartitions = mutable.HashSet.empty[InternalRow]
  private var current: ParquetFiles.FileWriter = _
  private var currentFile: (String, Map[String, Option[String]]) = _
  private var currentKey: InternalRow = _
  private var currentPartition: (String, Map[String, Option[String]]) = ("", Map.empty)
  private var rowsInFile = 0L
  private var fileCounter = 0
  private var rows = 0L
  private var bytes = 0L

  override def write(row: InternalRow): Unit = {
    if (current == null) startPartition(row)
    else if (splitter.isPartitioned && splitter.key(row) != currentKey) { closeCurrent(); startPartition(row) }
    else if (maxRecordsPerFile > 0 && rowsInFile >= maxRecordsPerFile) { closeCurrent(); openFile() }
    current.write(splitter.data(row))
    rowsInFile += 1
    rows += 1
  }

  private def startPartition(row: InternalRow): Unit = {
    if (splitter.isPartitioned) {
      currentKey = splitter.key(row)
      if (!seenPartitions.add(currentKey)) throw new IllegalStateException("The rows of one partition arrived in " +
        "more than one group: the clustered writer needs its input clustered by the partition columns.")
      currentPartition = splitter.partition(row)
    }
    openFile()
  }

  private def openFile(): Unit = {
    val (dir, values) = currentPartition
    val name = DataFiles.fileName(partitionId, fileCounter, task.extension)
    fileCounter += 1
    val relative = if (dir.isEmpty) name else s"$dir/$name"
    current = task.open(new Path(tableRoot, relative).toString)
    currentFile = (relative, values)
    rowsInFile = 0
  }

  private def closeCurrent(): Unit = if (current != null) {
    current.close()
    current = null
    finished += currentFile
  }

  override def commit(): WriterCommitMessage = {
    closeCurrent()
    val adds: Seq[AddFile] = finished.toSeq.flatMap { case (relative, values) =>
      DataFiles.finish(tableRoot, relative, values, files.hadoopConf, numIndexedCols)
    }
    bytes = adds.map(_.size).sum
    StrataTaskCommit(adds)
  }

  override def abort(): Unit = {
    try if (current != null) current.close() catch { case NonFatal(_) => }
    if (currentFile != null && !finished.contains(currentFile)) finished += currentFile
    finished.foreach { case (relative, _) =>
      try { val p = new Path(tableRoot, relative); p.getFileSystem(files.hadoopConf).delete(p, false) }
      catch { case NonFatal(_) => }
    }
  }

  override def close(): Unit = ()

  override def currentMetricsValues(): Array[CustomTaskMetric] = Array(
    metric("strataFilesWritten", finished.size.toLong + (if (current != null) 1 else 0)),
    metric("strataRowsWritten", rows),
    metric("strataBytesWritten", bytes))

  private def metric(n: String, v: Long): CustomTaskMetric = new CustomTaskMetric {
    override def name(): String = n
    override def value(): Long = v
  }
}
