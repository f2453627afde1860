package io.strata.table

import org.apache.spark.sql.connector.expressions.{Expressions, NamedReference, Transform}

/**
 * Top-level column names handed to Spark's connector API. `Expressions.column` and `Expressions.identity` parse their
 * argument as a multi-part name, so `p.art` would become the nested field `art` of `p`: each name goes in quoted, one
 * part whatever it holds.
 */
object ColumnNames {
  /** The name as one identifier (backquoted, its backquotes doubled). */
  def quoted(name: String): String = "`" + name.replace("`", "``") + "`"

  /** The column as a reference (distributions, orderings, metadata columns). */
  def reference(name: String): NamedReference = Expressions.column(quoted(name))

  /** The column's identity transform (a partition column). */
  def identity(name: String): Transform = Expressions.identity(quoted(name))
}
