package io.strata.write

import java.io.{IOException, OutputStream}

import org.apache.hadoop.fs.{FSDataOutputStream, LocalFileSystem, Path}
import org.apache.hadoop.fs.permission.FsPermission
import org.apache.hadoop.util.Progressable
import org.apache.spark.TaskContext
import org.apache.spark.sql.SparkSession

/**
 * Hadoop's local file system (`file`) with faults for the data files tasks write, plugged in only by tests
 * ([[FaultInjectingFileSystem.Settings]]: `fs.file.impl`, with Hadoop's cache of `file` file systems off, so that a
 * session setting takes effect at once). Armed for the length of a block, in this JVM ([[withFailingWrites]]: the
 * tasks of local mode run in it); disarmed, exactly LocalFileSystem.
 */
class FaultInjectingFileSystem extends LocalFileSystem {
  override def create(f: Path, permission: FsPermission, overwrite: Boolean, bufferSize: Int, replication: Short,
                      blockSize: Long, progress: Progressable): FSDataOutputStream = {
    val out = super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress)
    val limit = FaultInjectingFileSystem.failAfterBytes
    // Hadoop's attempt id is Spark's task id; the retry number comes from the TaskContext (None on the driver).
    val firstAttempt = Option(TaskContext.get()).exists(_.attemptNumber() == 0)
    if (limit > 0 && firstAttempt && f.getName.endsWith(".parquet")) {
      new FSDataOutputStream(new FaultInjectingFileSystem.FailingStream(out, limit, f), null)
    } else out
  }
}

object FaultInjectingFileSystem {
  /** Spark session (SQL conf) settings that make the Hadoop configuration of writes use this file system. */
  val Settings: Map[String, String] =
    Map("fs.file.impl" -> classOf[FaultInjectingFileSystem].getName, "fs.file.impl.disable.cache" -> "true")

  @volatile private var failAfterBytes = 0L

  /**
   * Runs `body` with `spark`'s writes on this file system; every Parquet file a task's first attempt creates fails
   * once `bytes` bytes were written to it (an IOException "Injected write failure after <bytes> bytes": the file is
   * left half written, as by a disk or network failure mid-file); a retried attempt writes normally.
   */
  def withFailingWrites[T](spark: SparkSession, bytes: Long)(body: => T): T = {
    val previous = Settings.keys.map(k => k -> spark.conf.getOption(k))
    Settings.foreach { case (k, v) => spark.conf.set(k, v) }
    try failingWrites(bytes)(body)
    finally previous.foreach { case (k, v) => v.fold(spark.conf.unset(k))(spark.conf.set(k, _)) }
  }

  /** Runs `body` with the fault armed (for a JVM whose `file` file system is this one from its start). */
  def failingWrites[T](bytes: Long)(body: => T): T = {
    failAfterBytes = bytes
    try body finally failAfterBytes = 0L
  }

  private final class FailingStream(out: FSDataOutputStream, limit: Long, path: Path) extends OutputStream {
    private var written = 0L
    private def take(n: Int): Unit = {
      if (written + n > limit) throw new IOException(s"Injected write failure after $limit bytes of $path")
      written += n
    }
    override def write(b: Int): Unit = { take(1); out.write(b) }
    override def write(b: Array[Byte], off: Int, len: Int): Unit = {
      val first = math.max(0L, math.min(len.toLong, limit - written)).toInt
      if (first < len) { out.write(b, off, first); written += first; take(len - first) }
      else { out.write(b, off, len); written += len }
    }
    override def flush(): Unit = out.flush()
    override def close(): Unit = out.close()
  }
}
