package io.strata

import io.strata.config.WriteConf
import io.strata.procedures.OptimizeSql
import org.apache.spark.sql.catalyst.{FunctionIdentifier, TableIdentifier}
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.parser.{ParameterContext, ParserInterface}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, MergeIntoTable}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{DataType, StructType}

/**
 * Spark's parser plus delta-spark's `OPTIMIZE` statement ([[OptimizeSql]]: parsed as the CALL of the strata
 * catalog's optimize procedure), and delta-spark's session conf `spark.databricks.delta.schema.autoMerge.enabled`
 * making every MERGE one `WITH SCHEMA EVOLUTION`, as it does there. It has to be decided here: Spark resolves a
 * MERGE's `*` actions in the same analyzer pass that resolves its target, before any injected rule could see it.
 * Everything else goes to Spark's parser unchanged; without a strata catalog in the session, OPTIMIZE does too
 * (Spark's syntax error).
 */
final class StrataSqlParser(delegate: ParserInterface) extends ParserInterface {
  private def call(sql: String): Option[String] =
    if (!sql.trim.regionMatches(true, 0, "OPTIMIZE", 0, 8)) None
    else StrataSqlParser.catalog.flatMap(c => OptimizeSql.toCall(sql, c))

  override def parsePlan(sql: String): LogicalPlan = autoMerge(delegate.parsePlan(call(sql).getOrElse(sql)))
  override def parsePlanWithParameters(sql: String, parameters: ParameterContext): LogicalPlan =
    autoMerge(delegate.parsePlanWithParameters(call(sql).getOrElse(sql), parameters))

  // An invalid value of the conf fails the statement with the error every write gives for it.
  private def mergeSchemaConf: Boolean = WriteConf.internal(k => Option(SQLConf.get.getConfString(k, null)), Map.empty)
    .mergeSchema

  private def autoMerge(plan: LogicalPlan): LogicalPlan =
    if (!plan.exists(_.isInstanceOf[MergeIntoTable]) || !mergeSchemaConf) plan
    else plan.transform { case m: MergeIntoTable if !m.withSchemaEvolution => m.copy(withSchemaEvolution = true) }

  override def parseExpression(sql: String): Expression = delegate.parseExpression(sql)
  override def parseTableIdentifier(sql: String): TableIdentifier = delegate.parseTableIdentifier(sql)
  override def parseFunctionIdentifier(sql: String): FunctionIdentifier = delegate.parseFunctionIdentifier(sql)
  override def parseMultipartIdentifier(sql: String): Seq[String] = delegate.parseMultipartIdentifier(sql)
  override def parseQuery(sql: String): LogicalPlan = delegate.parseQuery(sql)
  override def parseRoutineParam(sql: String): StructType = delegate.parseRoutineParam(sql)
  override def parseTableSchema(sql: String): StructType = delegate.parseTableSchema(sql)
  override def parseDataType(sql: String): DataType = delegate.parseDataType(sql)
}

object StrataSqlParser {
  private val CatalogClass = "io.strata.catalog.StrataCatalog"

  /** The session's strata catalog: `strata` when it is one, else the first configured (as Python's helpers pick). */
  def catalog: Option[String] = {
    val catalogs = SQLConf.get.getAllConfs.collect {
      case (k, CatalogClass) if k.startsWith("spark.sql.catalog.") && !k.drop(18).contains('.') => k.drop(18)
    }.toSeq.sorted
    if (catalogs.contains("strata")) Some("strata") else catalogs.headOption
  }
}
