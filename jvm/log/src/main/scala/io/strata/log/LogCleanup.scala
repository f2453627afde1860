package io.strata.log

import org.apache.hadoop.fs.FileStatus

/**
 * Deletes expired files of `_delta_log` (delta-spark's MetadataCleanup; the protocol leaves log retention to
 * writers) while keeping every version committed within the retention rebuildable:
 *
 *  - the cutoff is `now - retention` (`delta.logRetentionDuration`, 30 days by default), exact to the millisecond
 *    (delta-spark rounds it down to midnight UTC);
 *  - a commit's age is its commit timestamp as time travel reads it: the commit file's modification time made
 *    monotonic over the versions, or its in-commit timestamp where the table has them;
 *  - the new oldest version is the newest complete checkpoint that was committed at or before the cutoff, is not
 *    newer than the checkpoint `_last_checkpoint` names, and is followed by every commit up to the latest. Every
 *    commit, checkpoint (complete or not), version checksum (`.crc`) and log compaction file below it is deleted,
 *    oldest first, so the log stays rebuildable whenever a deletion is interrupted. Nothing else is: not that
 *    checkpoint, not the newest one, not `_last_checkpoint`. So every version committed after the cutoff, and the
 *    table as of any time after it, can still be read, time travelled to and restored.
 *
 * delta-spark deletes a little more: everything before the newest checkpoint whose preceding commit is older than
 * the (midnight-rounded) cutoff, so time travel to the cutoff instant itself may fail there; here it does not.
 */
object LogCleanup {
  val RetentionKey = "delta.logRetentionDuration"
  val DefaultRetentionMillis: Long = 30L * 24 * 3600 * 1000
  /** Whether log cleanup runs after each automatic checkpoint (delta-spark's key; true by default). */
  val AutomaticKey = "delta.enableExpiredLogCleanup"

  /** What one cleanup did. `oldestVersion`: the oldest version the log can rebuild afterwards. */
  final case class Result(commitsDeleted: Long, checkpointsDeleted: Long, otherFilesDeleted: Long,
                          oldestVersion: Long, cutoffMillis: Long)

  /** `delta.logRetentionDuration` of a table (30 days when unset or unreadable, as delta-spark defaults). */
  def retentionMillis(m: Metadata): Long =
    m.configuration.get(RetentionKey).flatMap(Intervals.parseMillis).getOrElse(DefaultRetentionMillis)

  /** Whether the table cleans its log after automatic checkpoints (`delta.enableExpiredLogCleanup`, default true). */
  def automatic(m: Metadata): Boolean = !m.configuration.get(AutomaticKey).exists(_.trim.equalsIgnoreCase("false"))

  /**
   * Deletes the log files that only versions committed before `now - retentionMillis` need. `latest`: the table's
   * latest snapshot when the caller holds it (no log listing for it).
   */
  def run(log: TableLog, retentionMillis: Long, now: Long, latest: Option[Snapshot] = None): Result =
    runOver(log, retentionMillis, now, latest.map(SnapshotHead.of).getOrElse(
      log.headOption().getOrElse(throw TableNotFoundException(log.tablePath.toString))))

  /**
   * [[run]] for a table whose latest version the caller holds as `snapshot`, a head without the file state (a table
   * above the distributed-state threshold): only its protocol, metadata and version are read.
   */
  def runOver(log: TableLog, retentionMillis: Long, now: Long, snapshot: SnapshotHead): Result = {
    require(retentionMillis >= 0, s"retention must not be negative: $retentionMillis ms")
    // Only a writer that knows every feature of the table may remove its history (a feature may protect it).
    ProtocolSupport.checkWritable(snapshot.protocol, snapshot.metadata, log.tablePath.toString)
    val listing = log.listLog()
    if (listing.v2Checkpoints.nonEmpty) throw UnsupportedProtocolException("STRATA_UNSUPPORTED_PROTOCOL",
      s"Table ${log.tablePath} has V2 checkpoints, whose cleanup (sidecar files in _delta_log/_sidecars) Strata " +
        "does not do yet: its log is not cleaned up. delta-spark's log cleanup handles it.")
    val cutoff = now - retentionMillis
    val boundary = protectedBefore(snapshot)
    val oldest = newOldestVersion(log, listing, snapshot.metadata, cutoff).filter { keep =>
      // checkpointProtection: below the boundary nothing goes unless everything below it goes in this one cleanup.
      val allowed = boundary.forall(keep >= _)
      if (!allowed) LogCleanup.logger.info(s"Log cleanup of ${log.tablePath}: versions below $keep expired, but " +
        s"checkpointProtection keeps the history before version ${boundary.get} until all of it can go at once.")
      allowed
    }
    val doomed = oldest.toSeq.flatMap { keep =>
      listing.classified.filter {
        case (FileNames.DeltaFile(v), _) => v < keep
        case (FileNames.CheckpointPart(v, _, _), _) => v < keep
        case (FileNames.ChecksumFile(v), _) => v < keep
        case (FileNames.CompactedDelta(_, end), _) => end < keep
        case _ => false
      }
    }.sortBy { case (kind, st) =>
      // checkpointProtection also asks for commits to go before the checkpoints (no checkpoint before the boundary
      // is ever missing while its commits are there).
      val commitsFirst = boundary.isDefined && !kind.isInstanceOf[FileNames.DeltaFile]
      (commitsFirst, kind.version, st.getPath.getName)
    }
    var commits, checkpoints, others = 0L
    doomed.foreach { case (kind, st) =>
      if (log.store.fs.delete(st.getPath, false)) kind match {
        case _: FileNames.DeltaFile => commits += 1
        case _: FileNames.CheckpointPart => checkpoints += 1
        case _ => others += 1
      }
    }
    if (doomed.nonEmpty) LogCleanup.logger.info(s"Log cleanup of ${log.tablePath}: deleted $commits commit, " +
      s"$checkpoints checkpoint and $others other log files committed before ${java.time.Instant.ofEpochMilli(cutoff)} " +
      s"(below version ${oldest.get}).")
    val after = if (doomed.isEmpty) listing else log.listLog()
    Result(commits, checkpoints, others, after.oldestReconstructable.getOrElse(snapshot.version), cutoff)
  }

  val ProtectionFeature = "checkpointProtection"
  val ProtectedBeforeKey = "delta.requireCheckpointProtectionBeforeVersion"

  /**
   * The version before which checkpointProtection (delta-spark's DROP FEATURE; protocol RFC "Checkpoint Protection")
   * protects the history, when the protocol lists the feature: `delta.requireCheckpointProtectionBeforeVersion`
   * (0, nothing protected, when unset).
   */
  def protectedBefore(s: SnapshotHead): Option[Long] =
    if (!TableFeatures.CheckpointProtection.supportedBy(s.protocol)) None
    else Some(s.metadata.configuration.get(ProtectedBeforeKey).flatMap(_.trim.toLongOption).getOrElse(0L))

  /** The version below which everything goes, when some complete checkpoint qualifies (see the class comment). */
  private def newOldestVersion(log: TableLog, listing: LogListing, latest: Metadata,
                               cutoff: Long): Option[Long] = {
    val hint = log.lastCheckpointVersion().filter(listing.checkpoints.contains)
    val candidates = listing.oldestReconstructable.toSeq.flatMap { first =>
      listing.checkpoints.keys.filter(c => c >= first && hint.forall(c <= _))
    }
    if (candidates.isEmpty) None
    else {
      val committedAt = log.commitTimestamps(listing, Some(latest)).toMap
      // A checkpoint whose commit file is gone: its own files are younger than the commit was.
      def age(c: Long): Long = committedAt.getOrElse(c, listing.checkpoints(c).map((_: FileStatus).getModificationTime).max)
      candidates.filter(age(_) <= cutoff).maxOption
    }
  }

  private val logger = org.slf4j.LoggerFactory.getLogger(getClass)
}
