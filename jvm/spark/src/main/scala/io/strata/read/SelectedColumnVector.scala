package io.strata.read

import org.apache.spark.sql.types.Decimal
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarArray, ColumnarMap}
import org.apache.spark.unsafe.types.{CalendarInterval, GeographyVal, GeometryVal, UTF8String}

/**
 * A view of the rows `rows(0 until count)` of another column vector, in that order: how a batch of Spark's
 * vectorized Parquet reader loses its deleted rows without copying a value. Struct children are views too, so
 * nested fields line up with their parents.
 */
final class SelectedColumnVector(underlying: ColumnVector, rows: Array[Int], count: Int)
    extends ColumnVector(underlying.dataType()) {
  // Views of the children (struct fields, a variant's value and metadata), made when first asked for.
  private val children = scala.collection.mutable.HashMap.empty[Int, ColumnVector]

  override def close(): Unit = () // the reader owns the underlying vector and reuses it for its next batch
  override def hasNull: Boolean = underlying.hasNull && numNulls() > 0
  override def numNulls(): Int = {
    if (!underlying.hasNull) 0
    else { var n = 0; var i = 0; while (i < count) { if (underlying.isNullAt(rows(i))) n += 1; i += 1 }; n }
  }
  override def isNullAt(rowId: Int): Boolean = underlying.isNullAt(rows(rowId))
  override def getBoolean(rowId: Int): Boolean = underlying.getBoolean(rows(rowId))
  override def getByte(rowId: Int): Byte = underlying.getByte(rows(rowId))
  override def getShort(rowId: Int): Short = underlying.getShort(rows(rowId))
  override def getInt(rowId: Int): Int = underlying.getInt(rows(rowId))
  override def getLong(rowId: Int): Long = underlying.getLong(rows(rowId))
  override def getFloat(rowId: Int): Float = underlying.getFloat(rows(rowId))
  override def getDouble(rowId: Int): Double = underlying.getDouble(rows(rowId))
  override def getArray(rowId: Int): ColumnarArray = underlying.getArray(rows(rowId))
  override def getMap(ordinal: Int): ColumnarMap = underlying.getMap(rows(ordinal))
  override def getDecimal(rowId: Int, precision: Int, scale: Int): Decimal =
    underlying.getDecimal(rows(rowId), precision, scale)
  override def getUTF8String(rowId: Int): UTF8String = underlying.getUTF8String(rows(rowId))
  override def getBinary(rowId: Int): Array[Byte] = underlying.getBinary(rows(rowId))
  override def getInterval(rowId: Int): CalendarInterval = underlying.getInterval(rows(rowId))
  override def getGeography(rowId: Int): GeographyVal = underlying.getGeography(rows(rowId))
  override def getGeometry(rowId: Int): GeometryVal = underlying.getGeometry(rows(rowId))
  override def getChild(ordinal: Int): ColumnVector =
    children.getOrElseUpdate(ordinal, new SelectedColumnVector(underlying.getChild(ordinal), rows, count))
}
