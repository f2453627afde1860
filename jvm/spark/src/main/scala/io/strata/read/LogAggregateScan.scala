package io.strata.read

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.connector.expressions.NamedReference
import org.apache.spark.sql.connector.expressions.aggregate.{AggregateFunc, Aggregation, Count, CountStar, Max, Min}
import org.apache.spark.sql.connector.read.LocalScan
import org.apache.spark.sql.types.StructType

/**
 * A catalog read's aggregate answered from the log ([[LogAggregation]]): the rows Spark's aggregate push-down asked
 * for (grouping columns, then the aggregates), already computed. A `LocalScan`, so Spark reads no file; with the
 * session extension, [[LogAggregateStrategy]] plans it as a [[LogAggregateExec]] that names it in EXPLAIN.
 */
final class LogAggregateScan(val answer: LogAggregation.Answer) extends LocalScan {
  override def readSchema(): StructType = answer.schema
  override def rows(): Array[InternalRow] = answer.rows.toArray
  override def description(): String = answer.description
}

object LogAggregateScan {
  /** The scan answering `aggregation` over `index` with the pushed `filters`, when the log can answer it exactly. */
  def pushed(index: LogFileIndex, filters: Seq[Expression], aggregation: Aggregation): Option[LogAggregateScan] = {
    def column(e: org.apache.spark.sql.connector.expressions.Expression): Option[String] = e match {
      case r: NamedReference if r.fieldNames.length == 1 => Some(r.fieldNames.head)
      case _ => None
    }
    val groupBy = aggregation.groupByExpressions.toSeq.map(column)
    val aggregates = aggregation.aggregateExpressions.toSeq.map {
      case _: CountStar => Some(LogAggregate.CountRows)
      case c: Count if !c.isDistinct => column(c.column).map(LogAggregate.Count)
      case m: Min => column(m.column).map(LogAggregate.Min)
      case m: Max => column(m.column).map(LogAggregate.Max)
      case _: AggregateFunc => None
    }
    if (groupBy.exists(_.isEmpty) || aggregates.exists(_.isEmpty)) None
    else LogAggregation.answer(index, filters, groupBy.flatten, aggregates.flatten).map(new LogAggregateScan(_))
  }
}
