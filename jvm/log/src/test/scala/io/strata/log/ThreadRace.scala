package io.strata.log

import java.util.concurrent.{ConcurrentLinkedQueue, CountDownLatch, Executors, TimeUnit}

import scala.jdk.CollectionConverters._

/** Threads released together, for race tests: each prepares, waits for the common start, then runs its work. */
object ThreadRace {
  final case class Outcome(finished: Boolean, errors: Seq[Throwable])

  /** Runs `threads` threads; thread `t` first runs `prepare(t)` (before the start) and then the work it returns. */
  def apply(threads: Int, timeoutSeconds: Long = 120)(prepare: Int => () => Unit): Outcome = {
    val errors = new ConcurrentLinkedQueue[Throwable]()
    val start = new CountDownLatch(1)
    val pool = Executors.newFixedThreadPool(threads)
    (0 until threads).foreach { t =>
      pool.submit(new Runnable {
        def run(): Unit = try {
          val work = prepare(t)
          start.await()
          work()
        } catch { case e: Throwable => errors.add(e) }
      })
    }
    start.countDown()
    pool.shutdown()
    val finished = pool.awaitTermination(timeoutSeconds, TimeUnit.SECONDS)
    Outcome(finished, errors.asScala.toSeq)
  }
}
