package io.strata.write

import io.strata.table.{PartitionPaths, PartitionValues}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, Cast, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.{DataType, DateType, DecimalType, StringType, StructType, TimestampNTZType,
  TimestampType}

/**
 * Splits rows of a table's full schema into the data-column row and the partition: the Hive directory (rendered in
 * UTC, so a directory names one instant) and the log's partition values, made from the internal values themselves
 * (days, UTC microseconds, exact decimals), never from a session-zone rendering.
 */
final class PartitionSplitter(schema: StructType, partitionColumns: Seq[String]) extends Serializable {
  private val partOrdinals = partitionColumns.map(schema.fieldIndex)
  private val dataOrdinals = schema.fields.indices.filterNot(partOrdinals.contains)
  val dataSchema: StructType = StructType(dataOrdinals.map(schema.fields(_)))
  @transient private lazy val dataProjection =
    UnsafeProjection.create(dataOrdinals.map(i => BoundReference(i, schema(i).dataType, schema(i).nullable)))
  @transient private lazy val keyProjection =
    UnsafeProjection.create(partOrdinals.map(i => BoundReference(i, schema(i).dataType, schema(i).nullable)))
  @transient private lazy val renderers = partOrdinals.map { i =>
    Cast(BoundReference(i, schema(i).dataType, schema(i).nullable), StringType, Some("UTC"))
  }

  def isPartitioned: Boolean = partOrdinals.nonEmpty

  /** The data columns of `row` as an UnsafeRow (a reused buffer: copy to keep); an unpartitioned table's UnsafeRow
   *  is already that, so it is not copied. */
  def data(row: InternalRow): UnsafeRow = row match {
    case u: UnsafeRow if partOrdinals.isEmpty => u
    case _ => dataProjection(row)
  }

  /** The in-memory size of a row [[data]] returned, the base of file size estimates. */
  def sizeInBytes(data: UnsafeRow): Long = data.getSizeInBytes.toLong

  /** The partition key of `row`, comparable across rows by equals/hashCode: a reused buffer, copy to keep. */
  def key(row: InternalRow): InternalRow = keyProjection(row)

  /** The partition directory (relative, escaped) and the log partition values of `row`. */
  def partition(row: InternalRow): (String, Map[String, Option[String]]) = {
    val raw = partitionColumns.zip(renderers).map { case (c, r) => c -> Option(r.eval(row)).map(_.toString) }
    val values = partitionColumns.zip(partOrdinals).zip(raw).map { case ((c, i), (_, rendered)) =>
      c -> PartitionSplitter.logValue(row, i, schema(i).dataType, rendered)
    }.toMap
    (PartitionPaths.directory(raw), values)
  }
}

object PartitionSplitter {
  /** The log value of field `i` of `row`; `rendered` is Spark's UTC string of it (right for the other types). */
  private[write] def logValue(row: InternalRow, i: Int, dataType: DataType, rendered: Option[String]): Option[String] =
    if (row.isNullAt(i)) None else dataType match {
      case DateType => Some(PartitionValues.formatDate(row.getInt(i)))
      case TimestampType => Some(PartitionValues.formatTimestamp(row.getLong(i)))
      case TimestampNTZType => Some(PartitionValues.formatTimestampNtz(row.getLong(i)))
      case d: DecimalType => Some(PartitionValues.formatDecimal(row.getDecimal(i, d.precision, d.scale).toJavaBigDecimal))
      case _ => rendered.filter(_.nonEmpty) // an empty string is null in the log, as in the directory name
    }
}
