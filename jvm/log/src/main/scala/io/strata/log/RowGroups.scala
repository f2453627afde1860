package io.strata.log

/**
 * The rows of one [[FileColumns]] grouped by partition code (removed rows included: which rows are removed differs
 * between the snapshots sharing the columns), as one array of rows ordered by code and the start of each code's run:
 * 4 bytes a row. Built once, when first asked, and shared by every snapshot over the same columns.
 */
private[log] final class RowGroups(cols: FileColumns) {
  private lazy val (starts, rows) = {
    var codes = 0
    var i = 0
    while (i < cols.length) { codes = math.max(codes, cols.partitionCode(i) + 1); i += 1 }
    val starts = new Array[Int](codes + 1)
    i = 0
    while (i < cols.length) { val c = cols.partitionCode(i); if (c >= 0) starts(c + 1) += 1; i += 1 }
    (1 to codes).foreach(c => starts(c) += starts(c - 1))
    val next = starts.clone()
    val rows = new Array[Int](starts(codes))
    i = 0
    while (i < cols.length) {
      val c = cols.partitionCode(i)
      if (c >= 0) { rows(next(c)) = i; next(c) += 1 }
      i += 1
    }
    (starts, rows)
  }

  /** The positions of code `code`'s rows in [[order]] (from, until): its rows are `order(from)` until `order(until)`. */
  def range(code: Int): (Int, Int) =
    if (code >= 0 && code + 1 < starts.length) (starts(code), starts(code + 1)) else (0, 0)

  /** Calls `f` with each row of partition code `code`, in row order. */
  def foreachRow(code: Int)(f: Int => Unit): Unit = if (code >= 0 && code + 1 < starts.length) {
    var i = starts(code)
    while (i < starts(code + 1)) { f(rows(i)); i += 1 }
  }

  /** Every row, grouped by code (rows without partition values, code -1, last): the order typed statistics chunk by. */
  def order: Array[Int] = if (rows.length == cols.length) rows else {
    val out = java.util.Arrays.copyOf(rows, cols.length)
    var n = rows.length
    var i = 0
    while (i < cols.length) { if (cols.partitionCode(i) < 0) { out(n) = i; n += 1 }; i += 1 }
    out
  }
}
