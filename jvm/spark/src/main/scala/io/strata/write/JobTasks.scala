package io.strata.write

import org.apache.spark.SparkContext
import org.apache.spark.sql.SparkSession

/**
 * Spark jobs of one write, tagged so that an abort can wait for their straggling tasks. When one task fails, Spark
 * fails the job at once while sibling tasks may still run, and one whose commit was authorized just before the
 * failure reports its files to a job that no longer listens. The abort waits for those tasks to end, then sweeps.
 */
object JobTasks {
  private def activeContext: Option[SparkContext] =
    SparkSession.getActiveSession.orElse(SparkSession.getDefaultSession).map(_.sparkContext)

  /** Runs `body` with every Spark job it starts on this thread tagged `tag`. */
  def tagged[T](tag: String)(body: => T): T = activeContext match {
    case Some(sc) =>
      sc.addJobTag(tag)
      try body finally sc.removeJobTag(tag)
    case None => body
  }

  def addTag(tag: String): Unit = activeContext.foreach(_.addJobTag(tag))
  def removeTag(tag: String): Unit = activeContext.foreach(_.removeJobTag(tag))

  /** Waits until no task of a job tagged `tag` is running, for at most `timeoutMs`; true when they all ended. */
  def awaitTasksEnded(tag: String, timeoutMs: Long): Boolean = activeContext match {
    case None => true
    case Some(sc) =>
      val tracker = sc.statusTracker
      val deadline = System.currentTimeMillis() + timeoutMs
      def running: Int = tracker.getJobIdsForTag(tag).toSeq.flatMap(id => tracker.getJobInfo(id).toSeq)
        .flatMap(_.stageIds().toSeq).flatMap(id => tracker.getStageInfo(id).toSeq).map(_.numActiveTasks()).sum
      while (running > 0) {
        if (System.currentTimeMillis() > deadline) return false
        Thread.sleep(20)
      }
      true
  }
}
