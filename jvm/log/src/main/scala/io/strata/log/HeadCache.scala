package io.strata.log

import org.apache.hadoop.fs.FileStatus

/**
 * The latest [[SnapshotHead]] of recently used tables, per JVM: what [[SnapshotCache]] is to snapshots, for tables
 * whose file state is never built on the driver. Loading the head again then reads only the commits that landed
 * since (their non-file actions), not the checkpoint's columns again; a commit made over a head leaves the head
 * after it here. The same validity rules as [[SnapshotCache]] (the commit file it was built from unchanged, no newer
 * checkpoint); bounded, least recently used tables dropped.
 */
private[log] object HeadCache {
  final case class Entry(head: SnapshotHead, commitLength: Long, commitModificationTime: Long)

  private val MaxTables = 32
  private val entries = new java.util.LinkedHashMap[String, Entry](16, 0.75f, true) {
    override def removeEldestEntry(e: java.util.Map.Entry[String, Entry]): Boolean = size() > MaxTables
  }

  /** The table's cached head, when it still describes the table whose log lists these commits and checkpoints. */
  def current(table: String, commits: Map[Long, FileStatus], checkpointVersions: Iterable[Long]): Option[SnapshotHead] =
    entries.synchronized(Option(entries.get(table))).filter { e =>
      SnapshotCache.isCurrent(e.head.version, e.head.segment.checkpointVersion, e.commitLength,
        e.commitModificationTime, commits, checkpointVersions)
    }.map(_.head)

  /** The table's cached head, whatever the log holds now (see [[TableLog.heldHead]]). */
  def get(table: String): Option[SnapshotHead] = entries.synchronized(Option(entries.get(table))).map(_.head)

  /** Remembers `head` as the table's latest, built up to the commit file `commit`. */
  def put(table: String, head: SnapshotHead, commit: Option[FileStatus]): Unit = commit.foreach { st =>
    entries.synchronized {
      if (Option(entries.get(table)).forall(_.head.version <= head.version)) {
        entries.put(table, Entry(head, st.getLen, st.getModificationTime))
      }
    }
  }
}
