package io.strata.write

import java.util.UUID

import io.strata.log.AddFile
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import scala.util.control.NonFatal

/**
 * The data files of one write job. Every file name carries the job's whole UUID, so that after a failed job the
 * files of tasks Spark no longer reported can still be found and deleted: the abort waits for the job's remaining
 * tasks, then sweeps the table's directories for files with that UUID, skipping any file the table's latest version
 * references (a sweep must never delete committed data, whoever wrote it). The sweep lists the table (outside
 * `_delta_log`), which is paid on failure only.
 *
 * A job that commits can leave garbage too: a task attempt that died without running its abort (its executor JVM
 * killed or lost) leaves the file it had open, and Spark reruns the task. Each task reports whether it was such a
 * rerun ([[JobFiles.isRerun]]); when one was, the commit is followed by the same sweep, keeping the files it added.
 */
final class JobFiles(val tableRoot: String, val token: String = UUID.randomUUID().toString) extends Serializable {
  private val sparkTag = s"strata-write-$token"
  private val namePattern = s"""part-\\d{5}-$token-[0-9a-f]{8}-c\\d{3}\\..*""".r

  /** `part-NNNNN-<job uuid>-<8 random hex>-cNNN<ext>`: no two attempts share a name, no other job's file matches. */
  def fileName(taskId: Int, fileCounter: Int, extension: String): String =
    f"part-$taskId%05d-$token-${UUID.randomUUID().toString.take(8)}-c$fileCounter%03d$extension"

  def isJobFile(name: String): Boolean = namePattern.matches(name)

  def tagged[T](body: => T): T = JobTasks.tagged(sparkTag)(body)
  def tagJobs(): Unit = JobTasks.addTag(sparkTag)
  def untagJobs(): Unit = JobTasks.removeTag(sparkTag)

  /**
   * After a failed job (nothing committed): waits for its straggling tasks, then deletes every file of the job under
   * the table. Best effort; what it cannot delete is unreferenced by the log, invisible to readers.
   */
  def sweepAfterAbort(conf: Configuration, waitMs: Long = 120000L): Unit = {
    val root = new Path(tableRoot)
    sweep(conf, waitMs, () => io.strata.log.TableLog.forPath(root, conf).snapshotOption()
      .map(s => s.files.map(f => s.absolutePath(f.path).toString).toSet).getOrElse(Set.empty))
  }

  /**
   * After this job committed `added`, when some task was a rerun ([[JobFiles.isRerun]]): waits for straggling tasks,
   * then deletes every file of the job that the commit did not add (what dead attempts left). Only this job's commit
   * can reference a file with its UUID, so `added` is all that must stay, whatever later commits did. Best effort.
   */
  def sweepAfterCommit(conf: Configuration, added: Seq[AddFile], waitMs: Long = 120000L): Unit = {
    val root = new Path(tableRoot)
    sweep(conf, waitMs, () => added.map(f => io.strata.log.Snapshot.absolutePath(root, f.path)).map { p =>
      p.getFileSystem(conf).makeQualified(p).toString
    }.toSet)
  }

  /**
   * After this job committed `added` as a version of an application transaction ([[JobFiles.forAppVersion]]): deletes
   * every file that an attempt of the same application version wrote and that the commit did not add: files of
   * attempts that died without their abort (a driver killed before its log commit) and of this job's dead task
   * attempts. Only one commit can ever carry that version, so nothing else may reference them. Best effort.
   */
  def sweepEarlierAttempts(conf: Configuration, added: Seq[AddFile], waitMs: Long = 120000L): Unit = {
    val root = new Path(tableRoot)
    sweep(conf, waitMs, () => added.map(f => io.strata.log.Snapshot.absolutePath(root, f.path)).map { p =>
      p.getFileSystem(conf).makeQualified(p).toString
    }.toSet, isAttemptFile)
  }

  /** A file of any attempt of this job's application version ([[JobFiles.forAppVersion]]). */
  def isAttemptFile(name: String): Boolean = attemptPattern.matches(name)
  private val attemptPattern =
    s"""part-\\d{5}-${token.take(18)}-[0-9a-f]{4}-[0-9a-f]{12}-[0-9a-f]{8}-c\\d{3}\\..*""".r

  private def sweep(conf: Configuration, waitMs: Long, keep: () => Set[String],
                    matches: String => Boolean = isJobFile): Unit = try {
    JobTasks.awaitTasksEnded(sparkTag, waitMs)
    val root = new Path(tableRoot)
    val fs = root.getFileSystem(conf)
    lazy val kept = keep()
    def sweepDir(dir: Path): Unit = fs.listStatus(dir).foreach { st =>
      val name = st.getPath.getName
      if (st.isDirectory) { if (!name.startsWith("_") && !name.startsWith(".")) sweepDir(st.getPath) }
      else if (matches(name) && !kept(fs.makeQualified(st.getPath).toString)) fs.delete(st.getPath, false)
    }
    if (fs.exists(root)) sweepDir(root)
  } catch { case NonFatal(_) => }
}

object JobFiles {
  /**
   * The files of one attempt to commit version `version` of application `appId` (a streaming micro-batch): the
   * token's first half is derived from the two, its second half is random, so every attempt has its own files and a
   * later attempt can still find an earlier one's.
   */
  def forAppVersion(tableRoot: String, appId: String, version: Long): JobFiles =
    new JobFiles(tableRoot, StreamingBatch.tokenPrefix(appId, version) + UUID.randomUUID().toString.drop(18))

  /**
   * Executor side: whether the running task attempt is a rerun (a later attempt of the task, or a task of a
   * resubmitted stage). An earlier attempt may have died without its abort and left a file behind.
   */
  def isRerun: Boolean = Option(org.apache.spark.TaskContext.get()).exists(c => c.attemptNumber() > 0 ||
    c.stageAttemptNumber() > 0)
}

/** What one task wrote, and whether it was a rerun ([[JobFiles.isRerun]]). */
final case class TaskFiles(files: Seq[AddFile], rerun: Boolean)
