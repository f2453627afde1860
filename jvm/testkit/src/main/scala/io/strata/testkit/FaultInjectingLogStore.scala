package io.strata.testkit

import java.io.IOException
import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Paths, StandardCopyOption}
import java.util.concurrent.CountDownLatch
import java.util.concurrent.atomic.AtomicReference

import io.strata.log.{Action, ActionCodec, Checkpoints, FileNames, LocalLogStore, LogStore, SetTransaction}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}

/**
 * A LogStore for fault injection, plugged in only by tests (the Hadoop setting [[FaultInjectingLogStore.Setting]],
 * `strata.logStore.file.impl`); with no fault armed or configured, exactly [[LocalLogStore]]. It sees every commit
 * whole (the put of `_delta_log/<version>.json`), so the faults sit right before or after a commit lands:
 *  - armed for the length of a block, in this JVM (any instance, any thread): a rival commit before the first
 *    commit put, failing checkpoint writes, the JVM halting before a commit put;
 *  - configured in the Hadoop configuration of the store's file system, for a driver in a process of its own (the
 *    child drivers of pytest, which load this class from the test-support jar): the pause point
 *    [[PausePoint.BeforeCommit]].
 */
class FaultInjectingLogStore(val fs: FileSystem) extends LogStore {
  private val real = new LocalLogStore(fs)
  private val pause = PausePoint.configured(fs.getConf)

  override def putIfAbsent(path: Path, lines: Seq[String]): Unit =
    if (!FileNames.classify(path.getName).exists(_.isInstanceOf[FileNames.DeltaFile])) real.putIfAbsent(path, lines)
    else {
      FaultInjectingLogStore.rival.getAndSet(None).foreach(_())
      FaultInjectingLogStore.haltCode.foreach(Runtime.getRuntime.halt)
      pause.foreach(_.beforePut(lines))
      real.putIfAbsent(path, lines)
    }

  override def writeCheckpoint(path: Path, actions: Iterator[Action], format: Checkpoints.Format): Long = {
    FaultInjectingLogStore.checkpointGate.get().foreach { gate =>
      // A checkpoint written in the committing thread would wait here for good: fail instead of hanging the test.
      if (!gate.await(60, java.util.concurrent.TimeUnit.SECONDS)) throw new IOException(s"checkpoint gate not opened")
    }
    if (FaultInjectingLogStore.failCheckpoints(path)) throw new IOException(s"injected: cannot write checkpoint $path")
    FaultInjectingLogStore.checkpointError.foreach { error =>
      // Half a checkpoint first (its temporary file written by the real store), then the error, as a heap running
      // out mid-write would leave it.
      real.writeCheckpoint(path, actions.take(1).map { a => throw error(); a }, format)
    }
    real.writeCheckpoint(path, actions, format)
  }
}

object FaultInjectingLogStore {
  /** The Hadoop setting that plugs this store in for `file` tables. */
  val Setting: (String, String) = LogStore.implKey("file") -> classOf[FaultInjectingLogStore].getName

  @volatile private var failCheckpoints: Path => Boolean = _ => false
  @volatile private var haltCode: Option[Int] = None
  @volatile private var checkpointError: Option[() => Throwable] = None

  /** Runs `body` with every checkpoint write failing with `error()` thrown while it writes (an OutOfMemoryError). */
  def withCheckpointError[T](error: () => Throwable)(body: => T): T = {
    checkpointError = Some(error)
    try body finally checkpointError = None
  }
  private val rival = new AtomicReference[Option[() => Unit]](None)

  /**
   * Runs `body`; the first commit file put through this store while it runs (by any table's transaction, on any
   * thread) is preceded by `rival`, run to its end in the committing thread, once: a rival commit lands between the
   * transaction's read and its first commit attempt, on every run. The rival's own commits go through unhindered.
   */
  def withRivalBeforeFirstCommit[T](rival: () => Unit)(body: => T): T = {
    this.rival.set(Some(rival))
    try body finally this.rival.set(None)
  }

  private val checkpointGate = new AtomicReference[Option[CountDownLatch]](None)

  /**
   * Runs `body(open)`: every checkpoint write through this store waits until `open()` is called (one that is never
   * let through fails after a minute instead of hanging).
   */
  def withCheckpointGate[T](body: (() => Unit) => T): T = {
    val gate = new CountDownLatch(1)
    checkpointGate.set(Some(gate))
    try body(() => gate.countDown()) finally { gate.countDown(); checkpointGate.set(None) }
  }

  /** Runs `body` with every checkpoint write failing (an IOException). */
  def withFailingCheckpoints[T](body: => T): T = withFailingCheckpointFiles(_ => true)(body)

  /** Runs `body` with the writes of the checkpoint files (or parts) `fails` selects failing (an IOException). */
  def withFailingCheckpointFiles[T](fails: Path => Boolean)(body: => T): T = {
    failCheckpoints = fails
    try body finally failCheckpoints = _ => false
  }

  /**
   * Runs `body`; the first commit file put through this store while it runs halts the JVM with `exitCode` instead
   * (a driver dying after a write's data files, right before its log commit). For child JVMs.
   */
  def withHaltBeforeCommit[T](exitCode: Int)(body: => T): T = {
    haltCode = Some(exitCode)
    try body finally haltCode = None
  }
}

/**
 * A point where a streaming query's driver, in a process of its own, stops so that a test can kill it there with
 * SIGKILL, for micro-batch `batch` (whose commit carries the `txn` version `batch`):
 *  - [[PausePoint.BeforeCommit]]: the batch's data files are written, its log commit is next: right before the put of
 *    the commit ([[FaultInjectingLogStore]]);
 *  - [[PausePoint.AfterCommit]]: the log commit landed and everything the sink does after it ran (post-commit hooks,
 *    the sweep of files of dead attempts); Spark has not recorded the batch in its checkpoint yet: right before the
 *    rename that records it, of `<checkpoint>/commits/<batch>` ([[PausingLocalFs]]).
 * There the driver writes `<point>@<batch> <pid>` into the file `marker` (atomically: whole or absent) and blocks
 * until it is killed.
 */
final case class PausePoint(point: String, batch: Long, marker: java.nio.file.Path) {
  /** At the put of a commit (its lines). */
  def beforePut(commit: Seq[String]): Unit =
    if (point == PausePoint.BeforeCommit && commit.exists(l => l.contains("\"txn\"") &&
        (ActionCodec.parse(l) match { case t: SetTransaction => t.version == batch; case _ => false }))) pause()

  /** At a rename into `dst` (through FileContext). */
  def beforeRename(dst: Path): Unit =
    if (point == PausePoint.AfterCommit && dst.getName == batch.toString &&
        Option(dst.getParent).exists(_.getName == "commits")) pause()

  private def pause(): Unit = {
    val tmp = marker.resolveSibling(s".${marker.getFileName}.tmp")
    Files.write(tmp, s"$point@$batch ${ProcessHandle.current().pid()}\n".getBytes(StandardCharsets.UTF_8))
    Files.move(tmp, marker, StandardCopyOption.ATOMIC_MOVE)
    val never = new CountDownLatch(1)
    while (true) try never.await() catch { case _: InterruptedException => } // until the test kills this process
  }
}

object PausePoint {
  val BeforeCommit = "beforeCommit"
  val AfterCommit = "afterCommit"
  /** `<point>@<batch>`, e.g. `beforeCommit@3`. */
  val PauseAtKey = "strata.testkit.pauseAt"
  /** The marker file's local path. */
  val MarkerKey = "strata.testkit.pauseMarker"

  private val Spec = """(beforeCommit|afterCommit)@(\d+)""".r

  /** The pause point a Hadoop configuration sets (through Spark: `spark.hadoop.strata.testkit.*`), if any. */
  def configured(conf: Configuration): Option[PausePoint] = {
    def get(key: String) = Option(conf).flatMap(c => Option(c.get(key)).orElse(Option(c.get("spark.hadoop." + key))))
      .map(_.trim).filter(_.nonEmpty)
    get(PauseAtKey).map {
      case Spec(point, batch) => PausePoint(point, batch.toLong,
        Paths.get(get(MarkerKey).getOrElse(throw new IllegalArgumentException(s"$PauseAtKey needs $MarkerKey"))))
      case other => throw new IllegalArgumentException(s"$PauseAtKey: '$other' is not beforeCommit@<n> or afterCommit@<n>")
    }
  }
}
