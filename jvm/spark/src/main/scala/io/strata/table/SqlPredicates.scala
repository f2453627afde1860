package io.strata.table

import io.strata.log.InvalidTableOperationException
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, CommonExpressionRef, Expression, Predicate, With}
import org.apache.spark.sql.catalyst.optimizer.ReplaceExpressions
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LocalRelation, LogicalPlan, Project}
import org.apache.spark.sql.catalyst.trees.TreePattern
import org.apache.spark.sql.strata.SparkInternals
import org.apache.spark.sql.types.StructType

/**
 * SQL predicates over a table's columns (replaceWhere, OPTIMIZE's where, DELETE conditions, CHECK constraints):
 * parsed and analyzed by Spark, evaluated by Strata itself on rows or on the log's partition values.
 */
object SqlPredicates {
  /** The column names a SQL predicate refers to (parsed, not resolved). */
  def referencedColumns(predicate: String): Seq[String] =
    parse(predicate).collect { case a: UnresolvedAttribute => a.nameParts.mkString(".") }.distinct

  private def parse(predicate: String): Expression =
    try SparkInternals.parseExpression(SparkSession.active, predicate) catch {
      case e: Exception => throw InvalidTableOperationException("STRATA_INVALID_PREDICATE",
        Map("predicate" -> predicate, "reason" -> e.getMessage.linesIterator.next()))
    }

  /**
   * An analyzed plan whose expressions Strata evaluates itself (partition predicates, CHECK constraints, read sets),
   * made evaluable the way the optimizer makes them before any execution: RuntimeReplaceable expressions (extract(),
   * nvl(), BETWEEN, ...) replaced by the expressions they stand for (Spark's ReplaceExpressions rule), then the
   * common subexpressions some replacements share (`With`, as BETWEEN's) inlined: what the optimizer's
   * RewriteWithExpression computes once in a projection below, computed at each use. Left in, either fails when
   * evaluated (`assertion failed` in RuntimeReplaceable.eval, `Cannot evaluate expression: with(...)`).
   */
  def evaluable(analyzed: LogicalPlan): LogicalPlan =
    ReplaceExpressions(analyzed).transformAllExpressions {
      case e if e.containsPattern(TreePattern.WITH_EXPRESSION) => inlineWith(e)
    }

  private def inlineWith(e: Expression): Expression = e.transformUp {
    case With(child, defs) =>
      val byId = defs.map(d => d.id -> d.child).toMap
      child.transformUp { case r: CommonExpressionRef if byId.contains(r.id) => byId(r.id) }
  }

  /** [[evaluable]] for one analyzed (resolved) expression. */
  def evaluable(analyzed: Expression): Expression =
    if (!analyzed.containsAnyPattern(TreePattern.RUNTIME_REPLACEABLE, TreePattern.WITH_EXPRESSION)) analyzed
    else evaluable(Project(Seq(Alias(analyzed, "e")()), LocalRelation(analyzed.references.toSeq))) match {
      case Project(Seq(Alias(e, _)), _) => e
      case other => throw new IllegalStateException(s"Unexpected plan $other")
    }

  /**
   * A predicate over partition columns compiled once and evaluated on the log's partition values (strings), with
   * Spark's own analysis (type coercion) and expression evaluation.
   */
  def partitionMatcher(spark: SparkSession, predicate: String, partitionSchema: StructType)
      : Map[String, Option[String]] => Boolean = {
    val condition = analyzed(spark, predicate, partitionSchema, forEvaluation = true)
    val bound = Predicate.create(condition._1, condition._2)
    val zone = SparkInternals.sessionZone(spark)
    values => bound.eval(CatalystValues.partitionRow(partitionSchema, values, zone))
  }

  /** A predicate over `schema` as Spark renders it once analyzed (`(p = 1)`), as delta-spark records predicates. */
  def predicateSql(spark: SparkSession, predicate: String, schema: StructType): String =
    analyzed(spark, predicate, schema, forEvaluation = false)._1.sql

  /** The analyzed predicate and its input; `forEvaluation`: made [[evaluable]] by Strata's own evaluation. */
  private def analyzed(spark: SparkSession, predicate: String, schema: StructType, forEvaluation: Boolean)
      : (Expression, Seq[Attribute]) = {
    val probe = spark.createDataFrame(spark.sparkContext.emptyRDD[Row], schema).where(predicate)
    val plan = probe.queryExecution.analyzed
    (if (forEvaluation) evaluable(plan) else plan).collectFirst {
      case Filter(c, child) => (c, child.output)
    }.getOrElse(throw new IllegalStateException(s"Could not analyze predicate '$predicate'"))
  }
}
