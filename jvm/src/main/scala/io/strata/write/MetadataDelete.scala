package io.strata.write

import io.strata.config.WriteOptions
import io.strata.log.{AddFile, CommitResult, FilePredicate, Snapshot, TableLog}
import io.strata.shim.{FilePredicates, SparkInternals}
import io.strata.table.TableSchema

/**
 * A DELETE whose condition refers to partition columns only: it removes whole files, chosen by their partition
 * values, in a commit without any Spark job and without rewriting anything. (Spark asks the table first; any other
 * condition goes to the copy-on-write rewrite.)
 */
object MetadataDelete {
  /** True when every condition (SQL) refers to partition columns only. */
  def canDelete(conditions: Seq[String], partitionColumns: Seq[String]): Boolean =
    conditions.forall(ReplaceWhereFiles.onPartitionsOnly(_, partitionColumns))

  def delete(log: TableLog, snapshot: Snapshot, conditions: Seq[String], options: WriteOptions): CommitResult = {
    val table = TableSchema.of(snapshot.metadata)
    val spark = SparkInternals.activeSession
    val write = TableWrite.begin(log, table.schema, WriteMode.RewriteRows("DELETE"), options, Some(Some(snapshot)))
    val sql = conditions.map(c => s"($c)").mkString(" AND ")
    val (matched, scope) =
      if (conditions.isEmpty) (snapshot.files, FilePredicate.WholeTable)
      else {
        val matches = SparkInternals.partitionMatcher(spark, sql, table.partitionSchema)
        (snapshot.files.filter(f => matches(f.partitionValues)),
          FilePredicates.fromSql(spark, sql, table.schema, table.partitionColumns))
      }
    write.rewriteRowsOf(new RowLevelRead {
      override def files: Seq[AddFile] = matched
      override def condition: FilePredicate = scope
      override def conditionSql: Seq[String] = conditions
    })
    write.commit(Nil)
  }
}
