package io.strata.write.v1

import io.strata.log.AddFile
import io.strata.table.{PartitionPaths, PartitionValues}
import io.strata.write.{DataFiles, JobFiles, TaskFiles}
import org.apache.hadoop.fs.Path
import org.apache.hadoop.mapreduce.{JobContext, TaskAttemptContext}
import org.apache.spark.internal.io.{FileCommitProtocol, FileNameSpec}
import org.apache.spark.internal.io.FileCommitProtocol.TaskCommitMessage
import org.apache.spark.sql.types.StructType

import scala.collection.mutable
import scala.util.control.NonFatal

/**
 * The commit protocol of Strata's V1 write path (the role of Delta's DelayedCommitProtocol). Data files go straight
 * to their final place, with names no other attempt can produce; nothing is visible until the driver commits their
 * add actions to the log. A task's commit returns its files with partition values, size and statistics read from
 * the Parquet footer; an aborted task or job deletes what it wrote, including files of tasks that committed after
 * the job had already failed (see [[JobFiles]]). Partition values come from the directory names Spark's writer
 * makes, which [[SparkFileWriter.write]] has it render in UTC: one name per instant.
 */
final class DirectCommitProtocol(
    files: JobFiles,
    partitionSchema: StructType,
    numIndexedCols: Int,
    /** A directory under the table root for the files of an unpartitioned write (compaction of one partition). */
    subdirectory: Option[String] = None) extends FileCommitProtocol with Serializable {

  /** Executor side: the relative (unencoded) paths this task attempt created. */
  @transient private var taskFiles: mutable.ArrayBuffer[String] = _
  /** Driver side: files of tasks that committed, to delete if the job aborts. */
  @transient private var committedTaskFiles: mutable.ArrayBuffer[AddFile] = _
  /** Driver side, after commitJob: the files the log commit will add. */
  @transient private var jobFiles: Seq[AddFile] = Nil
  /** Driver side, after commitJob: whether a task was a rerun, so that a dead attempt may have left a file. */
  @transient private var rerun = false

  def addedFiles: Seq[AddFile] = jobFiles
  def hadRerunTasks: Boolean = rerun

  override def setupJob(jobContext: JobContext): Unit = committedTaskFiles = mutable.ArrayBuffer.empty

  override def setupTask(taskContext: TaskAttemptContext): Unit = taskFiles = mutable.ArrayBuffer.empty

  override def newTaskTempFile(taskContext: TaskAttemptContext, dir: Option[String], spec: FileNameSpec): String = {
    val split = taskContext.getTaskAttemptID.getTaskID.getId
    // A fresh UUID per file: a retried or speculative attempt can never overwrite another attempt's file.
    // Spark's suffix is ".cNNN.<codec>.parquet"; Delta and Spark's own tables spell the counter "-cNNN".
    val name = spec.suffix match {
      case DirectCommitProtocol.CountedSuffix(counter, ext) => spec.prefix + files.fileName(split, counter.toInt, ext)
      case other => throw new IllegalStateException(s"Unexpected file name suffix '$other' from Spark's writer.")
    }
    val relative = dir.orElse(subdirectory).fold(name)(d => s"$d/$name")
    taskFiles += relative
    new Path(tableRoot, relative).toString
  }

  override def newTaskTempFile(taskContext: TaskAttemptContext, dir: Option[String], ext: String): String =
    newTaskTempFile(taskContext, dir, FileNameSpec("", ext))

  override def newTaskTempFileAbsPath(taskContext: TaskAttemptContext, absoluteDir: String, spec: FileNameSpec): String =
    throw new UnsupportedOperationException("Strata tables keep every file under the table root; " +
      "custom partition locations are not supported.")

  override def newTaskTempFileAbsPath(taskContext: TaskAttemptContext, absoluteDir: String, ext: String): String =
    newTaskTempFileAbsPath(taskContext, absoluteDir, FileNameSpec("", ext))

  override def commitTask(taskContext: TaskAttemptContext): TaskCommitMessage = {
    val conf = taskContext.getConfiguration
    val dataFiles = new DataFiles(tableRoot, conf, numIndexedCols)
    val adds = taskFiles.toSeq.flatMap(relative => dataFiles.finish(relative, partitionValues(relative)))
    // Last, so that the time between the authorization and the driver hearing of this task stays as short as it can.
    DirectCommitProtocol.authorizeTaskCommit(taskContext)
    new TaskCommitMessage(TaskFiles(adds, JobFiles.isRerun))
  }

  private def partitionValues(relative: String): Map[String, Option[String]] = {
    val dir = relative.lastIndexOf('/') match { case -1 => ""; case i => relative.substring(0, i) }
    val parsed = PartitionPaths.parseDirectory(dir).toMap
    partitionSchema.fields.map { f =>
      f.name -> parsed.get(f.name).flatMap(raw => PartitionValues.fromDirectoryValue(raw, f.dataType))
    }.toMap
  }

  override def abortTask(taskContext: TaskAttemptContext): Unit =
    if (taskFiles != null) taskFiles.foreach(f => deleteQuietly(new Path(tableRoot, f), taskContext.getConfiguration))

  override def onTaskCommit(taskCommit: TaskCommitMessage): Unit = {
    if (committedTaskFiles == null) committedTaskFiles = mutable.ArrayBuffer.empty
    committedTaskFiles ++= taskCommit.obj.asInstanceOf[TaskFiles].files
  }

  override def commitJob(jobContext: JobContext, taskCommits: Seq[TaskCommitMessage]): Unit = {
    val tasks = taskCommits.map(_.obj.asInstanceOf[TaskFiles])
    jobFiles = tasks.flatMap(_.files)
    rerun = tasks.exists(_.rerun)
  }

  /** Spark aborts the job before the log commit could happen: every file written so far is garbage. */
  override def abortJob(jobContext: JobContext): Unit = {
    if (committedTaskFiles != null) {
      DirectCommitProtocol.deleteFiles(tableRoot, committedTaskFiles.toSeq, jobContext.getConfiguration)
    }
    files.sweepAfterAbort(jobContext.getConfiguration)
  }

  private def tableRoot: String = files.tableRoot

  private def deleteQuietly(path: Path, conf: org.apache.hadoop.conf.Configuration): Unit =
    try path.getFileSystem(conf).delete(path, false) catch { case NonFatal(_) => }

  override def toString: String = s"DirectCommitProtocol(${files.token}, $tableRoot)"
}

object DirectCommitProtocol {
  private val CountedSuffix = """^[.-]c(\d{3})(\..*)$""".r

  /**
   * Asks Spark's output commit coordinator whether this task attempt may commit; throws CommitDeniedException when
   * another attempt of the same partition (a retry or speculative copy) already did. The caller's task then fails
   * and aborts, deleting its files, so exactly one attempt's files reach the job commit.
   */
  private def authorizeTaskCommit(ctx: TaskAttemptContext): Unit = {
    val task = org.apache.spark.TaskContext.get()
    if (task != null) {
      val coordinatorOnly = new org.apache.hadoop.mapreduce.OutputCommitter {
        override def setupJob(c: JobContext): Unit = ()
        override def setupTask(c: TaskAttemptContext): Unit = ()
        override def needsTaskCommit(c: TaskAttemptContext): Boolean = true
        override def commitTask(c: TaskAttemptContext): Unit = ()
        override def abortTask(c: TaskAttemptContext): Unit = ()
      }
      org.apache.spark.mapred.SparkHadoopMapRedUtil.commitTask(coordinatorOnly, ctx, task.stageId(), task.partitionId())
    }
  }

  /** Best-effort removal of files that never reached the log (readers never see them either way). */
  def deleteFiles(tableRoot: String, files: Seq[AddFile], conf: org.apache.hadoop.conf.Configuration): Unit =
    files.foreach { f =>
      try {
        val p = io.strata.log.Snapshot.absolutePath(new Path(tableRoot), f.path)
        p.getFileSystem(conf).delete(p, false)
      } catch { case NonFatal(_) => }
    }
}
