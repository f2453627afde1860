package io.strata.log

/**
 * A column whose statistics a query needs: its path in the statistics objects (`Seq("a")`, or `Seq("s", "b")` for
 * field `b` of struct `s`; physical names) and how its values are read ([[StatsColumn.Kind]]).
 */
final case class StatsColumn(path: Seq[String], kind: StatsColumn.Kind)

object StatsColumn {
  /**
   * How a column's statistics values are read, engine-neutral. The values a parse yields (null = absent or not
   * exactly representable, which only costs skipping or sends an aggregate to the data):
   *  - [[Integral]] (`bits` 8/16/32/64): a `java.lang.Long` within the type's range, from a JSON integer only;
   *  - [[Floating]]: a `java.lang.Double` (never NaN);
   *  - [[Decimal]]: a `java.math.BigDecimal` at exactly the column's scale and within its precision (never rounded);
   *  - [[Str]]: the string's UTF-8 bytes (`Array[Byte]`), as written (possibly truncated: a loose bound);
   *  - [[Date]]: days since the epoch (`java.lang.Long`);
   *  - [[Timestamp]] / [[TimestampNtz]]: microseconds since the epoch (`java.lang.Long`) of the written text, which
   *    writers keep in milliseconds (a reader widens the maximum);
   *  - [[Bool]]: a `java.lang.Boolean`;
   *  - [[NullsOnly]]: no bounds (types without min/max statistics), the null count only.
   */
  sealed trait Kind
  final case class Integral(bits: Int) extends Kind
  final case class Floating(single: Boolean) extends Kind
  final case class Decimal(precision: Int, scale: Int) extends Kind
  case object Str extends Kind
  case object Date extends Kind
  case object Timestamp extends Kind
  case object TimestampNtz extends Kind
  case object Bool extends Kind
  case object NullsOnly extends Kind
}
