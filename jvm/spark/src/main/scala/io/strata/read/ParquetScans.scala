package io.strata.read

import io.strata.table.PhysicalSchema
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.read.Scan
import org.apache.spark.sql.execution.datasources.PartitioningAwareFileIndex
import org.apache.spark.sql.execution.datasources.v2.parquet.{ParquetScan, ParquetScanBuilder}
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

import scala.jdk.CollectionConverters._

/**
 * DataSource V2 scans over a log-driven file index, through Spark's own Parquet scan builder. When some file of the
 * index has a deletion vector, the builder also reads each row's index in its file and the scan is wrapped in a
 * [[DeletionVectorScan]] that drops the deleted rows.
 */
object ParquetScans {
  private def deletionVectorTable(index: PartitioningAwareFileIndex): Option[String] = index match {
    case l: LogFileIndex if l.hasDeletionVectors => Some(l.readTablePath.toString)
    case d: DistributedScanIndex if d.hasDeletionVectors => Some(d.readTablePath.toString)
    case _ => None
  }

  /** `rowIndex`: the scan will also return each row's index in its file ([[RowIndexColumn]]). */
  def builder(spark: SparkSession, index: PartitioningAwareFileIndex, schema: StructType, dataSchema: StructType,
              options: CaseInsensitiveStringMap, rowIndex: Boolean = false): ParquetScanBuilder =
    new ParquetScanBuilder(spark, index, schema,
      if (deletionVectorTable(index).isDefined || rowIndex) dataSchema.add(DeletionVectorReads.RowIndexField)
      else dataSchema, options)

  /** Prunes `builder` (made by [[builder]] over `index`) to `required` and builds its scan. */
  def build(builder: ParquetScanBuilder, index: PartitioningAwareFileIndex, required: StructType): Scan = {
    val rowIndex = RowIndexColumn.requested(required)
    deletionVectorTable(index).orElse(if (rowIndex) Some(index.rootPaths.head.toString) else None) match {
      case None => builder.pruneColumns(required); mapped(narrowed(builder.build()), index)
      case Some(table) =>
        builder.pruneColumns(StructType(required.fields.filterNot(f => RowIndexColumn.requested(StructType(Seq(f)))))
          .add(DeletionVectorReads.RowIndexField))
        new DeletionVectorScan(mapped(narrowed(builder.build()), index), table,
          if (rowIndex) Some(RowIndexColumn.Name) else None)
    }
  }

  /**
   * Spark's scan over only the files of its index that its partition and data filters may match
   * ([[LogFileIndex.pruned]]; a [[DistributedScanIndex]] by its job): its size estimate and EXPLAIN's
   * `Location: LogFileIndex(<n> paths)` then count those.
   */
  private def narrowed(scan: Scan): Scan = scan match {
    case p: ParquetScan => p.fileIndex match {
      case l: LogFileIndex => l.pruned(p.partitionFilters, p.dataFilters).fold(scan)(i => p.copy(fileIndex = i))
      case d: DistributedScanIndex => p.copy(fileIndex = d.selected(p.partitionFilters, p.dataFilters))
      case _ => scan
    }
    case _ => scan
  }

  /** Spark's scan reading the physical columns of a table with column mapping ([[ColumnMappedScan]]). */
  private def mapped(scan: Scan, index: PartitioningAwareFileIndex): Scan = (scan, index) match {
    case (p: ParquetScan, l: LogFileIndex) => PhysicalSchema.of(l.tableSchema).fold(scan)(new ColumnMappedScan(p, _))
    case (p: ParquetScan, d: DistributedScanIndex) =>
      PhysicalSchema.of(d.tableSchema).fold(scan)(new ColumnMappedScan(p, _))
    case _ => scan
  }

  /** The log file index a scan built by [[build]] lists its files from. */
  def scannedIndex(scan: Scan): Option[LogFileIndex] = scan match {
    case d: DeletionVectorScan => scannedIndex(d.inner)
    case c: ColumnMappedScan => scannedIndex(c.inner)
    case p: ParquetScan => p.fileIndex match {
      case l: LogFileIndex => Some(l)
      case _ => None
    }
    case _ => None
  }

  /**
   * A scan returning every row of the index's files, with every column: no filter reaches Parquet (its row-group
   * skipping would drop rows a file rewrite must keep) and a missing or corrupt file fails the scan instead of
   * being skipped, whatever the session says. Rows deleted by a deletion vector are not returned.
   */
  def wholeFiles(spark: SparkSession, index: PartitioningAwareFileIndex, schema: StructType,
                 dataSchema: StructType): Scan = {
    val options = new CaseInsensitiveStringMap(Map("ignoreMissingFiles" -> "false",
      "ignoreCorruptFiles" -> "false").asJava)
    build(builder(spark, index, schema, dataSchema, options), index, StructType(schema.fields ++
      index.partitionSchema.fields.filterNot(f => schema.fieldNames.exists(_.equalsIgnoreCase(f.name)))))
  }
}
