package io.strata.log

/**
 * Time travel by timestamp (PROTOCOL.md, "Commit Provenance" / "In-Commit Timestamps"): which version was the
 * table's at an instant, from the commits' timestamps. Part of [[TableLog]], kept in a file of its own.
 */
trait TimeTravel { this: TableLog =>
  /**
   * The snapshot of the last version committed at or before `timestampMillis` (time travel by timestamp). A timestamp
   * before the first commit or after the latest one is refused naming the range, as delta-spark does.
   */
  def snapshotAsOf(timestampMillis: Long): Snapshot = snapshotAt(versionAsOf(timestampMillis))

  /** The last version committed at or before `timestampMillis`, refused as [[snapshotAsOf]] refuses it. */
  def versionAsOf(timestampMillis: Long): Long = {
    val stamps = commitTimestamps()
    if (stamps.isEmpty) throw TableNotFoundException(tablePath.toString)
    def at(v: (Long, Long)) = s"version ${v._1} at ${java.time.Instant.ofEpochMilli(v._2)}"
    val range = s"the table's commits go from ${at(stamps.head)} to ${at(stamps.last)}"
    val asked = java.time.Instant.ofEpochMilli(timestampMillis)
    if (timestampMillis < stamps.head._2) throw InvalidTableOperationException("STRATA_TIME_TRAVEL_OUT_OF_RANGE",
      s"No version of $tablePath was committed at or before $asked: $range. Use a timestamp in that range.")
    if (timestampMillis > stamps.last._2) throw InvalidTableOperationException("STRATA_TIME_TRAVEL_OUT_OF_RANGE",
      s"Timestamp $asked is after the latest commit of $tablePath: $range. Use a timestamp in that range.")
    stamps.filter(_._2 <= timestampMillis).last._1
  }

  /**
   * Commit timestamps by version. Versions written with in-commit timestamps (PROTOCOL.md, "In-Commit Timestamps":
   * from `delta.inCommitTimestampEnablementVersion`, or from the start when the table was created with
   * `delta.enableInCommitTimestamps`) take commitInfo.inCommitTimestamp; the others take the commit file's
   * modification time, made monotonic as PROTOCOL.md asks.
   */
  def commitTimestamps(): Seq[(Long, Long)] = {
    val listing = listLog()
    // The latest metadata from the version's head (a snapshot this JVM holds, else the non-file columns only):
    // time travel on a table above the distributed-state threshold builds no file state on the driver.
    commitTimestamps(listing, if (listing.commits.isEmpty) None else headFrom(listing).map(_.metadata))
  }

  /** [[commitTimestamps]] of the commits in `listing`, `latest` being the table's latest metadata. */
  private[log] def commitTimestamps(listing: LogListing, latest: Option[Metadata]): Seq[(Long, Long)] = {
    val commits = listing.commits.toSeq.sortBy(_._1)
    val ictFrom = latest.flatMap(TableLog.inCommitTimestampsFrom)
    var last = Long.MinValue
    commits.map { case (v, st) =>
      val ict = ictFrom.filter(v >= _).map { _ =>
        readCommit(v, st.getPath).collectFirst { case c: CommitInfo => c.inCommitTimestamp }.flatten.getOrElse(
          throw CorruptLogException("STRATA_CORRUPT_LOG",
            s"Commit $v of $tablePath has no commitInfo.inCommitTimestamp, but the table " +
            "has in-commit timestamps from version " + ictFrom.get + " on."))
      }
      last = ict.getOrElse(math.max(last + 1, st.getModificationTime))
      v -> last
    }
  }
}
