package io.strata.dml

import io.strata.log.{FilePredicate, Snapshot}
import io.strata.table.{FilePredicates, TableSchema, V2PredicateSql}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.expressions.filter.Predicate
import org.apache.spark.sql.connector.read.{Scan, ScanBuilder, SupportsPushDownV2Filters}

/**
 * The scan of a copy-on-write row-level operation (DELETE, UPDATE, MERGE): it chooses whole files and returns every
 * row of each, with [[FileColumn]], since each chosen file is replaced by the rows written from it.
 *
 * Files are chosen in two steps. At planning, the operation's condition (its conjuncts Spark pushes here, rendered
 * as SQL) drops the files whose partition values or statistics rule out a match. At run time, Spark's group filter
 * (a query of the files holding matching rows) narrows them to the files that really match, through
 * [[SupportsRuntimeV2Filtering]] on the file column. What is finally read is [[CopyOnWriteScan.files]].
 */
final class CopyOnWriteScanBuilder(snapshot: Snapshot, onBuild: CopyOnWriteScan => Unit) extends ScanBuilder with SupportsPushDownV2Filters {
  private var used: Array[Predicate] = Array.empty
  private var conditions: Seq[String] = Nil

  /** Every predicate is also returned: whole files are read, so Spark must still evaluate them on each row. */
  override def pushPredicates(predicates: Array[Predicate]): Array[Predicate] = {
    val rendered = predicates.flatMap(p => V2PredicateSql(p).map(p -> _))
    used = rendered.map(_._1)
    conditions = rendered.map(_._2).toSeq
    predicates
  }

  override def pushedPredicates(): Array[Predicate] = used

  override def build(): Scan = {
    val table = TableSchema.of(snapshot.metadata)
    val spark = SparkSession.active
    val selection = if (conditions.isEmpty) FilePredicate.WholeTable else FilePredicates.fromSql(spark,
      conditions.map(c => s"($c)").mkString(" AND "), table.schema, table.partitionColumns)
    val scan = new CopyOnWriteScan(snapshot, selection, conditions)
    onBuild(scan)
    scan
  }
}
