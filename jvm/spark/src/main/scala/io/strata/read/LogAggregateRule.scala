package io.strata.read

import io.strata.config.ReadConf
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, AttributeReference, ExprId, Expression, Literal,
  NamedExpression, SubqueryExpression}
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, Complete, Count, Max, Min}
import org.apache.spark.sql.catalyst.planning.PhysicalOperation
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, LogicalPlan, Project}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}

/**
 * Path reads' aggregates answered from the log (the optimizer rule of `StrataSessionExtensions`; catalog reads get
 * the same through their scan builder, [[LogAggregateScan]]): an `Aggregate` of count(*), count / min / max of
 * columns, grouped by partition columns, over a Strata file relation with filters on partition columns only, becomes
 * a [[LogAggregateRelation]] holding the rows [[LogAggregation]] computed, when the log can answer exactly. It runs
 * once, after the operator optimizations (filters are pushed and projections collapsed by then). Off with
 * `spark.strata.read.aggregatePushdown.enabled=false`.
 */
final case class LogAggregateRule(spark: SparkSession) extends Rule[LogicalPlan] {
  // Never in a streaming query: its aggregates keep state across micro-batches (and a batch is not a snapshot).
  override def apply(plan: LogicalPlan): LogicalPlan =
    if (plan.isStreaming || !plan.exists(_.isInstanceOf[Aggregate])) plan
    else plan.transformDown { case a: Aggregate => rewrite(a).getOrElse(a) }

  private def rewrite(agg: Aggregate): Option[LogicalPlan] = agg.child match {
    case PhysicalOperation(projects, filters, rel: LogicalRelation) if !rel.isStreaming => (rel.relation match {
      case fs: HadoopFsRelation => Some(fs.location)
      case _ => None
    }) match {
      // Only over a whole snapshot's index: one pruned by filters ([[PruneLogFileIndex]]) lacks the files they left out.
      case Some(index: LogFileIndex) if index.pruning.isEmpty && !filters.exists(SubqueryExpression.hasSubquery) &&
        ReadConf.aggregatePushdown(spark) => answer(agg, projects, filters, rel, index)
      // The distributed state answers count(*) of the whole table only, from one Spark aggregate of its totals.
      case Some(index: DistributedFileIndex) if filters.isEmpty && ReadConf.aggregatePushdown(spark) =>
        countRows(agg, index)
      case _ => None
    }
    case _ => None
  }

  /**
   * `count(*)` (any number of them, no grouping) over a [[DistributedFileIndex]]: the live rows the job sums from
   * each file's `numRecords` less its deletion vector's cardinality, when every file states them; None otherwise.
   */
  private def countRows(agg: Aggregate, index: DistributedFileIndex): Option[LogicalPlan] = {
    val aggregates = agg.aggregateExpressions.flatMap(_.collect { case e: AggregateExpression => e })
    val onlyCounts = agg.groupingExpressions.isEmpty && aggregates.nonEmpty && aggregates.forall {
      case AggregateExpression(Count(Seq(l: Literal)), Complete, false, None, _) => l.value != null
      case _ => false
    }
    if (!onlyCounts) None else index.stateTotals.rows.map { rows =>
      val count = AttributeReference("count", org.apache.spark.sql.types.LongType, nullable = false)()
      val results = agg.aggregateExpressions.map(_.transform { case _: AggregateExpression => count }
        .asInstanceOf[NamedExpression])
      Project(results, LogAggregateRelation(Seq(count), Seq(InternalRow(rows)),
        s"count(*) from the statistics of ${index.stateTotals.files} files (distributed state)"))
    }
  }

  private def answer(agg: Aggregate, projects: Seq[NamedExpression], filters: Seq[Expression], rel: LogicalRelation,
                     index: LogFileIndex): Option[LogicalPlan] = {
    // Each column the aggregate uses, by the id it has above the projection, as the relation's column name.
    val relationNames: Map[ExprId, String] = rel.output.map(a => a.exprId -> a.name).toMap
    val names: Map[ExprId, String] = projects.flatMap {
      case a: AttributeReference => relationNames.get(a.exprId).map(a.exprId -> _)
      case al @ Alias(a: AttributeReference, _) => relationNames.get(a.exprId).map(al.exprId -> _)
      case _ => None
    }.toMap
    def column(e: Expression): Option[String] = e match {
      case a: Attribute => names.get(a.exprId)
      case _ => None
    }
    val groupAttributes = agg.groupingExpressions.map {
      case a: Attribute if column(a).isDefined => Some(a)
      case _ => None
    }
    val aggregateExpressions = agg.aggregateExpressions.flatMap(_.collect { case e: AggregateExpression => e })
      .distinctBy(_.canonicalized)
    val aggregates = aggregateExpressions.map {
      case AggregateExpression(f, Complete, false, None, _) => f match {
        case Count(Seq(l: Literal)) if l.value != null => Some(LogAggregate.CountRows)
        case Count(Seq(e)) => column(e).map(LogAggregate.Count)
        case Min(e) => column(e).map(LogAggregate.Min)
        case Max(e) => column(e).map(LogAggregate.Max)
        case _ => None
      }
      case _ => None
    }
    if (groupAttributes.exists(_.isEmpty) || aggregates.exists(_.isEmpty)) return None
    LogAggregation.answer(index, filters, groupAttributes.flatten.flatMap(column), aggregates.flatten).map { answer =>
      val aggAttributes = aggregateExpressions.zip(answer.schema.fields.drop(groupAttributes.size)).map {
        case (e, f) => e.canonicalized -> AttributeReference(f.name, e.dataType, f.nullable)()
      }
      val byExpression = aggAttributes.toMap
      val output = groupAttributes.flatten ++ aggAttributes.map(_._2)
      val results = agg.aggregateExpressions.map(_.transform {
        case e: AggregateExpression => byExpression(e.canonicalized)
      }.asInstanceOf[NamedExpression])
      val ordinals = results.map {
        case a: Attribute => output.indexWhere(_.exprId == a.exprId)
        case Alias(a: Attribute, _) => output.indexWhere(_.exprId == a.exprId)
        case _ => -1
      }
      if (ordinals.forall(_ >= 0)) {
        LogAggregateRelation(results.map(_.toAttribute), answer.rows.map(LogAggregateRule.permute(_, ordinals)),
          answer.description)
      } else Project(results, LogAggregateRelation(output, answer.rows, answer.description))
    }
  }
}

object LogAggregateRule {
  /** The row of `row`'s values at `ordinals`. */
  def permute(row: InternalRow, ordinals: Seq[Int]): InternalRow =
    InternalRow.fromSeq(ordinals.map(i => row.get(i, null)))
}
