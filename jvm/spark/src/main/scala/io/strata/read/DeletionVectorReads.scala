package io.strata.read

import io.strata.log.{CorruptLogException, DeletedRows, DeletionVectorDescriptor, DeletionVectors}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, UnsafeProjection}
import org.apache.spark.sql.execution.datasources.PartitionedFile
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.types.{DataType, StructField, StructType}
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarBatch}
import org.apache.spark.util.SerializableConfiguration

/**
 * Reading data files that have deletion vectors. Spark's Parquet readers (vectorized or not, V1 or V2) are asked for
 * one more column, each row's index in its file ([[RowIndexField]], filled in by Spark itself); the rows whose
 * index the file's vector holds are dropped, and the index column is dropped from what the scan returns. The file's
 * descriptor travels with the file, in the metadata the file index attaches ([[MetadataKey]]).
 */
object DeletionVectorReads {
  /** Where [[LogFileIndex]] puts a file's deletion vector descriptor in the file's scan metadata. */
  val MetadataKey = "strata.deletionVector"

  /** The column Spark's Parquet readers fill with the row's index in its file. */
  val RowIndexField: StructField =
    StructField(ParquetFileFormat.ROW_INDEX_TEMPORARY_COLUMN_NAME, org.apache.spark.sql.types.LongType, nullable = true)
  def isRowIndex(f: StructField): Boolean = f.name == RowIndexField.name

  /** The deletion vector of a scanned file, if it has one. */
  def descriptor(file: PartitionedFile): Option[DeletionVectorDescriptor] =
    file.otherConstantMetadataColumnValues.get(MetadataKey).collect { case d: DeletionVectorDescriptor => d }

  /**
   * The rows of `file` its deletion vector marks deleted. A vector that is missing or damaged fails the read with an
   * error naming the data file and the vector: skipping it would return deleted rows.
   */
  def deletedRows(file: PartitionedFile, tablePath: String, conf: Configuration): Option[DeletedRows] =
    descriptor(file).map { dv =>
      val table = new Path(tablePath)
      def where = dv.file(table).fold(s"inline deletion vector ${dv.uniqueId}")(p => s"deletion vector file $p")
      try DeletionVectors.read(dv, table, conf) catch {
        case e: java.io.FileNotFoundException => throw CorruptLogException("STRATA_CORRUPT_DELETION_VECTOR",
          s"The $where of data file " +
          s"${file.filePath} is missing; the table cannot be read without it (${e.getMessage}).", e)
        case e: CorruptLogException => throw CorruptLogException("STRATA_CORRUPT_DELETION_VECTOR",
          s"The $where of data file ${file.filePath} " +
          s"is corrupt: ${e.getMessage}", e)
        case e: java.io.IOException => throw CorruptLogException("STRATA_CORRUPT_DELETION_VECTOR",
          s"The $where of data file ${file.filePath} " +
          s"cannot be read: $e", e)
      }
    }

  def broadcastConf(spark: SparkSession, conf: Configuration): Broadcast[SerializableConfiguration] =
    spark.sparkContext.broadcast(new SerializableConfiguration(conf))
}

/**
 * Drops deleted rows from what Spark's Parquet reader returned for one file: batches or rows laid out as
 * `outputTypes` with the row index at `rowIndexOrdinal` in addition. What comes out has no row index column.
 */
final class DeletedRowsFilter(deleted: DeletedRows, rowIndexOrdinal: Int, outputTypes: Seq[DataType],
                              keepIndex: Boolean = false) {
  private val none = deleted.cardinality == 0
  private val kept: Array[Int] = (0 to outputTypes.size).filter(c => keepIndex || c != rowIndexOrdinal).toArray
  private lazy val project: UnsafeProjection = UnsafeProjection.create(
    kept.toSeq.zipWithIndex.map { case (from, to) => BoundReference(from, outputTypes(to), nullable = true) })

  /** The batch without its deleted rows (a view, no copy) and without the index column. */
  def batch(b: ColumnarBatch): ColumnarBatch = {
    val index = b.column(rowIndexOrdinal)
    val n = b.numRows()
    val live = new Array[Int](n)
    var count = 0
    var i = 0
    while (i < n) {
      if (none || !deleted.contains(index.getLong(i))) { live(count) = i; count += 1 }
      i += 1
    }
    val columns: Array[ColumnVector] =
      if (count == n) kept.map(b.column)
      else kept.map(c => new SelectedColumnVector(b.column(c), live, count))
    new ColumnarBatch(columns, count)
  }

  /** The row without the index column, or None when it is deleted. */
  def row(r: InternalRow): Option[InternalRow] =
    if (!none && deleted.contains(r.getLong(rowIndexOrdinal))) None else Some(if (keepIndex) r else project(r))

  /** Filters a reader's output, which holds batches or rows (Spark's V1 readers mix them behind one type). */
  def apply(it: Iterator[InternalRow]): Iterator[InternalRow] = it.asInstanceOf[Iterator[Any]].flatMap {
    case b: ColumnarBatch => Iterator.single(batch(b))
    case r: InternalRow => row(r).iterator
  }.asInstanceOf[Iterator[InternalRow]]
}

object DeletedRowsFilter {
  /**
   * The filter for a reader whose output schema `withIndex` holds the row index column; `keepIndex`: the output
   * keeps that column (a row-level operation's row id).
   */
  def apply(deleted: DeletedRows, withIndex: StructType, keepIndex: Boolean = false): DeletedRowsFilter = {
    val ordinal = withIndex.fields.indexWhere(DeletionVectorReads.isRowIndex)
    new DeletedRowsFilter(deleted, ordinal, withIndex.fields.filterNot(DeletionVectorReads.isRowIndex).map(_.dataType).toSeq,
      keepIndex)
  }
}
