package org.apache.spark.sql.strata

import java.net.URI
import java.time.ZoneId

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.{Column, SparkSession}
import org.apache.spark.sql.catalyst.TableIdentifier
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.util.DateTimeUtils
import org.apache.spark.sql.classic.{ColumnConversions, ExpressionUtils, SparkSession => ClassicSession}
import org.apache.spark.sql.classic.ClassicConversions.castToImpl
import org.apache.spark.sql.connector.catalog.CatalogManager

/**
 * The only place Strata reaches into Spark's session internals: the classic (in-JVM) session behind the public
 * `SparkSession` API and its `sessionState`, none of which Spark's public API exposes. This package lives inside
 * `org.apache.spark.sql` so that it may also call `private[sql]` members. Each member is a one-line forwarder; the
 * code that uses it lives in its own package. A Spark upgrade that moves these should need changes here alone.
 */
object SparkInternals {
  /** FileFormatWriter.write takes the classic session; the public API hands out the abstract one. */
  def classic(spark: SparkSession): ClassicSession = castToImpl(spark)

  /** A Hadoop conf with data source options applied, built as Spark's own file sources build theirs. */
  def hadoopConf(spark: SparkSession, options: Map[String, String]): Configuration =
    classic(spark).sessionState.newHadoopConfWithOptions(options)

  /** The session time zone id as SQLConf resolves it (spark.sql.session.timeZone, else the JVM's). */
  def sessionTimeZone(spark: SparkSession): String = classic(spark).sessionState.conf.sessionLocalTimeZone

  /** The session time zone as Spark resolves zone ids (short ids such as PST included). */
  def sessionZone(spark: SparkSession): ZoneId = DateTimeUtils.getZoneId(sessionTimeZone(spark))

  /** A SQL expression parsed by the session's parser (its dialect settings), not analyzed. */
  def parseExpression(spark: SparkSession, sql: String): Expression =
    classic(spark).sessionState.sqlParser.parseExpression(sql)

  /** A multi-part name parsed as SQL parses table names (backquotes, dots). */
  def parseMultipartIdentifier(spark: SparkSession, name: String): Seq[String] =
    classic(spark).sessionState.sqlParser.parseMultipartIdentifier(name)

  /** The session's catalogs, current catalog and namespace: what resolves a table name the way SQL does. */
  def catalogManager(spark: SparkSession): CatalogManager = classic(spark).sessionState.catalogManager

  /** Where the session catalog puts a managed table of that name (`database`: else the current database). */
  def defaultTablePath(spark: SparkSession, database: Option[String], table: String): URI =
    classic(spark).sessionState.catalog.defaultTablePath(
      TableIdentifier(table, database.orElse(Some(classic(spark).catalog.currentDatabase))))

  /** The Catalyst expression of a Column (Spark's own converter; the public Column API hides it). */
  def expression(column: Column): Expression = ColumnConversions.expression(column)

  /** A Column of a Catalyst expression (Spark's own converter, `private[sql]`). */
  def column(expression: Expression): Column = ExpressionUtils.column(expression)

  /** Filters with their columns spelt as the relation's output spells them, as Spark's file source strategy does. */
  def normalizeExprs(filters: Seq[Expression],
                     output: Seq[org.apache.spark.sql.catalyst.expressions.Attribute]): Seq[Expression] =
    org.apache.spark.sql.execution.datasources.DataSourceStrategy.normalizeExprs(filters, output)
}
