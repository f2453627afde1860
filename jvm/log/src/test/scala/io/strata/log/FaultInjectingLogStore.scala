package io.strata.log

import java.io.IOException

import org.apache.hadoop.fs.{FileSystem, Path}

/**
 * A LogStore for fault injection, plugged in only by tests that set [[FaultInjectingLogStore.Setting]]
 * (`strata.logStore.file.impl`); otherwise exactly [[LocalLogStore]]. The faults are armed for the length of a block
 * and apply to every instance, whichever thread uses it.
 */
class FaultInjectingLogStore(val fs: FileSystem) extends LogStore {
  private val real = new LocalLogStore(fs)

  override def putIfAbsent(path: Path, lines: Seq[String]): Unit = real.putIfAbsent(path, lines)

  override def writeCheckpoint(path: Path, actions: Iterator[Action]): Long =
    if (FaultInjectingLogStore.failCheckpoints) throw new IOException(s"injected: cannot write checkpoint $path")
    else real.writeCheckpoint(path, actions)
}

object FaultInjectingLogStore {
  /** The Hadoop setting that plugs this store in for `file` tables. */
  val Setting: (String, String) = LogStore.implKey("file") -> classOf[FaultInjectingLogStore].getName

  @volatile private var failCheckpoints = false

  /** Runs `body` with every checkpoint write failing (an IOException). */
  def withFailingCheckpoints[T](body: => T): T = {
    failCheckpoints = true
    try body finally failCheckpoints = false
  }
}
