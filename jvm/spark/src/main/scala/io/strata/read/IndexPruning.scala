package io.strata.read

import java.util.Locale

import org.apache.spark.sql.catalyst.expressions.{AttributeReference, Expression, ExprId}
import org.apache.spark.sql.execution.datasources.FileIndex
import org.apache.spark.sql.types.StructType

/**
 * How a [[LogFileIndex]] was pruned: the index it holds part of (a [[LogFileIndex]] or a [[DistributedFileIndex]]),
 * and the filters that chose that part, normalized by
 * [[IndexPruning.normalized]] (so that the two sides of a self-join pruned by equal filters have equal indexes).
 * `mixed`: filters of a path read that mix partition and data columns (`p = 0 OR v = 'x'`). Spark's file source
 * strategy hands such a filter to no scan (it stays above the scan, applied to every row the scan returns), so a scan
 * cannot show it; the pruning rule prunes a relation only by the filters right above it, which no later optimizer
 * rule removes, so the index is read under them.
 */
final case class IndexPruning(base: FileIndex, filters: Set[Expression], mixed: Set[Expression] = Set.empty) {
  /** A scan under `current` filters (normalized) keeps only rows that every filter of the pruning keeps. */
  def coveredBy(current: Set[Expression]): Boolean = filters.subsetOf(current)
}

object IndexPruning {
  /**
   * `filters` canonicalized, each reference to a column of `columns` made the same whatever relation it came from
   * (the column's position stands for its expression id; Spark's canonical form keeps ids, not names). References
   * to anything else keep their id.
   */
  def normalized(filters: Seq[Expression], columns: StructType): Set[Expression] = {
    val positions = columns.fieldNames.map(_.toLowerCase(Locale.ROOT)).zipWithIndex.reverse.toMap
    filters.map(_.transform {
      case a: AttributeReference if positions.contains(a.name.toLowerCase(Locale.ROOT)) =>
        AttributeReference(a.name, a.dataType, a.nullable)(exprId = ExprId(positions(a.name.toLowerCase(Locale.ROOT))))
    }.canonicalized).toSet
  }
}
