package io.strata.optimize

import io.strata.log.{InvalidTableOperationException, Snapshot}
import io.strata.table.{ClusteringColumns, TableSchema}

/**
 * OPTIMIZE of a clustered table (liquid clustering): the rows of the files not yet clustered by the table's clustering
 * columns are laid out by the Z-order of those columns ([[ZOrder]]) and written as `clusteringProvider = liquid` files
 * tagged with the columns ([[io.strata.log.Clustering]]); files already clustered by them stay. Like delta-spark, it
 * takes no `zorder_by` (the table's columns decide).
 */
object OptimizeClustering {
  def settings(snapshot: Snapshot, request: OptimizeRequest, clustering: Seq[Seq[String]],
               selects: Map[String, Option[String]] => Boolean, predicateSql: Seq[String],
               targetFileSize: Long): OptimizeSettings = {
    val table = snapshot.tablePath.toString
    val logical = ClusteringColumns.logical(TableSchema.of(snapshot.metadata).schema, clustering, table)
    if (request.zOrderBy.nonEmpty) throw InvalidTableOperationException("STRATA_INVALID_PROCEDURE_ARGUMENT",
      Map("procedure" -> "optimize", "argument" -> "zorder_by", "problem" -> (s"is given for clustered table $table " +
        s"(clustered by ${logical.map(ClusteringColumns.sql).mkString(", ")}), which OPTIMIZE clusters by its " +
        "clustering columns"), "expected" -> "no zorder_by; change the columns with ALTER TABLE ... CLUSTER BY (...)"))
    logical.find(_.size > 1).foreach(p => throw InvalidTableOperationException("STRATA_INVALID_CLUSTERING",
      s"Cannot optimize $table: it is clustered by nested field ${ClusteringColumns.sql(p)}, and Strata clusters by " +
        "top-level columns only."))
    OptimizeSettings(selects, predicateSql, logical.map(_.head), targetFileSize, clustering)
  }
}
