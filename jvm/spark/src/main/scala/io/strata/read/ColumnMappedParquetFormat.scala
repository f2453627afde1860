package io.strata.read

import io.strata.table.PhysicalSchema
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.datasources.PartitionedFile
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.sources.Filter
import org.apache.spark.sql.types.StructType

/**
 * The V1 read of a table's files: Spark's Parquet format, asked for the physical columns of a table with column
 * mapping (`mapping`; physical names, or field ids in mode `id`) while Spark's plan keeps the logical names (rows are
 * positional). Pushed filters are renamed too: a logical name may be another column's physical name (a swap of two
 * columns' names in a table upgraded to column mapping), so a filter is never passed on unrenamed.
 */
class ColumnMappedParquetFormat(val mapping: Option[PhysicalSchema]) extends ParquetFileFormat {
  override def buildReaderWithPartitionValues(spark: SparkSession, dataSchema: StructType, partitionSchema: StructType,
      requiredSchema: StructType, filters: Seq[Filter], options: Map[String, String],
      hadoopConf: Configuration): PartitionedFile => Iterator[InternalRow] = mapping match {
    case None => super.buildReaderWithPartitionValues(spark, dataSchema, partitionSchema, requiredSchema, filters,
      options, hadoopConf)
    case Some(m) =>
      super.buildReaderWithPartitionValues(spark, m.physical(dataSchema), partitionSchema, m.physical(requiredSchema),
        m.filters(filters), options, ColumnMappedParquetFormat.readConf(m, hadoopConf))
  }

  override def equals(other: Any): Boolean = other match {
    case f: ColumnMappedParquetFormat => f.getClass == getClass && f.mapping == mapping
    case _ => false
  }
  override def hashCode(): Int = mapping.hashCode
  override def toString: String = if (mapping.isEmpty) "Parquet" else "Parquet with column mapping"
}

object ColumnMappedParquetFormat {
  /** Spark's Parquet reader resolves columns by field id when this is set and the requested fields carry ids. */
  val FieldIdReadKey = "spark.sql.parquet.fieldId.read.enabled"

  /** The conf a reader of physical columns needs (a copy: Spark's format writes the requested schema into it). */
  def readConf(m: PhysicalSchema, conf: Configuration): Configuration = {
    val c = new Configuration(conf)
    if (m.byId) c.setBoolean(FieldIdReadKey, true)
    c
  }
}
