package io.strata.table

import io.strata.table.PartitionValues
import org.apache.spark.sql.catalyst.expressions.{Literal => CatalystLiteral}
import org.apache.spark.sql.connector.expressions.{Expression, Literal}
import org.apache.spark.sql.connector.util.V2ExpressionSQLBuilder
import org.apache.spark.sql.types.{DecimalType, TimestampType}

import scala.util.control.NonFatal

/**
 * DataSource V2 predicates (overwrite by filter, static partition overwrite) as SQL that Spark parses back to the
 * same values in any session time zone. Spark's own `Predicate.toString` prints a literal's internal value (a date
 * as days, `d = 19723`), which does not even analyze.
 *  - dates, timestamp_ntz, strings (quotes escaped), binary, floats, booleans: Catalyst's `Literal.sql`;
 *  - timestamps: ISO-8601 in UTC (`TIMESTAMP '2024-11-03T05:30:00.000000Z'`): Catalyst renders them in the session
 *    zone without an offset, which names two instants in a DST fall-back hour;
 *  - decimals: `CAST('12.50' AS DECIMAL(10,2))`, plain digits and the literal's own type;
 *  - prefix, suffix and substring tests (`v LIKE 'a%'`): `startswith`, `endswith`, `contains`;
 *  - EXTRACT fields in Spark's spelling (`DAY_OF_WEEK` as `DAYOFWEEK_ISO`).
 */
object V2PredicateSql {
  /** The SQL of `expression`, or None when it has a part Spark's SQL builder cannot render. */
  def apply(expression: Expression): Option[String] =
    try Some(new Builder().build(expression)) catch { case NonFatal(_) => None }

  private val extractFields = Map("DAY_OF_WEEK" -> "DAYOFWEEK_ISO", "DAY_OF_YEAR" -> "DOY", "YEAR_OF_WEEK" -> "YEAROFWEEK")

  private final class Builder extends V2ExpressionSQLBuilder {
    override protected def visitLiteral(literal: Literal[_]): String = (literal.value(), literal.dataType()) match {
      case (null, t) => s"CAST(NULL AS ${t.sql})"
      case (micros: java.lang.Long, TimestampType) => s"TIMESTAMP '${PartitionValues.formatTimestamp(micros.longValue)}'"
      case (d: org.apache.spark.sql.types.Decimal, t: DecimalType) =>
        s"CAST('${PartitionValues.formatDecimal(d.toJavaBigDecimal)}' AS ${t.sql})"
      case (v, t) => CatalystLiteral(v, t).sql
    }
    // Spark renders these as `LIKE '...%' ESCAPE '\'`, which its own parser reads as an unterminated string.
    override protected def visitStartsWith(l: String, r: String): String = s"startswith($l, $r)"
    override protected def visitEndsWith(l: String, r: String): String = s"endswith($l, $r)"
    override protected def visitContains(l: String, r: String): String = s"contains($l, $r)"
    // Spark translates dayofweek(), weekday(), dayofyear() and yearofweek() to these ANSI field names, which its own
    // EXTRACT does not know: it spells them DAYOFWEEK_ISO (Monday = 1, as the V2 field), DOY and YEAROFWEEK.
    override protected def visitExtract(field: String, source: String): String =
      super.visitExtract(V2PredicateSql.extractFields.getOrElse(field, field), source)
  }
}
