package io.strata.log

import java.time.Instant

/**
 * Time travel to a version whose files VACUUM has deleted: refused up front with an error that says so, instead of
 * a file-not-found from inside a Spark task. VACUUM deletes the files of the oldest tombstones first, so checking
 * the one file of the old version that the newest version removed longest ago (with its deletion vector) catches a
 * vacuumed version in one or two file system calls. A version some of whose files went otherwise still fails in
 * the read, naming the file.
 */
object VacuumedFiles {
  /** `old`, after checking that the files of it most likely to have been vacuumed are still there. */
  def checked(log: TableLog, old: Snapshot): Snapshot = {
    val latest = log.snapshot()
    if (latest.version == old.version) return old
    def key(path: String, dvId: String) = (old.absolutePath(path).toString, dvId)
    def filesOf(path: String, dv: Option[DeletionVectorDescriptor]): Seq[String] = old.absolutePath(path).toString +:
      dv.flatMap(d => scala.util.Try(d.file(old.tablePath)).toOption.flatten).map(_.toString).toSeq
    val live = latest.files.iterator.map(f => key(f.path, f.dvId)).toSet
    val referenced = latest.files.iterator.flatMap(f => filesOf(f.path, f.deletionVector)).toSet
    val removedAt = latest.tombstones.iterator.map(r => key(r.path, r.dvId) -> r.deletionTimestamp.getOrElse(0L)).toMap
    // Files `old` reads that the newest version does not, by when they left the table (no tombstone any more: a
    // checkpoint dropped it as expired, the oldest of all). VACUUM deletes the oldest first.
    val candidates = old.files.iterator.filterNot(f => live.contains(key(f.path, f.dvId))).flatMap { f =>
      val at = removedAt.get(key(f.path, f.dvId))
      filesOf(f.path, f.deletionVector).filterNot(referenced).map(p => (p, at))
    }.toSeq.distinctBy(_._1).sortBy(_._2.getOrElse(Long.MinValue)).take(Checked)
    failIfMissing(log, old.version, candidates, latest.version, latest.metadata)
    old
  }

  /**
   * Throws the error of a vacuumed version when one of `candidates` (files version `version` reads that the latest
   * version does not, with when the latest version's tombstone says they left, oldest first) is missing: the one
   * check both the driver's and the distributed time travel make.
   */
  def failIfMissing(log: TableLog, version: Long, candidates: Seq[(String, Option[Long])], latestVersion: Long,
                    latest: Metadata): Unit =
    candidates.find { case (p, _) => val path = new org.apache.hadoop.fs.Path(p); !path.getFileSystem(log.conf).exists(path) }
      .foreach { case (p, at) =>
        val when = at.map(t => s"at ${Instant.ofEpochMilli(t)}").getOrElse("long enough ago that the log no longer says when")
        val retention = TableLog.tombstoneRetentionMillis(latest.configuration) / 3600000.0
        throw InvalidTableOperationException("STRATA_VERSION_NOT_AVAILABLE",
          s"Version $version of ${log.tablePath} can no longer be read: " +
          s"its file $p does not exist. A later version removed it from the table ($when), and it has been deleted " +
          s"since, most likely by VACUUM, which deletes removed files once they are older than the retention (the " +
          f"table's delta.deletedFileRetentionDuration is $retention%.0f hours, or the retention_hours it was given). " +
          s"Read a later version (the latest is $latestVersion).")
      }

  /** How many of the files most likely vacuumed are checked (VACUUM deletes the oldest removed files first). */
  val Checked = 3
}
