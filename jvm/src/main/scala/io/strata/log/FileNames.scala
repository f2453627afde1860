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

  def deltaFile(logPath: Path, version: Long): Path = new Path(logPath, f"$version%020d.json")
  def checkpointFile(logPath: Path, version: Long): Path = new Path(logPath, f"$version%020d.checkpoint.parquet")
  def lastCheckpoint(logPath: Path): Path = new Path(logPath, LastCheckpointName)

  /** What a file in `_delta_log` is, from its name alone. */
  sealed trait LogFile { def version: Long }
  final case class DeltaFile(version: Long) extends LogFile
  /** A classic single-file (parts = 1) or multi-part checkpoint. */
  final case class CheckpointPart(version: Long, part: Int, parts: Int) extends LogFile
  /** A V2 (UUID-named) checkpoint: needs the v2Checkpoint reader feature. */
  final case class V2Checkpoint(version: Long) extends LogFile

  def classify(name: String): Option[LogFile] = name match {
    case Delta(v) => Some(DeltaFile(v.toLong))
    case ClassicCheckpoint(v) => Some(CheckpointPart(v.toLong, 1, 1))
    case MultiPartCheckpoint(v, p, n) => Some(CheckpointPart(v.toLong, p.toInt, n.toInt))
    case UuidCheckpoint(v, _) => Some(V2Checkpoint(v.toLong))
    case _ => None
  }
}
