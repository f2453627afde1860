package io.strata.log

import org.apache.hadoop.fs.Path

/**
 * How big a version's file state is, known without building it: what chooses between the driver's replay and a
 * distributed one. `files`: the live files, when the log says (a loaded snapshot; `_last_checkpoint`'s
 * `numOfAddFiles` for the checkpoint the segment starts from, plus the adds of the commits after it: an upper bound);
 * `logBytes`: the bytes of the checkpoint parts and commits a replay reads.
 */
final case class StateSize(files: Option[Long], logBytes: Long)

/**
 * A version of a table without its file state: protocol, metadata, application transactions, domains and the log
 * segment, read from the checkpoint's non-file columns and the commits' non-file actions. It has no `files`: a
 * state-less version can never answer a question about files wrongly; whoever needs them replays the segment (a
 * [[Snapshot]] from [[TableLog]], or a distributed replay of [[segment]] in the connector).
 */
final case class SnapshotHead(
    tablePath: Path,
    version: Long,
    segment: LogSegment,
    protocol: Protocol,
    metadata: Metadata,
    transactions: Map[String, SetTransaction],
    domains: Map[String, DomainMetadata],
    size: StateSize) {
  def partitionColumns: Seq[String] = metadata.partitionColumns
  /** When this version was committed (the commit file's modification time), in epoch milliseconds. */
  def timestamp: Long = segment.lastCommitTimestamp
  def absolutePath(actionPath: String): Path = Snapshot.absolutePath(tablePath, actionPath)
  /** Whether its checkpoint is classic Parquet parts (what a distributed replay reads), not V2 (sidecars, JSON). */
  def classicCheckpoint: Boolean = !TableFeatures.V2Checkpoint.readBy(protocol)
}

object SnapshotHead {
  /** The head of a snapshot already built (its file count is exact). */
  def of(s: Snapshot): SnapshotHead = {
    SnapshotHead(s.tablePath, s.version, s.segment, s.protocol, s.metadata, s.transactions, s.domains,
      StateSize(Some(s.numFiles.toLong), 0L))
  }

  /** The checkpoint columns a head reads (everything but the file actions). */
  private[log] val Columns: Seq[String] = Checkpoints.ActionColumns.filterNot(c => c == "add" || c == "remove")

  /**
   * Replays the non-file actions of a segment, in log order (later actions win, as in [[Snapshot.Replay]]); or of
   * the commits after `seed`, a head already known.
   */
  private[log] final class Replay(tablePath: Path, seed: Option[SnapshotHead] = None) {
    private var protocol: Option[Protocol] = seed.map(_.protocol)
    private var metadata: Option[Metadata] = seed.map(_.metadata)
    private val txns = scala.collection.mutable.HashMap.from(seed.fold(Map.empty[String, SetTransaction])(_.transactions))
    private val domains = scala.collection.mutable.HashMap.from(seed.fold(Map.empty[String, DomainMetadata])(_.domains))
    private var commitAdds = 0L

    def apply(a: Action): Unit = a match {
      case p: Protocol => protocol = Some(p)
      case m: Metadata => metadata = Some(m)
      case t: SetTransaction => txns.put(t.appId, t)
      case d: DomainMetadata => domains.put(d.domain, d)
      case _: AddFile => commitAdds += 1
      case _ =>
    }

    /** The head after `seed` and the commits replayed since, whose files are `commits`. */
    def after(version: Long, commits: Seq[org.apache.hadoop.fs.FileStatus]): SnapshotHead = {
      val s = seed.get
      val segment = s.segment.copy(version = version, commitFiles = s.segment.commitFiles ++ commits.map(_.getPath),
        lastCommitTimestamp = commits.lastOption.fold(s.segment.lastCommitTimestamp)(_.getModificationTime),
        commitStamp = commits.lastOption.map(FileStamp.of).orElse(s.segment.commitStamp))
      s.copy(version = version, segment = segment, protocol = protocol.get, metadata = metadata.get,
        transactions = txns.toMap, domains = domains.toMap,
        size = StateSize(s.size.files.map(_ + commitAdds), s.size.logBytes + commits.map(_.getLen).sum))
    }

    def result(version: Long, segment: LogSegment, checkpointFiles: Option[Long], logBytes: Long): SnapshotHead = {
      def none(what: String) = CorruptLogException("STRATA_CORRUPT_LOG",
        s"The log of $tablePath has no $what action up to version $version (read ${segment.files.mkString(", ")}).")
      val files = if (segment.checkpointVersion.isEmpty) Some(commitAdds) else checkpointFiles.map(_ + commitAdds)
      SnapshotHead(tablePath, version, segment, protocol.getOrElse(throw none("protocol")),
        metadata.getOrElse(throw none("metaData")), txns.toMap, domains.toMap, StateSize(files, logBytes))
    }
  }
}
