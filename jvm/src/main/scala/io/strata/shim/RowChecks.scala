package io.strata.shim

import io.strata.log.{CheckConstraint, ConstraintViolationException, InvalidTableOperationException}
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Alias, BasePredicate, BindReferences, BoundReference, Expression, Predicate}
import org.apache.spark.sql.catalyst.plans.logical.Project
import org.apache.spark.sql.types.StructType

/**
 * CHECK constraints compiled for DataSource V2 tasks: analyzed once on the driver against the table schema (Spark's
 * analysis resolves columns and functions and coerces types), bound to the row layout the writer receives, and
 * evaluated per row on the executors. A row passes only when every predicate is TRUE (NULL fails, as in Delta).
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
    new ConstraintViolationException(s"${c.constraint} violated by row with values: ${values.mkString(", ")}")
  }
}

object RowChecks {
  private final case class Compiled(constraint: CheckConstraint, bound: Expression,
                                    columns: Seq[(String, Int, org.apache.spark.sql.types.DataType)])

  val none: RowChecks = new RowChecks(Nil)

  /** Compiles `constraints` over rows of `schema`; a predicate that does not analyze names the constraint. */
  def compile(spark: SparkSession, schema: StructType, constraints: Seq[CheckConstraint]): RowChecks =
    if (constraints.isEmpty) none else {
      val session = SparkInternals.classic(spark)
      val empty = session.createDataFrame(java.util.Collections.emptyList[Row](), schema)
      new RowChecks(constraints.map { c =>
        val analyzed = try empty.selectExpr(c.predicate).queryExecution.analyzed catch {
          case e: Exception => throw new InvalidTableOperationException(
            s"$c cannot be checked against the table's columns: ${e.getMessage.linesIterator.next()}")
        }
        val (expr, input) = analyzed match {
          case Project(Seq(Alias(e, _)), child) => (e, child.output)
          case Project(Seq(e), child) => (e, child.output)
          case other => throw new IllegalStateException(s"Unexpected plan for $c: $other")
        }
        if (expr.dataType != org.apache.spark.sql.types.BooleanType) throw new InvalidTableOperationException(
          s"$c is not a condition: its type is ${expr.dataType.simpleString}, not boolean.")
        val bound = BindReferences.bindReference(expr, input)
        val columns = bound.collect { case b: BoundReference => (schema(b.ordinal).name, b.ordinal, b.dataType) }.distinct
        Compiled(c, bound, columns)
      })
    }
}
