package io.strata.table

import io.strata.log.{StatsColumn, StatsValues}
import org.apache.spark.sql.types._

/**
 * What a file's statistics (PROTOCOL.md, "Per-file Statistics") say *exactly* about some top-level columns: the
 * facts an aggregate may be answered from, read from the log core's one statistics parse ([[StatsValues]], typed
 * columns parsed once per run). A bound is kept only for types whose statistics are exact for every writer: integral
 * types, date, boolean, and decimals of precision up to 15 (delta-rs writes decimal bounds through a double, which is
 * exact only up to 15 digits). Strings (truncated), floating point (NaN rules), timestamps (milliseconds) and the rest
 * get no bounds.
 */
final class ExactStats(columns: IndexedSeq[StructField]) {
  import ExactStats._

  /**
   * The statistics columns to read, one per column (in order), keyed by physical name (column mapping): types without
   * exact bounds read null counts only.
   */
  val statsColumns: IndexedSeq[StatsColumn] = columns.map { f =>
    StatsColumn(Seq(PhysicalSchema.physicalName(f)),
      StatsTypes.kind(f.dataType).filter(_ => exactBounds(f.dataType)).getOrElse(StatsColumn.NullsOnly))
  }

  /** The facts of file `i` of `values` (read for [[statsColumns]]), or None when it has no numRecords. */
  def facts(values: StatsValues, i: Int): Option[Facts] = {
    val n = values.numRecords(i)
    if (n < 0) None else {
      val facts = new Facts(columns.length)
      facts.numRecords = n
      facts.tightBounds = values.tightBounds(i) match { case -1 => None; case t => Some(t == 1) }
      var c = 0
      while (c < columns.length) {
        facts.nullCounts(c) = values.nullCount(c, i)
        val dt = columns(c).dataType
        if (exactBounds(dt)) {
          facts.mins(c) = StatsTypes.catalyst(values.min(c, i), dt)
          facts.maxs(c) = StatsTypes.catalyst(values.max(c, i), dt)
        }
        c += 1
      }
      Some(facts)
    }
  }
}

object ExactStats {
  /** Types whose statistics bounds are exact (see the class). */
  def exactBounds(dt: DataType): Boolean = dt match {
    case ByteType | ShortType | IntegerType | LongType | DateType | BooleanType => true
    case d: DecimalType => boundedDecimal(d)
    case _ => false
  }

  private def boundedDecimal(d: DecimalType): Boolean = d.precision <= 15

  /**
   * One file's statistics for the columns asked for: `numRecords` (stored rows), `tightBounds`,
   * per column its null count (-1 when absent) and bounds (null when absent or not exact).
   */
  final class Facts(n: Int) {
    var numRecords: Long = -1L
    /** As written: absent means tight (PROTOCOL.md), but a file with a deletion vector needs an explicit true. */
    var tightBounds: Option[Boolean] = None
    val nullCounts: Array[Long] = Array.fill(n)(-1L)
    val mins: Array[Any] = new Array[Any](n)
    val maxs: Array[Any] = new Array[Any](n)
  }
}
