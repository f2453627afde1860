package io.strata.log

import org.apache.hadoop.fs.FileStatus

/**
 * The latest snapshot of recently used tables, per JVM, so that loading a table again reads only the commits that
 * landed since (one listing, the new commit files) instead of replaying checkpoint and log. An entry is used only
 * while the commit file it was built from is still there, unchanged (a table deleted and created again at the same
 * place starts over), and only while no newer checkpoint exists (a snapshot's segment then is the one a full load
 * would choose). Bounded: the least recently used tables are dropped.
 */
private[log] object SnapshotCache {
  final case class Entry(snapshot: Snapshot, commitLength: Long, commitModificationTime: Long)

  private val MaxTables = 32
  private val entries = new java.util.LinkedHashMap[String, Entry](16, 0.75f, true) {
    override def removeEldestEntry(e: java.util.Map.Entry[String, Entry]): Boolean = size() > MaxTables
  }

  def get(table: String): Option[Entry] = entries.synchronized(Option(entries.get(table)))

  /** Remembers `snapshot` as the table's latest, built up to the commit file `commit`. */
  def put(table: String, snapshot: Snapshot, commit: Option[FileStatus]): Unit = commit.foreach { st =>
    entries.synchronized {
      val current = Option(entries.get(table))
      if (current.forall(_.snapshot.version <= snapshot.version)) {
        entries.put(table, Entry(snapshot, st.getLen, st.getModificationTime))
      }
    }
  }

  def invalidate(table: String): Unit = entries.synchronized(entries.remove(table))

  /** True when `entry` still describes the table whose log lists these commits and checkpoints. */
  def isCurrent(entry: Entry, commits: Map[Long, FileStatus], checkpointVersions: Iterable[Long]): Boolean =
    isCurrent(entry.snapshot.version, entry.snapshot.segment.checkpointVersion, entry.commitLength,
      entry.commitModificationTime, commits, checkpointVersions)

  /**
   * True when a state of `version`, read from checkpoint `checkpoint`, built up to a commit file of this length and
   * modification time, still describes the table whose log lists these commits and checkpoints.
   */
  def isCurrent(version: Long, checkpoint: Option[Long], commitLength: Long, commitModificationTime: Long,
                commits: Map[Long, FileStatus], checkpointVersions: Iterable[Long]): Boolean =
    commits.get(version).exists(st => st.getLen == commitLength && st.getModificationTime == commitModificationTime) &&
      !checkpointVersions.exists(cp => cp > checkpoint.getOrElse(-1L) && cp <= commits.keys.max)
}
