package io.strata.read

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.datasources.PartitionedFile
import io.strata.table.PhysicalSchema
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.sources.Filter
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.vectorized.ColumnVector

/**
 * The V1 read of a table whose files have deletion vectors: Spark's Parquet format, asked for the row index of each
 * file that has a vector, whose deleted rows [[DeletedRowsFilter]] drops. Files without a vector read as usual.
 */
final class DeletionVectorParquetFormat(val tablePath: String, mapping: Option[PhysicalSchema] = None)
    extends ColumnMappedParquetFormat(mapping) {
  /** Batches may hold [[SelectedColumnVector]]s, so generated code must not assume Spark's own vector classes. */
  override def vectorTypes(requiredSchema: StructType, partitionSchema: StructType,
                           sqlConf: SQLConf): Option[Seq[String]] =
    super.vectorTypes(requiredSchema, partitionSchema, sqlConf).map(_.map(_ => classOf[ColumnVector].getName))

  override def buildReaderWithPartitionValues(spark: SparkSession, dataSchema: StructType, partitionSchema: StructType,
      requiredSchema: StructType, filters: Seq[Filter], options: Map[String, String],
      hadoopConf: Configuration): PartitionedFile => Iterator[InternalRow] = {
    // Each reader gets its own copy of the conf: Spark's Parquet format writes the requested schema into it and
    // broadcasts it, and in local mode the broadcast is the same object, so a shared conf would be overwritten.
    val plain = super.buildReaderWithPartitionValues(spark, dataSchema, partitionSchema, requiredSchema, filters,
      options, new Configuration(hadoopConf))
    val indexed = requiredSchema.add(DeletionVectorReads.RowIndexField)
    val withIndex = super.buildReaderWithPartitionValues(spark, dataSchema, partitionSchema, indexed, filters,
      options, new Configuration(hadoopConf))
    val conf = DeletionVectorReads.broadcastConf(spark, hadoopConf)
    val output = StructType(indexed.fields ++ partitionSchema.fields)
    val table = tablePath
    (file: PartitionedFile) => DeletionVectorReads.deletedRows(file, table, conf.value.value) match {
      case None => plain(file)
      case Some(deleted) => DeletedRowsFilter(deleted, output)(withIndex(file))
    }
  }

  override def equals(other: Any): Boolean = other match {
    case f: DeletionVectorParquetFormat => f.tablePath == tablePath && f.mapping == mapping
    case _ => false
  }
  override def hashCode(): Int = tablePath.hashCode
  override def toString: String = "Parquet with deletion vectors"
}
