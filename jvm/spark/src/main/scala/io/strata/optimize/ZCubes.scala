package io.strata.optimize

import io.strata.log.{AddFile, Clustering}

/**
 * delta-spark's incremental liquid clustering (its `ClusteringStrategy` and `ZCube`): each OPTIMIZE job's output is
 * a ZCube (files sharing the `ZCUBE_ID` tag, with the clustering columns in `ZCUBE_ZORDER_BY`). A cube of at least
 * the min cube size is stable and stays; new files join the small cubes, so a table is not reclustered whole for each
 * append that spans its value range. As in delta-spark, files clustered by other columns (a CLUSTER BY change, or a
 * RENAME of a clustering column) and files of another clustering provider are left alone, except by OPTIMIZE FULL,
 * which reclusters them all (their cubes stable or not); FULL still leaves the stable cubes of the current columns.
 */
object ZCubes {
  /**
   * The files to recluster, in binning order: those in no cube first (by path), then the small cubes of the current
   * columns (`names`, logical, as in `ZCUBE_ZORDER_BY`) by cube id, then (FULL) the files of other columns or
   * providers by cube id. Without FULL, or with FULL when no such file exists: nothing when no file is unclustered
   * and at most one cube is small (reclustering one cube alone changes nothing).
   */
  def candidates(files: Seq[AddFile], names: Seq[String], minCubeSize: Long, full: Boolean): Seq[AddFile] = {
    val (ours, others) = files.partition(f => Clustering.provider(f).forall(_ == Clustering.Provider) &&
      Clustering.cube(f).forall(_._2 == names))
    val (cubed, fresh) = ours.partition(f => Clustering.cube(f).isDefined)
    val small = byCube(cubed).filter(_.iterator.map(_.size).sum < minCubeSize)
    val merged = fresh.sortBy(_.path) ++ small.flatten
    if (full && others.nonEmpty) merged ++ byCube(others).flatten
    else if (fresh.isEmpty && small.size <= 1) Nil
    else merged
  }

  /** Files grouped by cube id (files in no cube: one group, first), each sorted by path. */
  private def byCube(files: Seq[AddFile]): Seq[Seq[AddFile]] =
    files.groupBy(f => Clustering.cube(f).map(_._1)).toSeq.sortBy(_._1).map(_._2.sortBy(_.path))
}
