package io.strata.log

import org.apache.hadoop.fs.FileStatus

/**
 * The latest state (a [[Snapshot]], or a [[SnapshotHead]]) of recently used tables, per JVM, and the one rule for
 * when such a state may still be used: the commit file it was built up to is still there with the same
 * [[FileStamp]] (a table deleted and created again at the same place, or a log put back from a copy, starts over),
 * and no checkpoint newer than the one it was read from exists (its segment is then the one a full load would
 * choose). Bounded: the least recently used tables are dropped.
 * [[SnapshotCache]] and [[HeadCache]] are its two instances.
 */
private[log] class LatestStateCache[T](versionOf: T => Long, checkpointOf: T => Option[Long]) {
  private final class Entry(val state: T, val stamp: FileStamp) {
    /** True when `commit` is still the commit file this state was built up to (the same [[FileStamp]]). */
    def builtFrom(commit: FileStatus): Boolean = FileStamp.of(commit).sameFile(stamp)
  }

  private val entries = new RecentlyUsed[String, Entry](max = 32)

  /** The table's cached state, when it still describes the table whose log lists these commits and checkpoints. */
  def current(table: String, commits: Map[Long, FileStatus], checkpointVersions: Iterable[Long]): Option[T] =
    entries.get(table).filter { e =>
      commits.get(versionOf(e.state)).exists(e.builtFrom) &&
        !checkpointVersions.exists(cp => cp > checkpointOf(e.state).getOrElse(-1L) && cp <= commits.keys.max)
    }.map(_.state)

  /**
   * The table's cached state when the commit file it was built up to still has the stamp it
   * had (`status` of that version's commit file: asked outside the lock, only when the table has a state here).
   */
  def unchanged(table: String, status: Long => Option[FileStatus]): Option[T] =
    entries.get(table).filter { e =>
      status(versionOf(e.state)).exists(e.builtFrom)
    }.map(_.state)

  /** The table's cached state, whatever the log holds now (for [[TableLog.heldSnapshot]] / [[TableLog.heldHead]]). */
  def get(table: String): Option[T] = entries.get(table).map(_.state)

  /** Remembers `state` as the table's latest (unless a newer one is held), built up to the commit file `commit`. */
  def put(table: String, state: T, commit: Option[FileStatus]): Unit = commit.foreach { st =>
    entries.putIf(table, new Entry(state, FileStamp.of(st)))(
      _.forall(e => versionOf(e.state) <= versionOf(state)))
  }

  def invalidate(table: String): Unit = entries.remove(table)
}

