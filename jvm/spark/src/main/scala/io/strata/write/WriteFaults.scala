package io.strata.write

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.mapreduce.TaskAttemptContext
import org.apache.spark.TaskContext

/**
 * Test-only fault injection, off unless the Hadoop conf sets `strata.test.failAfterRows` (fail a task's first
 * attempt after writing that many rows to a file) or `strata.test.sleepAfterCommitMs` (a task whose commit was
 * authorized waits that long before reporting it: a straggler). Failure tests use it to break real writes at a
 * chosen point.
 */
final class WriteFaults(failAfterRows: Long) extends Serializable {
  def afterRow(n: Long): Unit =
    if (failAfterRows > 0 && n == failAfterRows) {
      throw new java.io.IOException(s"Injected write failure after $n rows (strata.test.failAfterRows)")
    }
}

object WriteFaults {
  val FailAfterRowsKey = "strata.test.failAfterRows"
  val SleepAfterCommitKey = "strata.test.sleepAfterCommitMs"

  /**
   * Called by a task right after its commit was authorized. The wait ignores interrupts: a real straggler is past
   * the point where Spark's kill could stop it (it only has to send its result).
   */
  def afterCommitAuthorized(conf: Configuration): Unit = {
    val deadline = System.currentTimeMillis() + conf.getLong(SleepAfterCommitKey, 0L)
    var interrupted = false
    while (System.currentTimeMillis() < deadline) {
      try Thread.sleep(math.max(1L, deadline - System.currentTimeMillis()))
      catch { case _: InterruptedException => interrupted = true }
    }
    if (interrupted) Thread.currentThread().interrupt()
  }

  def forTask(context: TaskAttemptContext): WriteFaults = {
    val n = context.getConfiguration.getLong(FailAfterRowsKey, 0L)
    // Hadoop's attempt id here is Spark's task id; the retry number comes from the TaskContext.
    val firstAttempt = Option(TaskContext.get()).forall(_.attemptNumber() == 0)
    new WriteFaults(if (firstAttempt) n else 0L)
  }
}
