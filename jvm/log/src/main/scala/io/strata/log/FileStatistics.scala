package io.strata.log

/**
 * The statistics JSON and deletion vector of each file of a group of live files, read where they are held (no
 * `AddFile` is built): what an aggregate answered from the log needs, column-wise.
 */
final class FileStatistics(val length: Int, stats: Int => String, vectors: Int => DeletionVectorDescriptor) {
  /** The file's statistics JSON, or null when it has none. */
  def statsJson(i: Int): String = stats(i)
  /** Rows the file's deletion vector marks deleted (0 without one). */
  def deletedRows(i: Int): Long = { val dv = vectors(i); if (dv == null) 0L else dv.cardinality }
}

object FileStatistics {
  /** The statistics of files already built as actions (an explicit file list, e.g. a streaming micro-batch). */
  def of(files: IndexedSeq[(Option[String], Option[DeletionVectorDescriptor])]): FileStatistics =
    new FileStatistics(files.length, i => files(i)._1.orNull, i => files(i)._2.orNull)
}
