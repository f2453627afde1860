package io.strata.log

import java.util.concurrent.{ExecutorService, Executors, LinkedBlockingQueue, TimeUnit}

import org.apache.hadoop.fs.Path

/**
 * Reads the parts of a multi-part checkpoint ahead of their replay: each part is decoded (the costly Parquet work)
 * on a pool thread into a bounded queue, while the caller's thread takes the actions part by part, in order, and
 * replays them (replay is single-threaded). A part's read error surfaces when the caller reaches that part, so the
 * caller names the file. A single file is read in the caller's thread, as before.
 */
private[log] final class CheckpointParts(files: Seq[Path], read: Path => Iterator[Action]) {
  import CheckpointParts._

  /** Calls `each(file, actions)` for every file, in order; `actions` is consumed within the call. */
  def foreach(each: (Path, Iterator[Action]) => Unit): Unit =
    if (files.size <= 1) files.foreach(f => each(f, Iterator.empty ++ read(f))) // opened inside `each`, like a part
    else {
      val threads = math.min(files.size, math.max(1, Runtime.getRuntime.availableProcessors))
      val pool = Executors.newFixedThreadPool(threads, (r: Runnable) => {
        val t = new Thread(r, "strata-checkpoint-read"); t.setDaemon(true); t
      })
      try {
        // Submitted in file order: the part being replayed always has its reader running or done (no deadlock on
        // the bounded queues of the parts after it).
        val queues = files.map(f => start(pool, f))
        files.zip(queues).foreach { case (f, q) => each(f, drain(q)) }
      } finally pool.shutdownNow()
    }

  private def start(pool: ExecutorService, f: Path): LinkedBlockingQueue[Batch] = {
    val q = new LinkedBlockingQueue[Batch](QueueBatches)
    pool.execute { () =>
      var it: Iterator[Action] = null
      try {
        it = read(f)
        while (it.hasNext) {
          val b = new Array[Action](BatchSize)
          var n = 0
          while (n < BatchSize && it.hasNext) { b(n) = it.next(); n += 1 }
          q.put(Actions(b, n))
        }
        q.put(End)
      } catch {
        case _: InterruptedException => // the replay stopped: nobody reads on
        case e: Throwable => q.offer(Failed(e), 1, TimeUnit.MINUTES)
      } finally it match {
        case c: AutoCloseable => c.close()
        case _ =>
      }
    }
    q
  }

  private def drain(q: LinkedBlockingQueue[Batch]): Iterator[Action] = new Iterator[Action] {
    private var batch: Actions = Actions(Array.empty, 0)
    private var i = 0
    private var ended = false
    def hasNext: Boolean = {
      while (!ended && i >= batch.size) q.take() match {
        case b: Actions => batch = b; i = 0
        case End => ended = true
        case Failed(e) => throw e
      }
      !ended
    }
    def next(): Action = {
      if (!hasNext) throw new NoSuchElementException("checkpoint part exhausted")
      val a = batch.actions(i); i += 1; a
    }
  }
}

private[log] object CheckpointParts {
  private val BatchSize = 1024
  /** At most this many batches a part waits with (about 64,000 actions: bounded memory however far ahead it is). */
  private val QueueBatches = 64

  private sealed trait Batch
  private final case class Actions(actions: Array[Action], size: Int) extends Batch
  private case object End extends Batch
  private final case class Failed(error: Throwable) extends Batch
}
