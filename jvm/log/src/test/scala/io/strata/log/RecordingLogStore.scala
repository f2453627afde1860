package io.strata.log

import java.util.concurrent.ConcurrentLinkedQueue

import org.apache.hadoop.fs.{FileSystem, Path}

import scala.jdk.CollectionConverters._

/**
 * A LogStore plugged in through `strata.logStore.file.impl` that records every log file read (commits through
 * `read`, checkpoints through `readCheckpoint`) and every listing of a directory, and otherwise behaves exactly like
 * [[LocalLogStore]].
 */
class RecordingLogStore(val fs: FileSystem) extends LogStore {
  private val real = new LocalLogStore(fs)

  override def read(path: Path): Seq[String] = {
    RecordingLogStore.reads.add(path)
    real.read(path)
  }

  override def readCheckpoint(path: Path): Iterator[Action] = {
    RecordingLogStore.reads.add(path)
    real.readCheckpoint(path)
  }

  override def list(dir: Path): Seq[org.apache.hadoop.fs.FileStatus] = {
    RecordingLogStore.listings.add(dir)
    real.list(dir)
  }

  override def putIfAbsent(path: Path, lines: Seq[String]): Unit = real.putIfAbsent(path, lines)
}

object RecordingLogStore {
  val reads = new ConcurrentLinkedQueue[Path]()
  val listings = new ConcurrentLinkedQueue[Path]()
  def clear(): Unit = { reads.clear(); listings.clear() }
  def readNames: Seq[String] = reads.asScala.map(_.getName).toSeq
}
