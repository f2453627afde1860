package io.strata.catalog

import io.strata.write.InputReads
import org.apache.spark.sql.catalyst.plans.logical.{ReplaceTable, TableSpec}
import org.apache.spark.sql.connector.catalog.Identifier
import org.apache.spark.sql.connector.catalog.constraints.Constraint

import scala.util.Try

/**
 * What Spark 4.1.1 leaves out when it calls the catalog: its REPLACE TABLE / CREATE OR REPLACE TABLE (without AS
 * SELECT) builds the TableInfo without the statement's constraints (CreateTableExec passes them; the atomic replace
 * does not), so they would be dropped silently. They are read back from the running statement's plan.
 */
object RunningDdl {
  /** The constraints of the REPLACE TABLE of `ident` running on this thread (empty when there is none). */
  def replaceConstraints(ident: Identifier): Seq[Constraint] = Try {
    InputReads.currentPlan().toSeq.flatMap(_.collect {
      case r: ReplaceTable if r.tableName.name().equalsIgnoreCase(ident.name()) &&
          r.tableName.namespace().map(_.toLowerCase).sameElements(ident.namespace().map(_.toLowerCase)) =>
        r.tableSpec match {
          case t: TableSpec => t.constraints
          case _ => Nil
        }
    }.flatten)
  }.getOrElse(Nil)
}
