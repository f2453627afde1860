package io.strata.log

/**
 * The statistics of a group of files (`length` of them) for some columns (index `c` into the columns asked for),
 * as one parse of their JSON says: values as [[StatsColumn.Kind]] describes them, null / -1 when absent. A file whose
 * statistics are missing or malformed has every value absent.
 */
trait StatsValues {
  def length: Int
  /** Rows the file holds (before any deletion vector), or -1. */
  def numRecords(i: Int): Long
  /** `tightBounds` as written: -1 absent (tight unless the file has a deletion vector), 0 false, 1 true. */
  def tightBounds(i: Int): Int
  /** Null values of column `c` in file `i` (before any deletion vector), or -1. */
  def nullCount(c: Int, i: Int): Long
  def min(c: Int, i: Int): AnyRef
  def max(c: Int, i: Int): AnyRef
}
