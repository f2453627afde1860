package io.strata.shim

import org.apache.spark.sql.catalyst.expressions.{Alias, AttributeReference, Expression, Literal}
import org.apache.spark.sql.catalyst.expressions.aggregate.Count
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, Filter, ReplaceData}
import org.apache.spark.sql.sources.BaseRelation

import scala.util.Try

/**
 * Row counts Spark's copy-on-write plans do not report. An UPDATE writes every row of the files it read, updated or
 * not, and Spark keeps no count of the updated ones; so the rows of the rewritten files that match the running
 * statement's condition are counted afterwards (reading only the condition's columns of those files).
 */
object RowLevelCounts {
  /** The rows of `rewritten` matching the condition of the UPDATE running on this thread; None if unknown. */
  def updatedRows(rewritten: BaseRelation): Option[Long] = Try {
    val spark = SparkInternals.activeSession
    val condition: Expression = InputReads.currentPlan().flatMap(_.collectFirst { case r: ReplaceData => r.condition })
      .getOrElse(throw new IllegalStateException("no running row-level statement"))
    val rows = spark.baseRelationToDataFrame(rewritten)
    val byName = rows.queryExecution.analyzed.output.map(a => a.name.toLowerCase -> a).toMap
    val rebound = condition.transform {
      case a: AttributeReference => byName.getOrElse(a.name.toLowerCase,
        throw new IllegalStateException(s"column ${a.name} is not a table column"))
    }
    val count = Aggregate(Nil, Seq(Alias(Count(Literal(1)).toAggregateExpression(), "n")()),
      Filter(rebound, rows.queryExecution.analyzed))
    spark.sessionState.executePlan(count).executedPlan.executeCollect().head.getLong(0)
  }.toOption
}
