package io.strata.log

/**
 * Totals over the live entries of a [[FileSet]]: how many, their bytes, how many carry a deletion vector, and how
 * many each partition code holds. Kept up to date entry by entry as replay puts and removes them, so a new snapshot
 * knows them without visiting its files: a commit costs what it changes (and an int per distinct partition).
 * Mutable only inside a [[FileSet.Builder]]; a built set keeps its own copy, never changed again.
 */
private[log] final class LiveTotals private (
    private var entries: Int,
    private var totalBytes: Long,
    private var vectors: Int,
    private var perCode: Array[Int]) {

  def this() = this(0, 0L, 0, new Array[Int](16))

  def count: Int = entries
  /** The sum of the entries' sizes (a tombstone without a size counts as 0). */
  def bytes: Long = totalBytes
  def withDeletionVectors: Int = vectors
  /** One more than the highest partition code that may have entries. */
  def codeLimit: Int = perCode.length
  def countOf(code: Int): Int = if (code >= 0 && code < perCode.length) perCode(code) else 0

  def added(cols: FileColumns, row: Int): Unit = change(cols, row, 1)
  def removed(cols: FileColumns, row: Int): Unit = change(cols, row, -1)

  private def change(cols: FileColumns, row: Int, sign: Int): Unit = {
    entries += sign
    totalBytes += sign * math.max(0L, cols.size(row))
    if (cols.deletionVector(row) != null) vectors += sign
    val code = cols.partitionCode(row)
    if (code >= 0) { // a tombstone may have no partition values
      if (code >= perCode.length) perCode = java.util.Arrays.copyOf(perCode, math.max(code + 1, perCode.length * 2))
      perCode(code) += sign
    }
  }

  def copy(): LiveTotals = new LiveTotals(entries, totalBytes, vectors, perCode.clone())
}
