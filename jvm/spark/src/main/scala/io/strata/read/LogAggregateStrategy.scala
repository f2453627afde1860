package io.strata.read

import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, Cast, NamedExpression}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Project}
import org.apache.spark.sql.execution.{ProjectExec, SparkPlan, SparkStrategy}
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation

/**
 * Plans aggregates answered from the log as a [[LogAggregateExec]] (named in EXPLAIN, no Spark job): a path read's
 * [[LogAggregateRelation]], and a catalog read's [[LogAggregateScan]] with the projection Spark's push-down puts on
 * it (folded in when it only renames columns). Without the session extension a catalog read's scan is still a `LocalScan`,
 * planned by Spark as a local table scan.
 */
object LogAggregateStrategy extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case r: LogAggregateRelation => LogAggregateExec(r.output, r.rows, r.description) :: Nil
    case Project(list, r: DataSourceV2ScanRelation) if r.scan.isInstanceOf[LogAggregateScan] =>
      val answer = r.scan.asInstanceOf[LogAggregateScan].answer
      renames(list, r.output).map { cols =>
        LogAggregateExec(list.map(_.toAttribute), answer.rows.map(LogAggregateRule.permute(_, cols)),
          answer.description): SparkPlan
      }.getOrElse(ProjectExec(list, LogAggregateExec(r.output, answer.rows, answer.description))) :: Nil
    case r: DataSourceV2ScanRelation if r.scan.isInstanceOf[LogAggregateScan] =>
      val answer = r.scan.asInstanceOf[LogAggregateScan].answer
      LogAggregateExec(r.output, answer.rows, answer.description) :: Nil
    case _ => Nil
  }

  /** For a projection that only picks and renames `input` columns (or casts one to its own type), their ordinals. */
  private def renames(list: Seq[NamedExpression], input: Seq[Attribute]): Option[Seq[Int]] = {
    def ordinal(e: org.apache.spark.sql.catalyst.expressions.Expression): Int = e match {
      case a: Attribute => input.indexWhere(_.exprId == a.exprId)
      case Alias(c, _) => ordinal(c)
      case c: Cast if c.child.dataType == c.dataType => ordinal(c.child)
      case _ => -1
    }
    val ordinals = list.map(ordinal)
    if (ordinals.forall(_ >= 0)) Some(ordinals) else None
  }
}
