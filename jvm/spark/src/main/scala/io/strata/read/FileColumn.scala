package io.strata.read

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.catalog.MetadataColumn
import org.apache.spark.sql.types.{DataType, StringType, StructField, StructType}
import org.apache.spark.unsafe.types.UTF8String

/**
 * The metadata column naming the data file that holds a row (`SELECT _strata_file, * FROM t`). Row-level operations
 * need it: Spark groups the rewritten rows by it and the runtime group filter chooses files with it. The reader
 * fills it in as if it were one more partition column, so Parquet's vectorized reader still serves the scan.
 */
object FileColumn {
  val Name = "_strata_file"
  val field: StructField = StructField(Name, StringType, nullable = false)

  val metadataColumn: MetadataColumn = new MetadataColumn {
    override def name(): String = Name
    override def dataType(): DataType = StringType
    // Null on the rows an UPDATE writes (not preserved on update): the writer counts them as the updated rows.
    override def isNullable: Boolean = true
    override def comment(): String = "the data file holding the row"
    override def metadataInJSON(): String = s"""{"${MetadataColumn.PRESERVE_ON_UPDATE}":false}"""
  }

  /** The same column as part of a merge-on-read row id (with [[RowIndexColumn]]): Spark wants row ids non-null. */
  val rowIdColumn: MetadataColumn = new MetadataColumn {
    override def name(): String = Name
    override def dataType(): DataType = StringType
    override def isNullable: Boolean = false
    override def comment(): String = "the data file holding the row"
  }

  /** `values` (partition values in `schema` order) followed by the file's path. */
  def append(values: InternalRow, schema: StructType, path: Path): InternalRow =
    InternalRow.fromSeq(values.toSeq(schema) :+ UTF8String.fromString(path.toString))

  def requested(schema: StructType): Boolean = schema.fieldNames.exists(_.equalsIgnoreCase(Name))
}

/**
 * The metadata column holding a row's index in its data file (`_strata_row_index`): with [[FileColumn]], the row id
 * of merge-on-read DELETE / UPDATE / MERGE. Spark's Parquet reader computes it ([[DeletionVectorReads.RowIndexField]]).
 */
object RowIndexColumn {
  val Name = "_strata_row_index"
  val metadataColumn: MetadataColumn = new MetadataColumn {
    override def name(): String = Name
    override def dataType(): DataType = org.apache.spark.sql.types.LongType
    override def isNullable: Boolean = false
    override def comment(): String = "the row's index in its data file"
  }
  def requested(schema: StructType): Boolean = schema.fieldNames.exists(_.equalsIgnoreCase(Name))
}
