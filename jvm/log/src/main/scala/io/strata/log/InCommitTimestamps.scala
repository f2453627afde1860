package io.strata.log

/**
 * In-commit timestamps (PROTOCOL.md, "In-Commit Timestamps"), the writer's side: when the table property
 * `delta.enableInCommitTimestamps` is on and the protocol lists the `inCommitTimestamp` writer feature, every commit
 * carries commitInfo first with `inCommitTimestamp` = max(now, the previous commit's + 1). A commit that turns them on
 * for a table with earlier commits records where they start (`delta.inCommitTimestampEnablementVersion` /
 * `...EnablementTimestamp`), as delta-spark does; both depend on the version the commit lands at, so they are worked
 * out again on every attempt. Readers use them through [[TableLog.commitTimestamps]].
 */
private[log] object InCommitTimestamps {
  val Feature = "inCommitTimestamp"
  val EnableKey = "delta.enableInCommitTimestamps"
  val EnablementVersionKey = "delta.inCommitTimestampEnablementVersion"
  val EnablementTimestampKey = "delta.inCommitTimestampEnablementTimestamp"

  def enabled(m: Metadata): Boolean = TableFeatures.InCommitTimestamp.isUsedBy(m)

  /** Whether commits to a table with this protocol and metadata must carry in-commit timestamps. */
  def active(p: Protocol, m: Metadata): Boolean = enabled(m) && TableFeatures.InCommitTimestamp.supportedBy(p)

  /**
   * The in-commit timestamp of a commit at `version`, attempted at `now`: one millisecond after the previous commit's
   * (its in-commit timestamp, or for a commit from before they were on, its file's modification time: PROTOCOL.md
   * asks the enabling commit to be later than that), and never before `now`. `previous`: the stamp of the previous
   * commit's file when the caller knows it (the version its transaction read): a timestamp this JVM remembers for
   * that commit is used only when it was remembered for that very file (a log replaced under the table since has
   * another), else the commit is read.
   */
  def next(log: TableLog, tableId: String, version: Long, now: Long, previous: Option[FileStamp]): Long =
    if (version == 0) now else math.max(now, previousTimestamp(log, tableId, version - 1, previous) + 1)

  private def previousTimestamp(log: TableLog, tableId: String, version: Long, stamp: Option[FileStamp]): Long = {
    val key = Known(log.tablePath.toString, tableId, version)
    Option(known.get(key)).filter(k => stamp.exists(_.sameFile(k._2))).map(_._1).getOrElse {
      log.readCommit(version).collectFirst { case c: CommitInfo => c.inCommitTimestamp }.flatten.getOrElse(
        log.store.fs.getFileStatus(FileNames.deltaFile(log.logPath, version)).getModificationTime)
    }
  }

  /**
   * The in-commit timestamp of a commit this JVM wrote, whose file has `stamp`, so that the next commit to the table
   * needs no read of it (a commit never changes; the table id and the stamp tell a table re-created at the same path,
   * or a log put back from a copy, apart). One entry per table.
   */
  def landed(log: TableLog, tableId: String, version: Long, ict: Long, stamp: FileStamp): Unit = {
    known.keySet.removeIf(k => k.table == log.tablePath.toString)
    if (known.size > MaxKnown) known.clear()
    known.put(Known(log.tablePath.toString, tableId, version), (ict, stamp))
  }
  private final case class Known(table: String, tableId: String, version: Long)
  private val known = new java.util.concurrent.ConcurrentHashMap[Known, (Long, FileStamp)]()
  private val MaxKnown = 10000

  /**
   * `staged`, the metadata a commit at `version` with in-commit timestamp `ict` writes: the enablement properties
   * are added when this commit turns the timestamps on for a table that has earlier commits (`before`, the metadata
   * read), and dropped when it turns them off.
   */
  def withEnablement(staged: Metadata, before: Option[Metadata], version: Long, ict: Option[Long]): Metadata = {
    val conf = staged.configuration
    if (!enabled(staged)) staged.copy(configuration = conf - EnablementVersionKey - EnablementTimestampKey)
    else if (before.exists(enabled) || before.isEmpty || ict.isEmpty) staged
    else staged.copy(configuration = conf + (EnablementVersionKey -> version.toString) +
      (EnablementTimestampKey -> ict.get.toString))
  }
}
