package io.strata.write

import io.strata.table.{FilePredicates, SqlPredicates}
import org.apache.spark.sql.SparkSession

/** The files a replace-where on partition columns replaces: whole files, chosen from their partition values. */
object ReplaceWhereFiles {
  /** True when `predicate` (SQL) refers to partition columns only. */
  def onPartitionsOnly(predicate: String, partitionColumns: Seq[String]): Boolean = {
    val referenced = SqlPredicates.referencedColumns(predicate)
    val parts = partitionColumns.map(_.toLowerCase).toSet
    referenced.nonEmpty && referenced.forall(c => parts(c.toLowerCase))
  }

  /** The rows `predicate` replaces, as the write's read set. */
  def scope(write: TableWrite, predicate: String): io.strata.log.FilePredicate =
    FilePredicates.fromSql(SparkSession.active, predicate, write.schema.schema, write.schema.partitionColumns)

  /** Chooses the replaced files for `write`; a concurrent add into a matching partition is then a conflict. */
  def choose(write: TableWrite, predicate: String): Unit = {
    val matches = SqlPredicates.partitionMatcher(SparkSession.active, predicate, write.schema.partitionSchema)
    write.replaceFiles(write.currentFiles.filter(f => matches(f.partitionValues)), scope(write, predicate))
  }
}
