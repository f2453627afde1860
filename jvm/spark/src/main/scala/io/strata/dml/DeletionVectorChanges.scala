package io.strata.dml

import io.strata.log.{AddFile, DeletedRows, DeletionVectorStore, DeletionVectors, Snapshot}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

/**
 * Turns the rows a merge-on-read operation deleted, per data file, into the files' new entries: each file's vector
 * grows by the new rows (the union with the vector it already has), all new vectors go into one new file; a file
 * whose every row is now deleted is removed instead. `written`: the vector file, to delete if the commit fails.
 */
final case class DeletionVectorChanges(changed: Seq[(AddFile, Option[AddFile])], written: Option[Path],
                                       deletedRows: Long, newRows: Map[String, DeletedRows]) {
  def vectorsAdded: Long = changed.count { case (old, now) => old.deletionVector.isEmpty && now.isDefined }.toLong
  def vectorsUpdated: Long = changed.count { case (old, now) => old.deletionVector.isDefined && now.isDefined }.toLong
  def vectorsRemoved: Long = changed.count(_._1.deletionVector.isDefined).toLong
  def filesRemoved: Long = changed.count(_._2.isEmpty).toLong
}

object DeletionVectorChanges {
  /**
   * `deleted`: absolute data file path -> the row indexes newly deleted in it (disjoint from its current vector: the
   * scan never returns deleted rows). Every path must be a live file of `snapshot`.
   */
  def apply(snapshot: Snapshot, deleted: Map[String, DeletedRows], conf: Configuration,
            maxInlineBytes: Int): DeletionVectorChanges = {
    val byPath = snapshot.files.iterator.map(f => snapshot.absolutePath(f.path).toString -> f).toMap
    val grown = deleted.toSeq.filterNot(_._2.isEmpty).map { case (path, rows) =>
      val file = byPath.getOrElse(path, throw new IllegalStateException(
        s"Rows were deleted from $path, which is not a file of version ${snapshot.version} of ${snapshot.tablePath}"))
      val all = file.deletionVector.fold(rows)(dv => DeletionVectors.read(dv, snapshot.tablePath, conf).union(rows))
      (file, all, rows.cardinality, physicalRows(file, snapshot.tablePath, conf))
    }
    val (changed, written) = DeletionVectorStore.grow(snapshot.tablePath, conf,
      grown.map { case (file, all, _, stored) => (file, all, stored) }, maxInlineBytes)
    DeletionVectorChanges(changed, written, grown.map(_._3).sum, deleted.filterNot(_._2.isEmpty))
  }

  /** Stored rows (protocol: a file with a vector must have `numRecords`); from the Parquet footer if stats lack it. */
  def physicalRows(file: AddFile, tablePath: Path, conf: Configuration): Long =
    file.physicalRows.getOrElse {
      val path = Snapshot.absolutePath(tablePath, file.path)
      val reader = org.apache.parquet.hadoop.ParquetFileReader.open(
        org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(path, conf))
      try reader.getRecordCount finally reader.close()
    }
}
