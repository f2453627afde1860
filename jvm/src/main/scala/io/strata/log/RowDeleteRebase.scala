package io.strata.log

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import scala.collection.mutable

/**
 * Row-level conflict resolution for a transaction that deletes rows with deletion vectors (merge-on-read DELETE or
 * UPDATE), beyond what OSS Delta does: when a winning commit gave one of the same files a new vector
 * (remove(file, v) + add(file, w)) and the rows it newly deleted are disjoint from ours, both deletes can stand. The
 * file's entry this transaction replaces becomes the winner's, and our vector for it becomes w ∪ ours, written anew
 * when the transaction re-stages ([[restage]]). Rows both deleted are the typed conflict.
 *
 * Sound for DELETE and UPDATE, whose rows read are exactly the rows they delete: the serial order "winner, then us"
 * selects the same rows (the winner's new rows, in its added files, are still checked against our read set as any
 * concurrent append). Not for MERGE, whose join also read rows it left alone.
 *
 * `mine`: absolute path -> the rows this transaction deletes in that file (disjoint from the file's vector as read).
 * `physicalRows`: a file's stored row count (to remove a file whose every row ends up deleted).
 */
final class RowDeleteRebase(tablePath: Path, conf: Configuration, read: Map[String, AddFile],
                            mine: Map[String, DeletedRows], physicalRows: AddFile => Long) {
  /** Files whose entry changed under us: path -> the winner's entry (with its vector). */
  private val rebased = mutable.LinkedHashMap.empty[String, AddFile]
  private var written: Seq[Path] = Nil

  def changes(path: String): Boolean = mine.contains(path)

  /**
   * The winner replaced `path`'s entry `removed` by `added` (a new vector). True when this transaction can keep its
   * delete on top of it; a conflict (typed) when both deleted the same rows.
   */
  def absorb(version: Long, operation: String, path: String, removed: RemoveFile, added: AddFile): Boolean = {
    val base = rebased.getOrElse(path, read(path))
    if (removed.dvId != base.dvId || added.deletionVector.isEmpty) return false
    val theirs = DeletionVectors.read(added.deletionVector.get, tablePath, conf)
    if (theirs.intersects(mine(path))) throw new ConcurrentDeleteDeleteException(version, operation,
      s"it deleted some of the same rows of file ${removed.path} (deletion vectors overlap)")
    rebased(path) = added
    true
  }

  def pending: Boolean = rebased.nonEmpty

  /**
   * `staged` with each rebased file's remove and add replaced: remove(the winner's entry) + add(its vector ∪ ours),
   * or the remove alone when every row is now deleted. Writes the new vectors to one new file.
   */
  def restage(staged: Seq[Action], now: Long): Seq[Action] = {
    val abs = (p: String) => Snapshot.absolutePath(tablePath, p).toString
    val grown = rebased.toSeq.map { case (path, winner) =>
      (path, winner, DeletionVectors.read(winner.deletionVector.get, tablePath, conf).union(mine(path)))
    }
    val (gone, kept) = grown.partition { case (_, winner, all) => all.cardinality == physicalRows(winner) }
    val descriptors = DeletionVectorStore.write(tablePath, conf, kept.map(_._3))
    written ++= descriptors.flatMap(_.file(tablePath)).distinct
    val replacement: Map[String, Seq[Action]] =
      (gone.map { case (path, winner, _) => path -> Seq(winner.remove(now)) } ++
        kept.zip(descriptors).map { case ((path, winner, _), dv) =>
          path -> Seq(winner.remove(now), winner.copy(deletionVector = Some(dv), dataChange = true))
        }).toMap
    val done = mutable.HashSet.empty[String]
    staged.flatMap {
      case f: AddFile if replacement.contains(abs(f.path)) => Nil
      case r: RemoveFile if replacement.contains(abs(r.path)) =>
        if (done.add(abs(r.path))) replacement(abs(r.path)) else Nil
      case other => Seq(other)
    }
  }

  /** Vector files written by [[restage]] (garbage if the commit fails). */
  def writtenFiles: Seq[Path] = written
}
