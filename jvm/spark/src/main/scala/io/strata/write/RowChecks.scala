package io.strata.write

import io.strata.log.{CheckConstraint, ConstraintViolationException, InvalidTableOperationException}
import io.strata.table.SqlPredicates
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Alias, BasePredicate, BindReferences, BoundReference, Expression,
  Predicate}
import org.apache.spark.sql.catalyst.plans.logical.Project
import org.apache.spark.sql.types.StructType

/**
 * CHECK constraints compiled for DataSource V2 tasks: analyzed once on the driver against the table schema (Spark's
 * analysis resolves columns and functions and coerces types), bound to the row layout the writer receives, and
 * evaluated per row on the executors. A row passes only when every predicate is TRUE (NULL fails, as in Delta).
 * An overwrite by condition (replaceWhere) checks its condition the same way: every written row must match it.
 */
final class RowChecks private (checks: Seq[RowChecks.Compiled]) extends Serializable {
  @transient private lazy val predicates: Array[BasePredicate] = checks.map { c =>
    val p = Predicate.create(c.bound); p.initialize(0); p
  }.toArray

  def isEmpty: Boolean = checks.isEmpty

  def check(row: InternalRow): Unit = {
    var i = 0
    while (i < predicates.length) {
      if (!predicates(i).eval(row)) throw violation(checks(i), row)
      i += 1
    }
  }

  private def violation(c: RowChecks.Compiled, row: InternalRow): ConstraintViolationException = {
    val values = c.columns.map { case (name, ordinal, dataType) =>
      val value = if (row.isNullAt(ordinal)) null
        else org.apache.spark.sql.catalyst.CatalystTypeConverters.convertToScala(row.get(ordinal, dataType), dataType)
      s"$name = $value"
    }
    c.replaceWhere match {
      case Some(p) => ConstraintViolationException("STRATA_REPLACE_WHERE_MISMATCH",
        s"Written rows must match replaceWhere '$p'; a row does not: ${values.mkString(", ")}")
      case None => ConstraintViolationException("STRATA_CHECK_CONSTRAINT_VIOLATION",
        Map("constraint" -> c.name, "values" -> values.mkString(", ")))
    }
  }
}

object RowChecks {
  /** `name`: the constraint, or the condition of `replaceWhere`; the error names the row's values of `columns`. */
  private final case class Compiled(name: String, replaceWhere: Option[String], bound: Expression,
                                    columns: Seq[(String, Int, org.apache.spark.sql.types.DataType)])

  val none: RowChecks = new RowChecks(Nil)

  /**
   * Compiles `constraints`, and the condition of an overwrite by condition (`replaceWhere`, SQL), over rows of
   * `schema`; a predicate that does not analyze names the constraint. The replaceWhere message is the V1 path's.
   */
  def compile(spark: SparkSession, schema: StructType, constraints: Seq[CheckConstraint],
              replaceWhere: Option[String] = None): RowChecks = {
    val checks = constraints.map(c => (c.toString, c.predicate, None)) ++
      replaceWhere.map(p => (s"replaceWhere '$p'", p, Some(p)))
    if (checks.isEmpty) none else {
      val empty = spark.createDataFrame(java.util.Collections.emptyList[Row](), schema)
      new RowChecks(checks.map { case (c, predicate, replaced) =>
        val analyzed = try SqlPredicates.evaluable(empty.selectExpr(predicate).queryExecution.analyzed) catch {
          case e: Exception => throw InvalidTableOperationException("STRATA_INVALID_CONSTRAINT",
            s"$c cannot be checked against the table's columns: ${e.getMessage.linesIterator.next()}")
        }
        val (expr, input) = analyzed match {
          case Project(Seq(Alias(e, _)), child) => (e, child.output)
          case Project(Seq(e), child) => (e, child.output)
          case other => throw new IllegalStateException(s"Unexpected plan for $c: $other")
        }
        if (expr.dataType != org.apache.spark.sql.types.BooleanType) throw InvalidTableOperationException(
          "STRATA_INVALID_CONSTRAINT",
          s"$c is not a condition: its type is ${expr.dataType.simpleString}, not boolean.")
        val bound = BindReferences.bindReference(expr, input)
        val columns = bound.collect { case b: BoundReference => (schema(b.ordinal).name, b.ordinal, b.dataType) }.distinct
        Compiled(c, replaced, bound, columns)
      })
    }
  }
}
