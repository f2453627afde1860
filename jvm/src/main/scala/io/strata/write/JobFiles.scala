package io.strata.write

import java.util.UUID

import io.strata.shim.JobTasks
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import scala.util.control.NonFatal

/**
 * The data files of one write job. Every file name carries the job's whole UUID, so that after a failed job the
 * files of tasks Spark no longer reported can still be found and deleted: the abort waits for the job's remaining
 * tasks, then sweeps the table's directories for files with that UUID, skipping any file the table's latest version
 * references (a sweep must never delete committed data, whoever wrote it). The sweep lists the table (outside
 * `_delta_log`), which is paid on failure only.
 */
final class JobFiles(val tableRoot: String) extends Serializable {
  val token: String = UUID.randomUUID().toString
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
  def sweepAfterAbort(conf: Configuration, waitMs: Long = 120000L): Unit = try {
    JobTasks.awaitTasksEnded(sparkTag, waitMs)
    val root = new Path(tableRoot)
    val fs = root.getFileSystem(conf)
    val log = io.strata.log.TableLog.forPath(root, conf)
    lazy val referenced: Set[String] =
      log.snapshotOption().map(s => s.files.map(f => s.absolutePath(f.path).toString).toSet).getOrElse(Set.empty)
    def sweep(dir: Path): Unit = fs.listStatus(dir).foreach { st =>
      val name = st.getPath.getName
      if (st.isDirectory) { if (!name.startsWith("_") && !name.startsWith(".")) sweep(st.getPath) }
      else if (isJobFile(name) && !referenced(fs.makeQualified(st.getPath).toString)) fs.delete(st.getPath, false)
    }
    if (fs.exists(root)) sweep(root)
  } catch { case NonFatal(_) => }
}
