package io.strata.read

import java.util.OptionalLong

import org.apache.spark.broadcast.Broadcast
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.{FileSourceOptions, InternalRow}
import org.apache.spark.sql.connector.read.{Batch, InputPartition, PartitionReader, PartitionReaderFactory, Scan,
  Statistics, SupportsReportStatistics}
import org.apache.spark.sql.execution.datasources.PartitionedFile
import org.apache.spark.sql.execution.datasources.v2.FilePartitionReaderFactory
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetPartitionReaderFactory
import org.apache.spark.sql.strata.SparkInternals
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.vectorized.ColumnarBatch
import org.apache.spark.util.SerializableConfiguration

/**
 * The V2 read of a table whose files have deletion vectors: `inner` is Spark's Parquet scan with the row index
 * column ([[DeletionVectorReads.RowIndexField]]) among its data columns; this scan hides that column and drops the
 * rows each file's vector marks deleted.
 */
final class DeletionVectorScan(val inner: Scan, tablePath: String, keepRowIndexAs: Option[String] = None)
    extends Scan with SupportsReportStatistics {
  private val innerSchema = inner.readSchema()
  /** Without the row index column, or with it under the name `keepRowIndexAs` (same place: rows are positional). */
  override def readSchema(): StructType = keepRowIndexAs match {
    case None => StructType(innerSchema.fields.filterNot(DeletionVectorReads.isRowIndex))
    case Some(name) => StructType(innerSchema.fields.map(f =>
      if (DeletionVectorReads.isRowIndex(f)) f.copy(name = name, nullable = false) else f))
  }
  override def description(): String = inner.description() + " with deletion vectors"
  override def columnarSupportMode(): Scan.ColumnarSupportMode = inner.columnarSupportMode()
  override def estimateStatistics(): Statistics = inner match {
    case s: SupportsReportStatistics => s.estimateStatistics()
    case _ => new Statistics {
      override def sizeInBytes(): OptionalLong = OptionalLong.empty()
      override def numRows(): OptionalLong = OptionalLong.empty()
    }
  }

  override def toBatch: Batch = {
    val batch = inner.toBatch
    val spark = SparkSession.active
    val conf = DeletionVectorReads.broadcastConf(spark, SparkInternals.hadoopConf(spark, Map.empty))
    new Batch {
      override def planInputPartitions(): Array[InputPartition] = batch.planInputPartitions()
      override def createReaderFactory(): PartitionReaderFactory = batch.createReaderFactory() match {
        case f: ParquetPartitionReaderFactory =>
          new DeletionVectorReaderFactory(f, tablePath, conf, innerSchema, keepRowIndexAs.isDefined)
        case other => throw new IllegalStateException(s"Spark's Parquet scan returned reader factory $other")
      }
    }
  }

  override def equals(other: Any): Boolean = other match {
    case s: DeletionVectorScan => s.inner == inner && s.readSchema() == readSchema()
    case _ => false
  }
  override def hashCode(): Int = inner.hashCode()
}

/** Wraps each file's reader of Spark's Parquet reader factory with that file's [[DeletedRowsFilter]]. */
final class DeletionVectorReaderFactory(inner: ParquetPartitionReaderFactory, tablePath: String,
                                        conf: Broadcast[SerializableConfiguration], output: StructType,
                                        keepRowIndex: Boolean)
    extends FilePartitionReaderFactory {
  override def options: FileSourceOptions = inner.options // the Parquet factory's, public as a case class field
  override def supportColumnarReads(partition: InputPartition): Boolean = inner.supportColumnarReads(partition)

  private def filter(file: PartitionedFile): DeletedRowsFilter = DeletedRowsFilter(
    DeletionVectorReads.deletedRows(file, tablePath, conf.value.value).getOrElse(io.strata.log.DeletedRows.empty), output,
    keepRowIndex)

  override def buildReader(file: PartitionedFile): PartitionReader[InternalRow] = {
    val f = filter(file)
    val reader = inner.buildReader(file)
    new PartitionReader[InternalRow] {
      private var current: InternalRow = _
      override def next(): Boolean = {
        var found = false
        while (!found && reader.next()) f.row(reader.get()).foreach { r => current = r; found = true }
        found
      }
      override def get(): InternalRow = current
      override def close(): Unit = reader.close()
    }
  }

  override def buildColumnarReader(file: PartitionedFile): PartitionReader[ColumnarBatch] = {
    val f = filter(file)
    val reader = inner.buildColumnarReader(file)
    new PartitionReader[ColumnarBatch] {
      override def next(): Boolean = reader.next()
      override def get(): ColumnarBatch = f.batch(reader.get())
      override def close(): Unit = reader.close()
    }
  }
}
