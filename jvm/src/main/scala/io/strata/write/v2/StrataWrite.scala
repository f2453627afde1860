package io.strata.write.v2

import io.strata.config.WriteOptions
import io.strata.log.{AddFile, StrataException, TableLog}
import io.strata.shim.{ParquetFiles, PartitionSplitter, SparkInternals}
import io.strata.write.{ReplaceWhereFiles, TableWrite, WriteMode}
import io.strata.write.v1.DirectCommitProtocol
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.distributions.{Distribution, Distributions}
import org.apache.spark.sql.connector.expressions.{Expressions, NullOrdering, SortDirection, SortOrder}
import org.apache.spark.sql.connector.metric.{CustomMetric, CustomSumMetric}
import org.apache.spark.sql.connector.write._

/**
 * A V2 write: asks Spark to cluster and sort rows by partition columns (so each task keeps one file open at a time
 * and a partitioned write makes about one file per partition), then commits all task files in one log commit.
 */
final class StrataWrite(log: TableLog, info: LogicalWriteInfo, mode: WriteMode, options: WriteOptions)
    extends Write with RequiresDistributionAndOrdering {
  private val tableWrite = TableWrite.begin(log, info.schema(), mode, options)
  private val partitionColumns = tableWrite.schema.partitionColumns
  mode match {
    case WriteMode.ReplaceWhere(p) => ReplaceWhereFiles.choose(tableWrite, p)
    case _ =>
  }

  override def description(): String = s"Strata(${log.tablePath}, ${mode.name})"

  override def requiredDistribution(): Distribution =
    if (partitionColumns.isEmpty) Distributions.unspecified()
    else Distributions.clustered(partitionColumns.map(c => Expressions.column(c): org.apache.spark.sql.connector.expressions.Expression).toArray)

  override def requiredOrdering(): Array[SortOrder] =
    partitionColumns.map(c => Expressions.sort(Expressions.column(c), SortDirection.ASCENDING, NullOrdering.NULLS_FIRST)).toArray

  // Let AQE split skewed partitions: one partition's rows may then land in a few files.
  override def distributionStrictlyRequired(): Boolean = false

  override def advisoryPartitionSizeInBytes(): Long = 128L * 1024 * 1024

  override def supportedCustomMetrics(): Array[CustomMetric] =
    Array(new FilesWrittenMetric, new RowsWrittenMetric, new BytesWrittenMetric)

  override def toBatch: BatchWrite = new StrataBatchWrite(log, tableWrite, options)
}

final class StrataBatchWrite(log: TableLog, tableWrite: TableWrite, options: WriteOptions) extends BatchWrite {
  override def createBatchWriterFactory(info: PhysicalWriteInfo): DataWriterFactory = {
    val spark = SparkSession.active
    val schema = tableWrite.schema
    val splitter = new PartitionSplitter(schema.schema, schema.partitionColumns, SparkInternals.sessionTimeZone(spark))
    val files = ParquetFiles.prepare(spark, Map("compression" -> options.compression), splitter.dataSchema)
    new StrataDataWriterFactory(log.tablePath.toString, files, splitter, tableWrite.numIndexedColumns,
      options.maxRecordsPerFile.getOrElse(0L))
  }

  override def commit(messages: Array[WriterCommitMessage]): Unit = {
    val files = addedFiles(messages)
    try tableWrite.commit(files) catch {
      case e: StrataException => // certainly not committed: the files will never be referenced
        DirectCommitProtocol.deleteFiles(log.tablePath.toString, files, log.conf)
        throw e
    }
  }

  /** Spark aborts before any commit attempt: every file the tasks reported is garbage. */
  override def abort(messages: Array[WriterCommitMessage]): Unit =
    DirectCommitProtocol.deleteFiles(log.tablePath.toString, addedFiles(messages), log.conf)

  private def addedFiles(messages: Array[WriterCommitMessage]): Seq[AddFile] =
    messages.toSeq.collect { case m: StrataTaskCommit => m.files }.flatten
}

/** What one task wrote. */
final case class StrataTaskCommit(files: Seq[AddFile]) extends WriterCommitMessage

class FilesWrittenMetric extends CustomSumMetric {
  override def name(): String = "strataFilesWritten"
  override def description(): String = "number of data files written"
}
class RowsWrittenMetric extends CustomSumMetric {
  override def name(): String = "strataRowsWritten"
  override def description(): String = "number of rows written"
}
class BytesWrittenMetric extends CustomSumMetric {
  override def name(): String = "strataBytesWritten"
  override def description(): String = "bytes of data files written"
}
