package io.strata.log

import org.apache.hadoop.fs.Path

/** Names of the files in `_delta_log` (PROTOCOL.md, "Delta Log Entries" and "Checkpoints"). */
object FileNames {
  val LogDirName = "_delta_log"
  val LastCheckpointName = "_last_checkpoint"

  private val Delta = """^(\d{20})\.json$""".r
  private val ClassicCheckpoint = """^(\d{20})\.checkpoint\.parquet$""".r
  private val MultiPartCheckpoint = """^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$""".r
  private val UuidCheckpoint = """^(\d{20})\.checkpoint\.[^.]+\.(json|parquet)$""".r
  private val Checksum = """^(\d{20})\.crc$""".r
  private val Compacted = """^(\d{20})\.(\d{20})\.compacted\.json$""".r

  def deltaFile(logPath: Path, version: Long): Path = new Path(logPath, f"$version%020d.json")
  def checkpointFile(logPath: Path, version: Long): Path = new Path(logPath, f"$version%020d.checkpoint.parquet")
  /** Part `part` (from 1) of a checkpoint in `parts` files. */
  def checkpointPart(logPath: Path, version: Long, part: Int, parts: Int): Path =
    new Path(logPath, f"$version%020d.checkpoint.$part%010d.$parts%010d.parquet")
  def lastCheckpoint(logPath: Path): Path = new Path(logPath, LastCheckpointName)

  /** What a file in `_delta_log` is, from its name alone. */
  sealed trait LogFile { def version: Long }
  final case class DeltaFile(version: Long) extends LogFile
  /** A classic single-file (parts = 1) or multi-part checkpoint. */
  final case class CheckpointPart(version: Long, part: Int, parts: Int) extends LogFile
  /** A V2 (UUID-named) checkpoint: needs the v2Checkpoint reader feature. */
  final case class V2Checkpoint(version: Long) extends LogFile
  /** A version checksum (`<version>.crc`, written by delta-spark): optional, never needed to read the table. */
  final case class ChecksumFile(version: Long) extends LogFile
  /** A log compaction file covering commits `version` to `end` (an optional copy of those commits' actions). */
  final case class CompactedDelta(version: Long, end: Long) extends LogFile

  def classify(name: String): Option[LogFile] = name match {
    case Delta(v) => Some(DeltaFile(v.toLong))
    case ClassicCheckpoint(v) => Some(CheckpointPart(v.toLong, 1, 1))
    case MultiPartCheckpoint(v, p, n) => Some(CheckpointPart(v.toLong, p.toInt, n.toInt))
    case UuidCheckpoint(v, _) => Some(V2Checkpoint(v.toLong))
    case Checksum(v) => Some(ChecksumFile(v.toLong))
    case Compacted(v, e) => Some(CompactedDelta(v.toLong, e.toLong))
    case _ => None
  }
}
