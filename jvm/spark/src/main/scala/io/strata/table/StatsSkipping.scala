package io.strata.table

import java.time.{LocalDate, LocalDateTime, OffsetDateTime, ZoneOffset}

import com.fasterxml.jackson.databind.JsonNode
import io.strata.log.ActionCodec
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

import scala.util.Try

/**
 * File skipping from the log's per-file statistics (PROTOCOL.md, "Per-file Statistics"). Spark's data filters are
 * rewritten into a predicate over a file's statistics row `[numRecords, min_1, max_1, nullCount_1, min_2, ...]`
 * (the shape of Delta's data skipping): `a = v` becomes `min_a <= v AND max_a >= v`, `a < v` becomes `min_a < v`,
 * `a IS NULL` becomes `nullCount_a > 0`, and so on. Anything the rewrite does not understand becomes TRUE, and a
 * missing statistic is NULL, so a file is skipped only when the rewritten predicate is definitely FALSE: skipping can
 * never drop a file holding a matching row. Bounds are treated as loose (strings truncated, timestamps in
 * milliseconds), which keeps them valid for files written by Strata, delta-spark and delta-rs alike.
 */
final class StatsSkipping private (dataSchema: StructType, dataFilters: Seq[Expression]) {
  import StatsSkipping.Indexed

  private var columns = Vector.empty[Indexed]
  private def column(a: AttributeReference): Option[Indexed] =
    dataSchema.fields.find(_.name.equalsIgnoreCase(a.name)).filter(f => StatsSkipping.supported(f.dataType)).map { f =>
      columns.find(_.field.name == f.name).getOrElse {
        val c = Indexed(f, 1 + 3 * columns.size)
        columns :+= c
        c
      }
    }

  private val numRecords = BoundReference(0, LongType, nullable = true)
  private def min(c: Indexed) = BoundReference(c.ordinal, c.field.dataType, nullable = true)
  private def max(c: Indexed) = BoundReference(c.ordinal + 1, c.field.dataType, nullable = true)
  private def nulls(c: Indexed) = BoundReference(c.ordinal + 2, LongType, nullable = true)
  /** The file has a non-null value of `c` (a comparison can only be true for one). */
  private def hasValues(c: Indexed) = LessThan(nulls(c), numRecords)

  private object Col {
    def unapply(e: Expression): Option[Indexed] = e match {
      case a: AttributeReference => column(a)
      case _ => None
    }
  }
  private object Lit {
    def unapply(e: Expression): Option[Literal] = e match {
      case l: Literal if l.value != null => Some(l)
      case _ => None
    }
  }

  private val True = Literal.TrueLiteral

  private def compare(c: Indexed, v: Literal, op: String): Expression = {
    val bound = op match {
      case "=" => And(LessThanOrEqual(min(c), v), GreaterThanOrEqual(max(c), v))
      case "<" => LessThan(min(c), v)
      case "<=" => LessThanOrEqual(min(c), v)
      case ">" => GreaterThan(max(c), v)
      case ">=" => GreaterThanOrEqual(max(c), v)
    }
    And(bound, hasValues(c))
  }

  private def flip(op: String) = op match { case "<" => ">"; case "<=" => ">="; case ">" => "<"; case ">=" => "<="; case o => o }

  private def rewrite(e: Expression): Expression = e match {
    case And(l, r) => And(rewrite(l), rewrite(r))
    case Or(l, r) => Or(rewrite(l), rewrite(r))
    case Not(IsNull(Col(c))) => hasValues(c)
    case Not(IsNotNull(Col(c))) => GreaterThan(nulls(c), Literal(0L))
    case IsNull(Col(c)) => GreaterThan(nulls(c), Literal(0L))
    case IsNotNull(Col(c)) => hasValues(c)
    case EqualTo(Col(c), Lit(v)) => compare(c, v, "=")
    case EqualTo(Lit(v), Col(c)) => compare(c, v, "=")
    case EqualNullSafe(Col(c), Lit(v)) => compare(c, v, "=")
    case EqualNullSafe(Lit(v), Col(c)) => compare(c, v, "=")
    case LessThan(Col(c), Lit(v)) => compare(c, v, "<")
    case LessThan(Lit(v), Col(c)) => compare(c, v, flip("<"))
    case LessThanOrEqual(Col(c), Lit(v)) => compare(c, v, "<=")
    case LessThanOrEqual(Lit(v), Col(c)) => compare(c, v, flip("<="))
    case GreaterThan(Col(c), Lit(v)) => compare(c, v, ">")
    case GreaterThan(Lit(v), Col(c)) => compare(c, v, flip(">"))
    case GreaterThanOrEqual(Col(c), Lit(v)) => compare(c, v, ">=")
    case GreaterThanOrEqual(Lit(v), Col(c)) => compare(c, v, flip(">="))
    case In(Col(c), values) if values.nonEmpty && values.size <= 200 && values.forall(_.isInstanceOf[Literal]) =>
      values.collect { case Lit(v) => compare(c, v, "="): Expression }.reduceOption(Or).getOrElse(Literal.FalseLiteral)
    case InSet(Col(c), set) if set.nonEmpty && set.size <= 200 =>
      set.toSeq.filter(_ != null).map(v => compare(c, Literal(v, c.field.dataType), "="): Expression)
        .reduceOption(Or).getOrElse(Literal.FalseLiteral)
    case _ => True
  }

  /**
   * A predicate over the statistics row that is TRUE only when every row of the file matches (the converse of
   * [[rewrite]]): `a < v` needs `max_a < v` and no NULL `a`. Bounds stay safe here: a widened maximum or a truncated
   * minimum only makes the test stricter. Equality needs exact bounds, so it is used for integral, date and decimal
   * columns only. Anything else is FALSE.
   */
  private def rewriteAll(e: Expression): Expression = {
    def noNulls(c: Indexed) = EqualTo(nulls(c), Literal(0L))
    def exact(c: Indexed) = c.field.dataType match {
      case ByteType | ShortType | IntegerType | LongType | DateType | _: DecimalType => true
      case _ => false
    }
    def all(c: Indexed, v: Literal, op: String): Expression = And(noNulls(c), op match {
      case "=" if exact(c) => And(EqualTo(min(c), v), EqualTo(max(c), v))
      case "<" => LessThan(max(c), v)
      case "<=" => LessThanOrEqual(max(c), v)
      case ">" => GreaterThan(min(c), v)
      case ">=" => GreaterThanOrEqual(min(c), v)
      case _ => Literal.FalseLiteral
    })
    e match {
      case And(l, r) => And(rewriteAll(l), rewriteAll(r))
      case Or(l, r) => Or(rewriteAll(l), rewriteAll(r))
      case IsNull(Col(c)) => EqualTo(nulls(c), numRecords)
      case IsNotNull(Col(c)) => noNulls(c)
      case EqualTo(Col(c), Lit(v)) => all(c, v, "=")
      case EqualTo(Lit(v), Col(c)) => all(c, v, "=")
      case LessThan(Col(c), Lit(v)) => all(c, v, "<")
      case LessThan(Lit(v), Col(c)) => all(c, v, flip("<"))
      case LessThanOrEqual(Col(c), Lit(v)) => all(c, v, "<=")
      case LessThanOrEqual(Lit(v), Col(c)) => all(c, v, flip("<="))
      case GreaterThan(Col(c), Lit(v)) => all(c, v, ">")
      case GreaterThan(Lit(v), Col(c)) => all(c, v, flip(">"))
      case GreaterThanOrEqual(Col(c), Lit(v)) => all(c, v, ">=")
      case GreaterThanOrEqual(Lit(v), Col(c)) => all(c, v, flip(">="))
      case _ => Literal.FalseLiteral
    }
  }

  private val predicate: Expression = dataFilters.map(rewrite).reduceOption(And).getOrElse(True)
  private val allPredicate: Expression = dataFilters.map(rewriteAll).reduceOption(And).getOrElse(True)
  private val referenced = columns

  def isEmpty: Boolean = referenced.isEmpty

  /** False only when the file's statistics prove that no row of it matches the filters. */
  def mayMatch(stats: Option[String]): Boolean = referenced.isEmpty || (stats match {
    case None => true
    case Some(json) =>
      val row = Try(statsRow(ActionCodec.mapper.readTree(json))).getOrElse(null)
      row == null || predicate.eval(row) != false
  })

  /** True only when the file's statistics prove that every row of it matches the filters. */
  def mustMatchAll(stats: Option[String]): Boolean = dataFilters.isEmpty || (stats match {
    case None => false
    case Some(json) =>
      val row = Try(statsRow(ActionCodec.mapper.readTree(json))).getOrElse(null)
      row != null && Try(allPredicate.eval(row) == true).getOrElse(false)
  })

  private def statsRow(root: JsonNode): InternalRow = {
    val values = new Array[Any](1 + 3 * referenced.size)
    values(0) = Option(root.get("numRecords")).filter(_.isNumber).map(_.asLong: Any).orNull
    referenced.foreach { c =>
      def at(section: String) = Option(root.get(section)).flatMap(s => Option(s.get(PhysicalSchema.physicalName(c.field)))).filterNot(_.isNull)
      values(c.ordinal) = at("minValues").flatMap(StatsSkipping.value(_, c.field.dataType, upper = false)).orNull
      values(c.ordinal + 1) = at("maxValues").flatMap(StatsSkipping.value(_, c.field.dataType, upper = true)).orNull
      values(c.ordinal + 2) = at("nullCount").filter(_.isNumber).map(_.asLong: Any).orNull
    }
    new GenericInternalRow(values)
  }
}

object StatsSkipping {
  /** A column with statistics: `ordinal` is where its minimum sits in the stats row (maximum +1, null count +2). */
  private final case class Indexed(field: StructField, ordinal: Int)

  def apply(dataSchema: StructType, dataFilters: Seq[Expression]): StatsSkipping =
    new StatsSkipping(dataSchema, dataFilters)

  private def supported(dt: DataType): Boolean = dt match {
    case ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType | DateType | TimestampType |
         TimestampNTZType => true
    case _: DecimalType => true
    case s: StringType => s == StringType // binary (UTF-8 byte) ordering only; not collated strings
    case _ => false
  }

  private val MilliInMicros = 1000L

  /** A statistics value as Catalyst's internal value of `dt`; None when it cannot serve as a bound. */
  private def value(node: JsonNode, dt: DataType, upper: Boolean): Option[Any] = Try[Option[Any]] {
    dt match {
      case ByteType if node.isIntegralNumber => Some(node.asLong.toByte)
      case ShortType if node.isIntegralNumber => Some(node.asLong.toShort)
      case IntegerType if node.isIntegralNumber => Some(node.asLong.toInt)
      case LongType if node.isIntegralNumber => Some(node.asLong)
      case FloatType | DoubleType if node.isNumber =>
        val d = node.asDouble
        if (d.isNaN) None else Some(if (dt == FloatType) d.toFloat else d)
      case d: DecimalType if node.isNumber => Some(Decimal(node.decimalValue(), d.precision, d.scale))
      case StringType if node.isTextual => Some(UTF8String.fromString(node.asText))
      case DateType if node.isTextual => Some(LocalDate.parse(node.asText).toEpochDay.toInt)
      case TimestampType if node.isTextual =>
        val i = OffsetDateTime.parse(node.asText).toInstant
        val micros = Math.addExact(Math.multiplyExact(i.getEpochSecond, 1000000L), i.getNano / 1000L)
        // Writers keep milliseconds (some truncating the maximum): widen the maximum to the end of its millisecond.
        Some(if (upper) micros + MilliInMicros - 1 else micros)
      case TimestampNTZType if node.isTextual =>
        val i = LocalDateTime.parse(node.asText).toInstant(ZoneOffset.UTC)
        val micros = Math.addExact(Math.multiplyExact(i.getEpochSecond, 1000000L), i.getNano / 1000L)
        Some(if (upper) micros + MilliInMicros - 1 else micros)
      case _ => None
    }
  }.getOrElse(None)
}
