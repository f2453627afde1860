package io.strata.dml

import io.strata.config.WriteConf
import io.strata.log.{AddFile, CommitResult, FilePredicate, PostCommitHook, Snapshot, TableLog}
import io.strata.table.{ConditionPredicate, FilePredicates, SqlPredicates, TableSchema}
import io.strata.write.{ReplaceWhereFiles, RowLevelRead, TableWrite, WriteMode}
import org.apache.spark.sql.SparkSession

/**
 * A DELETE that removes whole files only, in a commit without any Spark job and without rewriting anything: when
 * its condition refers to partition columns only (files chosen by their partition values), or when the statistics
 * of every file prove that either all of its rows match or none does. Spark asks the table first; any other DELETE
 * goes to the copy-on-write rewrite.
 */
object MetadataDelete {
  /** True when the DELETE of `conditions` (SQL) on `snapshot` can remove whole files only. */
  def canDelete(snapshot: Snapshot, conditions: Seq[String]): Boolean = {
    val table = TableSchema.of(snapshot.metadata)
    onPartitionsOnly(conditions, table.partitionColumns) || wholeFiles(snapshot, byStatistics(snapshot, conditions))
  }

  /** True when `p` matches every row of each file of `snapshot`, or none. */
  private def wholeFiles(snapshot: Snapshot, p: ConditionPredicate): Boolean =
    snapshot.files.forall(f => !p.mayMatch(f.partitionValues, f.stats) || p.mustMatchAll(f.partitionValues, f.stats))

  def delete(log: TableLog, snapshot: Snapshot, conditions: Seq[String], conf: WriteConf,
             postCommit: PostCommitHook): CommitResult = {
    val table = TableSchema.of(snapshot.metadata)
    val spark = SparkSession.active
    val write = TableWrite.begin(log, table.schema, WriteMode.RewriteRows("DELETE"), conf, postCommit,
      Some(Some(Right(snapshot))))
    val sql = conditions.map(c => s"($c)").mkString(" AND ")
    val (matched, scope) =
      if (conditions.isEmpty) (snapshot.files, FilePredicate.WholeTable)
      else if (onPartitionsOnly(conditions, table.partitionColumns)) {
        val matches = SqlPredicates.partitionMatcher(spark, sql, table.partitionSchema)
        (snapshot.files.filter(f => matches(f.partitionValues)),
          FilePredicates.fromSql(spark, sql, table.schema, table.partitionColumns))
      } else {
        val p = byStatistics(snapshot, conditions)
        val files = snapshot.files.filter(f => p.mustMatchAll(f.partitionValues, f.stats))
        // Checked again on this very snapshot: a file that only partly matches must not be removed whole.
        if (!wholeFiles(snapshot, p)) throw new IllegalStateException(
          s"DELETE where $sql: some file holds both matching and other rows; it needs a rewrite")
        (files, p)
      }
    write.rewriteRowsOf(new RowLevelRead {
      override def files: Seq[AddFile] = matched
      override def condition: FilePredicate = scope
      override def conditionSql: Seq[String] = conditions
    })
    write.commit(Nil)
  }

  private def onPartitionsOnly(conditions: Seq[String], partitionColumns: Seq[String]): Boolean =
    conditions.forall(ReplaceWhereFiles.onPartitionsOnly(_, partitionColumns))

  private def byStatistics(snapshot: Snapshot, conditions: Seq[String]): ConditionPredicate = {
    val table = TableSchema.of(snapshot.metadata)
    FilePredicates.conditionFromSql(SparkSession.active, conditions.map(c => s"($c)").mkString(" AND "),
      table.schema, table.partitionColumns)
  }
}
