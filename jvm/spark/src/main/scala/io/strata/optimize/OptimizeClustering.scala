package io.strata.optimize

import com.fasterxml.jackson.databind.JsonNode
import io.strata.log.{ActionCodec, AddFile, Clustering, InvalidTableOperationException, Snapshot}
import io.strata.table.{ClusteringColumns, TableSchema}

/**
 * OPTIMIZE of a clustered table (liquid clustering): the rows of the files not yet clustered by the table's clustering
 * columns are laid out by the Z-order of those columns ([[ZOrder]]) and written as `clusteringProvider = liquid` files
 * tagged with the columns ([[io.strata.log.Clustering]]), together with the clustered files whose value ranges
 * overlap theirs; the other clustered files stay. Like delta-spark, it takes no `zorder_by` (the table's columns
 * decide).
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

  /**
   * The files an OPTIMIZE rewrites (by path): those not clustered by `clustering` (physical top-level columns), and
   * the clustered ones whose min/max box over the clustering columns meets theirs (else the new files would form a
   * second layer over the same values, and a filter would read both). Only the choice of files depends on this: a
   * bound missing from the statistics counts as unbounded, and a value pair that does not compare overlaps.
   */
  def eligible(files: Seq[AddFile], clustering: Seq[Seq[String]]): Set[String] = {
    val (clustered, fresh) = files.partition(f => Clustering.clusteredBy(f, clustering))
    if (fresh.isEmpty) return Set.empty
    val columns = clustering.map(_.head)
    val boxes = fresh.map(bounds(_, columns))
    val box = columns.indices.map(i => (boxes.map(_(i)._1).reduce(lower), boxes.map(_(i)._2).reduce(upper)))
    val overlapping = clustered.filter { f =>
      bounds(f, columns).zip(box).forall { case ((min, max), (bmin, bmax)) => !before(max, bmin) && !before(bmax, min) }
    }
    (fresh ++ overlapping).map(_.path).toSet
  }

  /** Per column: (min, max) from the file's statistics, None where unknown (unbounded). */
  private def bounds(f: AddFile, columns: Seq[String]): Seq[(Option[JsonNode], Option[JsonNode])] = {
    val stats = f.stats.flatMap(s => scala.util.Try(ActionCodec.mapper.readTree(s)).toOption)
    def value(kind: String, c: String) =
      stats.flatMap(s => Option(s.get(kind))).flatMap(m => Option(m.get(c))).filter(v => v.isNumber || v.isTextual)
    columns.map(c => (value("minValues", c), value("maxValues", c)))
  }

  private def compare(a: JsonNode, b: JsonNode): Option[Int] =
    if (a.isNumber && b.isNumber) Some(a.decimalValue.compareTo(b.decimalValue))
    else if (a.isTextual && b.isTextual) Some(a.asText.compareTo(b.asText))
    else None

  /** `a` < `b` for sure (an upper bound below a lower bound): unknown bounds and incomparable values are not. */
  private def before(a: Option[JsonNode], b: Option[JsonNode]): Boolean =
    (for (x <- a; y <- b; c <- compare(x, y)) yield c < 0).getOrElse(false)

  private def lower(a: Option[JsonNode], b: Option[JsonNode]): Option[JsonNode] =
    for (x <- a; y <- b; c <- compare(x, y)) yield if (c <= 0) x else y
  private def upper(a: Option[JsonNode], b: Option[JsonNode]): Option[JsonNode] =
    for (x <- a; y <- b; c <- compare(x, y)) yield if (c >= 0) x else y
}
