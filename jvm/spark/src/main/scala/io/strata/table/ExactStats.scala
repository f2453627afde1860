package io.strata.table

import java.time.LocalDate
import java.time.format.DateTimeFormatter

import com.fasterxml.jackson.core.{JsonParser, JsonToken}
import io.strata.log.ActionCodec
import org.apache.spark.sql.types._

import scala.util.Try

/**
 * What a file's statistics (PROTOCOL.md, "Per-file Statistics") say *exactly* about some top-level columns: the
 * facts an aggregate may be answered from. Only the fields asked for are parsed, with a streaming parser (no tree).
 * A bound is kept only for types whose statistics are exact for every writer: integral types, date, boolean, and
 * decimals of precision up to 15 (delta-rs writes decimal bounds through a double, which is exact only up to 15
 * digits). Strings (truncated), floating point (NaN rules), timestamps (milliseconds) and the rest get no bounds.
 */
final class ExactStats(columns: IndexedSeq[StructField]) {
  import ExactStats._

  private val ordinals: Map[String, Int] = columns.map(PhysicalSchema.physicalName).zipWithIndex.toMap

  /** The facts of one file, or None when its statistics have no (integral) numRecords. */
  def parse(json: String): Option[Facts] = if (json == null) None else Try {
    val p = ActionCodec.mapper.getFactory.createParser(json)
    try {
      val facts = new Facts(columns.length)
      // Without columns only numRecords is needed: stop there (a count(*) over a million files parses no more).
      def done = columns.isEmpty && facts.numRecords >= 0
      if (p.nextToken() == JsonToken.START_OBJECT) while (!done && p.nextToken() == JsonToken.FIELD_NAME) {
        val name = p.currentName()
        val t = p.nextToken()
        name match {
          case "numRecords" if t == JsonToken.VALUE_NUMBER_INT => facts.numRecords = p.getLongValue
          case "tightBounds" if t == JsonToken.VALUE_TRUE || t == JsonToken.VALUE_FALSE =>
            facts.tightBounds = Some(t == JsonToken.VALUE_TRUE)
          case "nullCount" | "minValues" | "maxValues" if t == JsonToken.START_OBJECT => section(p, name, facts)
          case _ => p.skipChildren()
        }
      }
      if (facts.numRecords < 0) None else Some(facts)
    } finally p.close()
  }.getOrElse(None)

  private def section(p: JsonParser, name: String, facts: Facts): Unit =
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      val i = ordinals.getOrElse(p.currentName(), -1)
      val t = p.nextToken()
      if (i < 0) p.skipChildren()
      else name match {
        case "nullCount" => if (t == JsonToken.VALUE_NUMBER_INT) facts.nullCounts(i) = p.getLongValue else p.skipChildren()
        case "minValues" => facts.mins(i) = bound(p, t, columns(i).dataType)
        case _ => facts.maxs(i) = bound(p, t, columns(i).dataType)
      }
    }

  /** A bound as Catalyst's value, or null when it is absent or cannot be exact for this type. */
  private def bound(p: JsonParser, t: JsonToken, dt: DataType): Any = {
    val v: Any = Try[Any](dt match {
      case ByteType | ShortType | IntegerType | LongType if t == JsonToken.VALUE_NUMBER_INT &&
        p.getNumberType != JsonParser.NumberType.BIG_INTEGER =>
        val l = p.getLongValue
        dt match {
          case ByteType if l.isValidByte => l.toByte
          case ShortType if l.isValidShort => l.toShort
          case IntegerType if l.isValidInt => l.toInt
          case LongType => l
          case _ => null
        }
      case BooleanType if t == JsonToken.VALUE_TRUE || t == JsonToken.VALUE_FALSE => t == JsonToken.VALUE_TRUE
      case DateType if t == JsonToken.VALUE_STRING =>
        LocalDate.parse(p.getText, DateTimeFormatter.ISO_LOCAL_DATE).toEpochDay.toInt
      case d: DecimalType if boundedDecimal(d) &&
        (t == JsonToken.VALUE_NUMBER_INT || t == JsonToken.VALUE_NUMBER_FLOAT) =>
        // The exact text of the number (never through a double), at the column's scale without rounding.
        val exact = p.getDecimalValue.setScale(d.scale, java.math.RoundingMode.UNNECESSARY)
        val v = Decimal(exact)
        if (v.changePrecision(d.precision, d.scale)) v else null
      case _ => null
    }).getOrElse(null)
    p.skipChildren()
    v
  }
}

object ExactStats {
  /** Types whose statistics bounds are exact (see the class). */
  def exactBounds(dt: DataType): Boolean = dt match {
    case ByteType | ShortType | IntegerType | LongType | DateType | BooleanType => true
    case d: DecimalType => boundedDecimal(d)
    case _ => false
  }

  private def boundedDecimal(d: DecimalType): Boolean = d.precision <= 15

  /**
   * One file's statistics for the columns asked for: `numRecords` (stored rows), `tightBounds`,
   * per column its null count (-1 when absent) and bounds (null when absent or not exact).
   */
  final class Facts(n: Int) {
    var numRecords: Long = -1L
    /** As written: absent means tight (PROTOCOL.md), but a file with a deletion vector needs an explicit true. */
    var tightBounds: Option[Boolean] = None
    val nullCounts: Array[Long] = Array.fill(n)(-1L)
    val mins: Array[Any] = new Array[Any](n)
    val maxs: Array[Any] = new Array[Any](n)
  }
}
