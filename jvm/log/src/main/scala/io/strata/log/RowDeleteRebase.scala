package io.strata.log

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import scala.collection.mutable

/**
 * Row-level conflict resolution for a transaction that deletes rows with deletion vectors (merge-on-read DELETE or
 * UPDATE), beyond what OSS Delta does: when a winning commit gave one of the same files a new vector
 * (remove(file, v) + add(file, w)) that only deletes more rows (w contains v) and none of ours, both deletes can
 * stand ([[absorb]] gives the argument). The
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
   * delete on top of it: the serial order "winner, then us" gives the same table, because
   *  - the winner's vector contains the one we read: it only deleted rows, so every row our condition matched in
   *    the file after the winner is one we matched before (our read of the file is still a superset), and
   *  - it deleted none of our rows: our rows are still there to delete, so "winner, then us" deletes exactly them.
   * A vector that lacks rows ours had (a RESTORE brought them back) makes rows visible that our condition may match
   * and we never read: a typed conflict, as delta-spark raises. So do rows both deleted.
   */
  def absorb(version: Long, operation: String, path: String, removed: RemoveFile, added: AddFile): Boolean = {
    val base = rebased.getOrElse(path, read(path))
    if (removed.dvId != base.dvId || added.deletionVector.isEmpty) return false
    val theirs = DeletionVectors.read(added.deletionVector.get, tablePath, conf)
    val before = base.deletionVector.fold(DeletedRows.empty)(DeletionVectors.read(_, tablePath, conf))
    if (!theirs.containsAll(before)) throw ConcurrentDeleteReadException(version, operation,
      s"it brought back deleted rows of file ${removed.path} (its new deletion vector lacks rows the old one had), " +
        "which this transaction's condition may match but never read")
    if (theirs.intersects(mine(path))) throw ConcurrentDeleteDeleteException(version, operation,
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
    val (changed, file) = DeletionVectorStore.grow(tablePath, conf, rebased.toSeq.map { case (path, winner) =>
      (winner, DeletionVectors.read(winner.deletionVector.get, tablePath, conf).union(mine(path)), physicalRows(winner))
    }, maxInlineBytes = 0)
    written ++= file
    // Each file: remove(the winner's entry), then add(its vector ∪ ours) unless every row is now deleted.
    val replacement: Map[String, Seq[Action]] =
      changed.map { case (winner, grown) => abs(winner.path) -> (winner.remove(now) +: grown.toSeq) }.toMap
    val done = mutable.HashSet.empty[String]
    val body = staged.flatMap {
      case f: AddFile if replacement.contains(abs(f.path)) => Nil
      case r: RemoveFile if replacement.contains(abs(r.path)) =>
        if (done.add(abs(r.path))) replacement(abs(r.path)) else Nil
      case other => Seq(other)
    }
    lastStaged = Some(body)
    body
  }

  /** Vector files written by [[restage]] (garbage if the commit fails). */
  def writtenFiles: Seq[Path] = written

  /**
   * After the commit landed: of `initial` (the vector files written before the first attempt) and those [[restage]]
   * wrote, the ones the committed actions (the last re-staged ones) do not reference. Each re-stage supersedes the
   * vectors of the files it rebased; nobody else can reference our new files, so these are garbage.
   */
  def unreferenced(initial: Seq[Path]): Seq[Path] = lastStaged.fold(Seq.empty[Path]) { body =>
    val used = body.flatMap { case a: AddFile => a.deletionVector.flatMap(_.file(tablePath)); case _ => None }.toSet
    (initial ++ written).distinct.filterNot(used)
  }
  private var lastStaged: Option[Seq[Action]] = None
}
