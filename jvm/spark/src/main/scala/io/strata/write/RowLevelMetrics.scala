package io.strata.write

import io.strata.log.AddFile

/**
 * The commitInfo metrics of DELETE / UPDATE / MERGE, under delta-spark's names so that `DESCRIBE HISTORY` shows them
 * the same way. Row counts derived from file statistics appear only when every file involved has a record count.
 */
object RowLevelMetrics {
  def apply(command: String, removed: Seq[AddFile], added: Seq[AddFile], counts: Map[String, Long]): Map[String, Long] = {
    val removedRows = total(removed)
    val writtenRows = total(added)
    val known = counts.filter(_._2 >= 0)
    command match {
      case "DELETE" =>
        files("numAddedFiles", "numRemovedFiles", "numAddedBytes", "numRemovedBytes", removed, added) ++
          removedRows.zip(writtenRows).map { case (r, w) => "numDeletedRows" -> (r - w) } ++
          writtenRows.map("numCopiedRows" -> _) ++ known
      case "UPDATE" =>
        files("numAddedFiles", "numRemovedFiles", "numAddedBytes", "numRemovedBytes", removed, added) ++
          known.get("numUpdatedRows").zip(writtenRows).map { case (u, w) => "numCopiedRows" -> (w - u) } ++ known
      case _ => // MERGE
        files("numTargetFilesAdded", "numTargetFilesRemoved", "numTargetBytesAdded", "numTargetBytesRemoved",
          removed, added) ++ writtenRows.map("numOutputRows" -> _) ++ known
    }
  }

  private def files(added: String, removed: String, addedBytes: String, removedBytes: String,
                    removedFiles: Seq[AddFile], addedFiles: Seq[AddFile]): Map[String, Long] = Map(
    added -> addedFiles.size.toLong, removed -> removedFiles.size.toLong,
    addedBytes -> addedFiles.map(_.size).sum, removedBytes -> removedFiles.map(_.size).sum)

  /** The files' total record count, if each one's statistics have it. */
  def total(files: Seq[AddFile]): Option[Long] = {
    val counts = files.map(TableWrite.recordCount)
    if (counts.forall(_.isDefined)) Some(counts.flatten.sum) else None
  }
}
