package io.strata.read.streaming

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import java.io.{FileNotFoundException, IOException}
import java.nio.charset.StandardCharsets.UTF_8
import java.util.UUID

/**
 * Where a query's stream starts, kept in its checkpoint: file `streamStart.json` in the directory Spark gives the
 * source (`<checkpoint>/sources/<n>`). Needed because Spark's offset log keeps only where each micro-batch ends, and
 * Spark runs batch 0 (also again after a restart) from `initialOffset()`: a start worked out anew from the table
 * ("latest", the current rows) would have moved past commits that landed meanwhile. Recorded when the first batch
 * is planned, just before Spark logs its end; a query restarted before that finds no record and works its start out
 * again, as delta-spark's source does.
 */
final class StreamStartRecord(dir: Path, conf: Configuration) {
  private val file = new Path(dir, "streamStart.json")
  @volatile private var recorded = false

  /** The start an earlier run of this query recorded, if any. */
  def read(): Option[SourceOffset] = {
    val fs = file.getFileSystem(conf)
    val text = try {
      val in = fs.open(file)
      try Some(new String(in.readAllBytes(), UTF_8)) finally in.close()
    } catch { case _: FileNotFoundException => None }
    recorded = text.isDefined
    text.map(SourceOffset.fromJson)
  }

  /** Records `start` unless [[read]] found a record: written whole under a temporary name, then renamed. */
  def record(start: SourceOffset): Unit = if (!recorded) {
    val fs = file.getFileSystem(conf)
    val tmp = new Path(dir, s".${file.getName}.${UUID.randomUUID()}.tmp")
    try {
      val out = fs.create(tmp, false)
      try out.write(start.json().getBytes(UTF_8)) finally out.close()
      if (!fs.rename(tmp, file)) throw new IOException(s"Could not rename $tmp to $file")
    } finally fs.delete(tmp, false)
    recorded = true
  }
}
