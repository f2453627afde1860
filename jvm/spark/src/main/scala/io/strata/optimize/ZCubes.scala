package io.strata.optimize

import io.strata.log.{AddFile, Clustering}

/**
 * delta-spark's incremental liquid clustering (its `ClusteringStrategy` and `ZCube`): each OPTIMIZE job's output is
 * a ZCube (files sharing the `ZCUBE_ID` tag, with the clustering columns in `ZCUBE_ZORDER_BY`). A cube of at least
 * the min cube size is stable and stays; new files join the small cubes, so a table is not reclustered whole for each
 * append that spans its value range. Unlike delta-spark's non-FULL OPTIMIZE, files clustered by other columns (a
 * CLUSTER BY change, or a RENAME of a clustering column) count as unclustered: they are reclustered by the current
 * columns rather than kept in a layout no filter on those columns can use.
 */
object ZCubes {
  /**
   * The files to recluster, in binning order: those with no cube of the current columns (`names`, logical, as in
   * `ZCUBE_ZORDER_BY`) first, then the small cubes' by cube id; nothing when no file is unclustered and at most one
   * cube is small. Files another clustering provider wrote are never taken (PROTOCOL.md "Clustered Table").
   */
  def candidates(files: Seq[AddFile], names: Seq[String], minCubeSize: Long): Seq[AddFile] = {
    val ours = files.filter(f => Clustering.provider(f).forall(_ == Clustering.Provider))
    val (cubed, fresh) = ours.partition(f => Clustering.cube(f).exists(_._2 == names))
    val small = cubed.groupBy(f => Clustering.cube(f).get._1).toSeq.sortBy(_._1).map(_._2)
      .filter(_.iterator.map(_.size).sum < minCubeSize)
    if (fresh.isEmpty && small.size <= 1) Nil else fresh.sortBy(_.path) ++ small.flatMap(_.sortBy(_.path))
  }
}
