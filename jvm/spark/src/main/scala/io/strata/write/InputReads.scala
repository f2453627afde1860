package io.strata.write

import io.strata.log.FilePredicate
import io.strata.read.SnapshotRead
import io.strata.table.{FilePredicates, TableSchema}
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan, Project, SubqueryAlias, V2WriteCommand}
import org.apache.spark.sql.execution.SQLExecution
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.strata.SparkInternals
import org.apache.spark.sql.types.StructType

/** One read of the write's target table inside the write's input plan: its version and the rows it selected. */
final case class InputRead(version: Long, predicate: FilePredicate)

/**
 * Finds where a write's input plan reads the table it writes (read-then-write: `spark.read...load(p).filter(...)`
 * then `write.mode("overwrite").save(p)`, `INSERT OVERWRITE t SELECT ... FROM t`, `CREATE OR REPLACE t AS SELECT
 * ... FROM t`). Reads pinned by time travel are left out: they choose their version on purpose (a restore).
 */
object InputReads {
  /**
   * The reads of `tablePath` in `plan` (analyzed): the V1 file index or the V2 table, and the filters above it.
   * `zone`: the time zone of the session that analyzed `plan`.
   */
  def of(plan: LogicalPlan, tablePath: Path, tableSchema: StructType, partitionColumns: Seq[String],
         zone: java.time.ZoneId): Seq[InputRead] = {
    val found = Seq.newBuilder[InputRead]
    def record(read: SnapshotRead, conditions: Seq[Expression], output: Seq[org.apache.spark.sql.catalyst.expressions.Attribute]): Unit =
      if (!read.timeTravel && read.readTablePath == tablePath) {
        // Only conjuncts over this relation's own columns describe its rows.
        val own = conditions.filter(_.references.subsetOf(org.apache.spark.sql.catalyst.expressions.AttributeSet(output)))
        found += InputRead(read.readVersion, FilePredicates.fromCondition(
          s"the rows of version ${read.readVersion} the write's input read", own, tableSchema, partitionColumns, zone))
      }
    def visit(p: LogicalPlan, conditions: Seq[Expression]): Unit = {
      p match {
        case w: V2WriteCommand => visit(w.query, Nil) // its `table` is the target, not a read
        case Filter(c, child) => visit(child, conditions :+ c)
        case Project(_, child) => visit(child, conditions)
        case SubqueryAlias(_, child) => visit(child, conditions)
        case l: LogicalRelation => l.relation match {
          case h: HadoopFsRelation => h.location match {
            case r: SnapshotRead => record(r, conditions, l.output)
            case _ =>
          }
          case _ =>
        }
        case r: DataSourceV2Relation => r.table match {
          case t: SnapshotRead => record(t, conditions, r.output)
          case _ =>
        }
        case other => other.children.foreach(visit(_, Nil))
      }
      p.subqueries.foreach(visit(_, Nil))
    }
    visit(plan, Nil)
    found.result()
  }

  /** The analyzed plan of the SQL execution running on this thread (a V2 write's command), if any. */
  def currentPlan(): Option[LogicalPlan] = {
    val spark = SparkSession.active
    Option(spark.sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY))
      .flatMap(id => Option(SQLExecution.getQueryExecution(id.toLong))).map(_.analyzed)
  }

  /** The reads of `tablePath` in a DataFrame's plan (the V1 path's input). */
  def ofDataFrame(data: org.apache.spark.sql.DataFrame, tablePath: Path, table: TableSchema): Seq[InputRead] =
    of(data.queryExecution.analyzed, tablePath, table.schema, table.partitionColumns,
      SparkInternals.sessionZone(data.sparkSession))
}
