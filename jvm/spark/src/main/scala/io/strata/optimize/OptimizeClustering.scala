package io.strata.optimize

import io.strata.log.{InvalidTableOperationException, Snapshot}
import io.strata.table.{ClusteringColumns, TableSchema}

/**
 * OPTIMIZE of a clustered table (liquid clustering), as delta-spark's incremental clustering does it: the files not
 * in a ZCube, and the small cubes of the current clustering columns ([[ZCubes]]), are laid out along delta-spark's
 * curve of those columns ([[Curve.forClustering]]: Hilbert, Z-order for one column; [[ZOrder]]), each bin of them a
 * new cube of `clusteringProvider = liquid` files with delta-spark's cube tags ([[io.strata.log.Clustering]]) and
 * the curve; large cubes stay. Like delta-spark, it takes no `zorder_by` (the table's
 * columns decide). Clustering columns may be nested fields (`s.a`).
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
    OptimizeSettings(selects, predicateSql, logical.map(ClusteringColumns.fieldName), targetFileSize, clustering,
      logical)
  }

  /**
   * The groups of an OPTIMIZE of a clustered table (never partitioned): one per new cube ([[ZCubes]] chooses the
   * files; `full`: OPTIMIZE FULL), committed in batches of at most `batchSize` bytes of rewritten files (delta-spark's
   * `optimize.batchSize`; a larger cube alone). Empty when nothing is unclustered and at most one small cube exists
   * (delta-spark's rule: reclustering it alone changes nothing).
   */
  def plan(snapshot: Snapshot, settings: OptimizeSettings, minCubeSize: Long, targetCubeSize: Long, batchSize: Long,
           full: Boolean): OptimizePlan = {
    val files = ZCubes.candidates(snapshot.files, settings.zOrderBy, minCubeSize, full)
    val groups = OptimizePlanner.pack(files, math.max(minCubeSize, targetCubeSize)).zipWithIndex.map { case (b, i) =>
      OptimizeGroup(i + 1, Map.empty, b)
    }
    if (groups.isEmpty) OptimizePlan(Nil, 0, 0)
    else OptimizePlan(OptimizePlanner.batches(groups, batchSize), 1, files.size)
  }
}
