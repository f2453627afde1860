package io.strata.write.v2

import io.strata.config.{DistributionMode, WriteConf, WriteOptions}
import io.strata.log.{AddFile, StrataException, TableLog}
import io.strata.shim.{ParquetFiles, PartitionSplitter, SparkInternals}
import io.strata.write.{ReplaceWhereFiles, TableWrite, WriteMode}
import io.strata.write.v1.DirectCommitProtocol
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.distributions.{Distribution, Distributions}
import org.apache.spark.sql.connector.expressions.{Expression, Expressions, NullOrdering, SortDirection, SortOrder}
import org.apache.spark.sql.connector.metric.{CustomMetric, CustomSumMetric}
import org.apache.spark.sql.connector.write._

import scala.jdk.CollectionConverters._

/**
 * A V2 write. By default (distribution mode `hash`) it asks Spark to cluster and sort rows by partition columns, so
 * each task keeps one file open at a time and a partitioned write makes about one file per partition; `range`
 * orders instead of hashing; `none` asks for nothing and the tasks fan out into one open file per partition.
 * All task files are committed in one log commit.
 */
final class StrataWrite(log: TableLog, info: LogicalWriteInfo, tableWrite: TableWrite, onCommit: () => Unit)
    extends Write with RequiresDistributionAndOrdering {
  def this(log: TableLog, info: LogicalWriteInfo, mode: WriteMode, options: WriteOptions) =
    this(log, info, TableWrite.begin(log, info.schema(), mode, options), () => ())
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
    if (partitionColumns.isEmpty || distributionMode == DistributionMode.None) 0L else 128L * 1024 * 1024

  override def supportedCustomMetrics(): Array[CustomMetric] =
    Array(new FilesWrittenMetric, new RowsWrittenMetric, new BytesWrittenMetric)

  override def toBatch: BatchWrite =
    new StrataBatchWrite(log, tableWrite, options, fanout = distributionMode == DistributionMode.None, maxOpenFiles,
      onCommit)
}

final class StrataBatchWrite(log: TableLog, tableWrite: TableWrite, options: WriteOptions, fanout: Boolean,
                             maxOpenFiles: Int, onCommit: () => Unit) extends BatchWrite {
  override def createBatchWriterFactory(info: PhysicalWriteInfo): DataWriterFactory = {
    val spark = SparkSession.active
    val schema = tableWrite.schema
    val splitter = new PartitionSplitter(schema.schema, schema.partitionColumns, SparkInternals.sessionTimeZone(spark))
    val files = ParquetFiles.prepare(spark, Map("compression" -> options.compression), splitter.dataSchema)
    new StrataDataWriterFactory(log.tablePath.toString, files, splitter, tableWrite.numIndexedColumns,
      options.maxRecordsPerFile.getOrElse(0L), if (fanout) maxOpenFiles else 0)
  }

  override def commit(messages: Array[WriterCommitMessage]): Unit = {
    val files = addedFiles(messages)
    try { tableWrite.commit(files); onCommit() } catch {
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
