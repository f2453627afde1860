package io.strata.log

import org.apache.hadoop.fs.FileStatus

import scala.util.control.NonFatal

/**
 * Work that follows a commit once it is durable (delta-spark's hooks.PostCommitHook): checkpoints, log cleanup, and
 * a connector's own work such as auto-compaction. A hook only makes later reads faster or the table tidier; the
 * commit has landed whatever it does, so a hook's failure is logged and never fails the write (the transaction
 * still returns its [[CommitResult]]), and the hooks after it still run.
 *
 * After each commit that lands (not after a retry found its application version already committed), the
 * transaction runs in the committing thread, in this order: [[CheckpointHook]], [[LogCleanupHook]], then the hooks
 * registered on it ([[Transaction.registerPostCommitHook]]) in the order they were registered.
 */
trait PostCommitHook {
  /** Names the hook in the warning its failure logs. */
  def name: String

  def run(commit: CommittedVersion): Unit
}

/**
 * A commit that landed, as post-commit hooks see it: the table's `log`, the transaction's `result` (the version it
 * created, its commitInfo), the `actions` it committed (commitInfo aside) and the table's `metadata` at that version.
 * `snapshot`: the table at the committed version when it is known without reading the log (the commit directly
 * followed the version its transaction read); otherwise a hook that needs it loads `log.snapshotAt(version)`.
 */
final class CommittedVersion private[log] (
    val log: TableLog,
    val result: CommitResult,
    val actions: Seq[Action],
    val metadata: Metadata,
    val snapshot: Option[Snapshot],
    /** The commit file `snapshot` was cached with (see [[SnapshotCache]]). */
    private[log] val commitFile: Option[FileStatus],
    /**
     * False when the transaction read the table without its file state ([[TableLog.startTransaction(head*]]: a blind
     * append over the version's head): [[CheckpointHook]] leaves the checkpoint to a hook of the connector's, which
     * knows from the table's size whether the driver ([[CheckpointHook.writeOverHead]]) or Spark jobs write it.
     */
    val readFileState: Boolean = true) {
  def version: Long = result.version

  /** The table as [[CheckpointHook]] checkpointed it at `version`, when it did: [[LogCleanupHook]] follows it. */
  private[log] var checkpointed: Option[Snapshot] = None
}

object PostCommitHook {
  private val logger = org.slf4j.LoggerFactory.getLogger(classOf[PostCommitHook])

  /** What runs after every commit that lands, before the hooks registered on its transaction. */
  private[log] val LogHooks: Seq[PostCommitHook] = Seq(CheckpointHook, LogCleanupHook)

  /** Runs `hooks` in order after `commit` landed; a failing hook is logged, and the next one still runs. */
  private[log] def runAll(hooks: Seq[PostCommitHook], commit: CommittedVersion): Unit = hooks.foreach { hook =>
    try hook.run(commit) catch {
      case NonFatal(e) => logger.warn(s"Post-commit hook '${hook.name}' after version ${commit.version} of " +
        s"${commit.log.tablePath} failed; the commit itself has landed.", e)
    }
  }
}

/**
 * Writes the checkpoint when the committed version is due one (`delta.checkpointInterval`). The table after the
 * commit, when known, is checkpointed as is (no log replay), and stays cached with the new checkpoint as its
 * segment, which is what a full load would choose now: the next transaction reads no log file at all.
 *
 * A table of at least `strata.checkpoint.backgroundMinFiles` live files (Hadoop conf; default 100,000) is
 * checkpointed on a background thread of this JVM, with the log cleanup that follows it: the write that made the
 * commit returns at once instead of after a checkpoint of every file (seconds on a million-file table). That is safe
 * because a checkpoint is only a shortcut: it is written under a temporary name and renamed into place, readers
 * use it only once it is complete, and if this JVM ends first the next due version writes one.
 */
object CheckpointHook extends PostCommitHook {
  val name = "checkpoint"
  val BackgroundMinFilesKey = "strata.checkpoint.backgroundMinFiles"
  private val logger = org.slf4j.LoggerFactory.getLogger(getClass)

  private val background = java.util.concurrent.Executors.newSingleThreadExecutor { (r: Runnable) =>
    val t = new Thread(r, "strata-checkpoint"); t.setDaemon(true); t
  }

  def run(commit: CommittedVersion): Unit = {
    val (log, version) = (commit.log, commit.version)
    if (!due(commit)) ()
    else if (!commit.readFileState) logger.debug(s"Version $version of ${log.tablePath} is due a checkpoint; its " +
      "transaction read no file state (a blind append over the head): the connector's hook writes it.")
    else {
      commit.snapshot.filter(_.numFiles >= log.conf.getLong(BackgroundMinFilesKey, 100000L)) match {
        case Some(s) =>
          background.execute { () =>
            try {
              write(commit, s)
              LogCleanupHook.after(commit, s)
            } catch {
              case scala.util.control.NonFatal(e) => logger.warn(s"Background checkpoint of version $version of " +
                s"${log.tablePath} failed; the commit itself has landed.", e)
              // An error such as OutOfMemoryError would otherwise end this thread with no word of the table: the
              // parts were deleted and `_last_checkpoint` not written ([[CheckpointWriter]]), the heap the write
              // held is free again, and the next due version checkpoints on this thread.
              case e: VirtualMachineError => logger.error(s"Background checkpoint of version $version of " +
                s"${log.tablePath} failed with ${e.getClass.getSimpleName}; no checkpoint of this version was " +
                "recorded, the commit itself has landed, and the next due version writes one.", e)
            }
          }
        case None =>
          val s = commit.snapshot.getOrElse(log.snapshotAt(version))
          write(commit, s)
          commit.checkpointed = Some(s)
      }
    }
  }

  /** Whether the committed version is due a checkpoint (`delta.checkpointInterval`). */
  def due(commit: CommittedVersion): Boolean =
    commit.version > 0 && commit.version % TableLog.checkpointInterval(commit.metadata.configuration) == 0

  private def write(commit: CommittedVersion, s: Snapshot): Unit = {
    val written = commit.log.writeCheckpoint(s)
    for (_ <- commit.snapshot; status <- commit.commitFile) keep(commit.log, s, written, status)
  }

  /** Keeps `s`, just checkpointed, cached with the new checkpoint as its segment (what a full load now chooses). */
  private def keep(log: TableLog, s: Snapshot, written: WrittenCheckpoint, status: FileStatus): Unit = {
    val segment = LogSegment(s.version, Some(s.version), written.files, Nil, s.segment.lastCommitTimestamp,
      Some(FileStamp.of(status)))
    SnapshotCache.put(log.tablePath.toString, s.withSegment(segment), Some(status))
  }

  /**
   * Writes the checkpoint of `version`, committed by a transaction that read no file state (a blind append over the
   * head), on the driver in the calling thread, for a table the connector found small enough: the snapshot this JVM
   * holds brought up to `version` when it can be (then kept with the new checkpoint as its segment, so that later
   * reads and appends stay warm), else that version loaded; the expired-log cleanup follows, as after every
   * checkpoint. Returns the snapshot checkpointed.
   */
  def writeOverHead(log: TableLog, version: Long): Snapshot = {
    val latest = log.snapshotOption().filter(_.version == version)
    val s = latest.getOrElse(log.snapshotAt(version))
    val written = log.writeCheckpoint(s)
    if (latest.isDefined) log.store.status(FileNames.deltaFile(log.logPath, version)).foreach(keep(log, s, written, _))
    LogCleanupHook.after(log, SnapshotHead.of(s))
    s
  }

  /** Waits until every background checkpoint submitted so far has been written (or failed). */
  def awaitBackground(): Unit = background.submit(new Runnable { def run(): Unit = () }).get()
}

/** Deletes expired log files after a new checkpoint (`delta.enableExpiredLogCleanup`, as delta-spark does). */
object LogCleanupHook extends PostCommitHook {
  val name = "log cleanup"

  def run(commit: CommittedVersion): Unit = commit.checkpointed.foreach(after(commit, _))

  /** The cleanup that follows the checkpoint `s` of `commit`'s version (also run by a background checkpoint). */
  private[log] def after(commit: CommittedVersion, s: Snapshot): Unit = after(commit.log, SnapshotHead.of(s))

  /**
   * The cleanup that follows a checkpoint of `head`'s version, on the driver's rules ([[LogCleanup]]: the table's
   * `delta.enableExpiredLogCleanup`, `delta.logRetentionDuration` and checkpointProtection): also after a checkpoint
   * a connector wrote without the file state. Returns what it did; None when the table turned it off.
   */
  def after(log: TableLog, head: SnapshotHead): Option[LogCleanup.Result] =
    if (!LogCleanup.automatic(head.metadata)) None
    else Some(LogCleanup.runOver(log, LogCleanup.retentionMillis(head.metadata), System.currentTimeMillis(), head))
}
