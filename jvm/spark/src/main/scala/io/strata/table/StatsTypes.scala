package io.strata.table

import io.strata.log.StatsColumn
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/**
 * Spark types and the log core's statistics values ([[StatsColumn.Kind]]): which kind a column's statistics are read
 * as, and a parsed value as Catalyst's internal value of the column's type.
 */
object StatsTypes {
  /** The kind a column of `dt` has statistics of, or None (binary, complex types, collated strings). */
  def kind(dt: DataType): Option[StatsColumn.Kind] = dt match {
    case ByteType => Some(StatsColumn.Integral(8))
    case ShortType => Some(StatsColumn.Integral(16))
    case IntegerType => Some(StatsColumn.Integral(32))
    case LongType => Some(StatsColumn.Integral(64))
    case FloatType => Some(StatsColumn.Floating(single = true))
    case DoubleType => Some(StatsColumn.Floating(single = false))
    case d: DecimalType => Some(StatsColumn.Decimal(d.precision, d.scale))
    case s: StringType if s == StringType => Some(StatsColumn.Str) // UTF-8 byte ordering only
    case DateType => Some(StatsColumn.Date)
    case TimestampType => Some(StatsColumn.Timestamp)
    case TimestampNTZType => Some(StatsColumn.TimestampNtz)
    case BooleanType => Some(StatsColumn.Bool)
    case _ => None
  }

  /** The statistics column of top-level field `f`, when its type has statistics. */
  def column(f: StructField): Option[StatsColumn] =
    kind(f.dataType).map(StatsColumn(Seq(PhysicalSchema.physicalName(f)), _)) // statistics are keyed by physical name

  /** A parsed statistics value (null = absent) as Catalyst's internal value of `dt`. */
  def catalyst(v: AnyRef, dt: DataType): Any = if (v == null) null else (dt, v) match {
    case (ByteType, l: java.lang.Long) => l.byteValue
    case (ShortType, l: java.lang.Long) => l.shortValue
    case (IntegerType | DateType, l: java.lang.Long) => l.intValue
    case (LongType | TimestampType | TimestampNTZType, l: java.lang.Long) => l.longValue
    case (FloatType, d: java.lang.Double) => d.floatValue
    case (DoubleType, d: java.lang.Double) => d.doubleValue
    case (t: DecimalType, d: java.math.BigDecimal) =>
      val dec = Decimal(d)
      if (dec.changePrecision(t.precision, t.scale)) dec else null
    case (_: StringType, b: Array[Byte]) => UTF8String.fromBytes(b)
    case (BooleanType, b: java.lang.Boolean) => b.booleanValue
    case _ => null
  }
}
