package io.strata.write

import java.util.concurrent.{CountDownLatch, TimeUnit}

import org.apache.spark.TaskContext
import org.apache.spark.scheduler.{JobSucceeded, SparkListener, SparkListenerJobEnd}
import org.apache.spark.sql.{Column, SparkSession}
import org.apache.spark.sql.functions.udf

/**
 * A straggler without sleeps: a write task whose commit Spark authorized, and that has committed, reports to the
 * driver only after the job failed. The write's input passes through [[Straggler.column]] in the write tasks (local
 * mode: they run in this JVM). The task that reads row `held` registers a task completion listener, the last thing a
 * task runs before the executor sends its result: on success (its commit authorized and done) it signals, then
 * waits until the test releases it. The task that reads row `failing` waits for that signal, then throws: Spark fails
 * the job (and its commit protocol aborts it) without having heard of the straggler. The straggler is released when
 * the driver announces the job's failure (a listener's `onJobEnd`), so it reports to a job that already failed, while
 * the abort waits for the job's remaining tasks before it sweeps. No storage operation happens between a task's
 * commit authorization and its report on the V1 path, so a file system or log store wrapper has no place to hold it
 * there; the completion listener holds it at the same point for both write paths.
 */
object Straggler {
  private final class Run(val held: Long, val failing: Long, val files: () => Set[String]) {
    @volatile var filesWhileHeld: Set[String] = Set.empty
    val committed = new CountDownLatch(1)
    val released = new CountDownLatch(1)
    val finished = new CountDownLatch(1)
    val registered = new java.util.concurrent.atomic.AtomicBoolean(false)
  }
  @volatile private var current: Run = _
  private val Wait = 120L // seconds: only a hang reaches it

  /** `id`, passed through a UDF that plays the straggler (row `held`) and the failing task (row `failing`). */
  def column(spark: SparkSession, id: Column): Column = {
    val f = udf((v: Long) => { onRow(v); v }).asNondeterministic() // evaluated once per row
    f(id)
  }

  /**
   * Runs `failingWrite` (a write through [[column]] that fails): the straggler is held until the job has failed, then
   * released, so its report reaches a job that no longer listens; the write's abort must wait for it to end before it
   * sweeps. Returns what `files` (the table's files) gave while the straggler was held, its commit done.
   */
  def run(spark: SparkSession, held: Long, failing: Long, files: () => Set[String])(failingWrite: => Any): Set[String] = {
    val r = new Run(held, failing, files)
    val onFailure = new SparkListener {
      override def onJobEnd(end: SparkListenerJobEnd): Unit = if (end.jobResult != JobSucceeded) r.released.countDown()
    }
    spark.sparkContext.addSparkListener(onFailure)
    current = r
    try {
      failingWrite
      assert(r.committed.getCount == 0, "the straggler never committed")
      assert(r.finished.getCount == 0, "the write's abort returned before its straggler ended")
      r.filesWhileHeld
    } finally {
      r.released.countDown()
      if (r.committed.getCount == 0) assert(r.finished.await(Wait, TimeUnit.SECONDS), "the straggler did not end")
      current = null
      spark.sparkContext.removeSparkListener(onFailure)
    }
  }

  private def onRow(v: Long): Unit = {
    val r = current
    if (r != null && v == r.held && r.registered.compareAndSet(false, true)) {
      TaskContext.get().addTaskCompletionListener[Unit] { ctx =>
        if (!ctx.isFailed()) {
          r.filesWhileHeld = r.files()
          r.committed.countDown()
          awaitUninterruptibly(r.released)
          r.finished.countDown()
        }
      }
    } else if (r != null && v == r.failing) {
      if (!r.committed.await(Wait, TimeUnit.SECONDS)) throw new IllegalStateException("no straggler committed")
      throw new IllegalStateException("late")
    }
  }

  /** Spark may interrupt the straggler when the job fails; a real one is past that point (it only sends its result). */
  private def awaitUninterruptibly(latch: CountDownLatch): Unit = {
    var interrupted = false
    while (latch.getCount > 0) {
      try latch.await()
      catch { case _: InterruptedException => interrupted = true }
    }
    if (interrupted) Thread.currentThread().interrupt()
  }
}
