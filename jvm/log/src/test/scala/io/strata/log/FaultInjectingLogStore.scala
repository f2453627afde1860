package io.strata.log

import java.io.IOException
import java.util.concurrent.atomic.AtomicReference

import org.apache.hadoop.fs.{FileSystem, Path}

/**
 * A LogStore for fault injection, plugged in only by tests that set [[FaultInjectingLogStore.Setting]]
 * (`strata.logStore.file.impl`); otherwise exactly [[LocalLogStore]]. The faults are armed for the length of a block
 * and apply to every instance, whichever thread uses it.
 */
class FaultInjectingLogStore(val fs: FileSystem) extends LogStore {
  private val real = new LocalLogStore(fs)

  override def putIfAbsent(path: Path, lines: Seq[String]): Unit = {
    if (FileNames.classify(path.getName).exists(_.isInstanceOf[FileNames.DeltaFile])) {
      FaultInjectingLogStore.rival.getAndSet(None).foreach(_())
    }
    real.putIfAbsent(path, lines)
  }

  override def writeCheckpoint(path: Path, actions: Iterator[Action]): Long =
    if (FaultInjectingLogStore.failCheckpoints) throw new IOException(s"injected: cannot write checkpoint $path")
    else real.writeCheckpoint(path, actions)
}

object FaultInjectingLogStore {
  /** The Hadoop setting that plugs this store in for `file` tables. */
  val Setting: (String, String) = LogStore.implKey("file") -> classOf[FaultInjectingLogStore].getName

  @volatile private var failCheckpoints = false
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

  /** Runs `body` with every checkpoint write failing (an IOException). */
  def withFailingCheckpoints[T](body: => T): T = {
    failCheckpoints = true
    try body finally failCheckpoints = false
  }
}
