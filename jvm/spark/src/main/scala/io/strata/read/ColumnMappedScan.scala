package io.strata.read

import io.strata.table.PhysicalSchema
import org.apache.spark.sql.connector.read.{Batch, InputPartition, PartitionReaderFactory, Scan, Statistics,
  SupportsReportStatistics}
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetScan
import org.apache.spark.sql.internal.connector.SupportsMetadata
import org.apache.spark.sql.types.StructType

/**
 * The V2 read of a table with column mapping: `inner` is Spark's Parquet scan over the logical columns (what the plan
 * sees: [[readSchema]]); its readers are made by the same scan asked for the physical columns (names, or field ids
 * in mode `id`) and with its pushed filters renamed. Rows are positional, so they come out as the logical schema's.
 */
final class ColumnMappedScan(val inner: ParquetScan, mapping: PhysicalSchema) extends Scan
    with SupportsReportStatistics with SupportsMetadata {
  override def readSchema(): StructType = inner.readSchema()
  override def description(): String = inner.description() + " with column mapping"
  override def columnarSupportMode(): Scan.ColumnarSupportMode = inner.columnarSupportMode()
  override def estimateStatistics(): Statistics = inner.estimateStatistics()
  override def getMetaData(): Map[String, String] = inner.getMetaData()

  private def physicalScan: ParquetScan = inner.copy(
    hadoopConf = ColumnMappedParquetFormat.readConf(mapping, inner.hadoopConf),
    dataSchema = mapping.physical(inner.dataSchema),
    readDataSchema = mapping.physical(inner.readDataSchema),
    pushedFilters = mapping.filters(inner.pushedFilters.toSeq).toArray)

  override def toBatch: Batch = {
    val batch = inner.toBatch
    new Batch {
      override def planInputPartitions(): Array[InputPartition] = batch.planInputPartitions()
      override def createReaderFactory(): PartitionReaderFactory = physicalScan.createReaderFactory()
    }
  }

  override def equals(other: Any): Boolean = other match {
    case s: ColumnMappedScan => s.inner == inner
    case _ => false
  }
  override def hashCode(): Int = inner.hashCode()
}
