package io.strata.log

import java.net.URI

import org.apache.hadoop.fs.Path

import scala.collection.mutable

/** The log files one snapshot is built from: a complete checkpoint (all its parts) and the commits after it. */
final case class LogSegment(
    version: Long,
    checkpointVersion: Option[Long],
    checkpointFiles: Seq[Path],
    commitFiles: Seq[Path],
    lastCommitTimestamp: Long) {
  def files: Seq[Path] = checkpointFiles ++ commitFiles
}

/** The state of a table at one version: protocol, metadata, live files, tombstones and application versions. */
final class Snapshot(
    val tablePath: Path,
    val version: Long,
    val segment: LogSegment,
    val protocol: Protocol,
    val metadata: Metadata,
    val files: IndexedSeq[AddFile],
    val tombstones: IndexedSeq[RemoveFile],
    val transactions: Map[String, SetTransaction],
    val domains: Map[String, DomainMetadata]) {

  /** When this version was committed (the commit file's modification time), in epoch milliseconds. */
  def timestamp: Long = segment.lastCommitTimestamp
  def partitionColumns: Seq[String] = metadata.partitionColumns
  def sizeInBytes: Long = files.iterator.map(_.size).sum
  /** Some live file has a deletion vector (its reads must drop the rows it marks). */
  lazy val hasDeletionVectors: Boolean = files.exists(_.deletionVector.isDefined)
  def transactionVersion(appId: String): Option[Long] = transactions.get(appId).map(_.version)

  /** The absolute location of a file named by an add or remove action. */
  def absolutePath(actionPath: String): Path = Snapshot.absolutePath(tablePath, actionPath)

  /** Everything a checkpoint of this version holds; tombstones older than `tombstoneCutoff` are dropped. */
  def checkpointActions(tombstoneCutoff: Long): Iterator[Action] =
    Iterator(protocol, metadata) ++ transactions.valuesIterator ++ domains.valuesIterator.filterNot(_.removed) ++
      tombstones.iterator.filter(_.deletionTimestamp.forall(_ > tombstoneCutoff)) ++ files.iterator
}

object Snapshot {
  def absolutePath(tablePath: Path, actionPath: String): Path = {
    val p = new Path(new URI(actionPath))
    if (p.toUri.getScheme != null) p
    else if (p.isUriPathAbsolute) {
      // "/a/b" is the same file as "file:/a/b" on a file: table: qualify it like the table path (delta-spark does)
      val t = tablePath.toUri
      new Path(t.getScheme, t.getAuthority, p.toUri.getPath)
    } else new Path(tablePath, p)
  }

  private[log] object Replay {
    def from(s: Snapshot): Replay = new Replay(s.tablePath).seed(s)
  }

  /** Replays actions in log order into a snapshot (later actions win, per PROTOCOL.md "Action Reconciliation"). */
  final class Replay(tablePath: Path) {
    /** Starts from `s`'s state: replaying the commits after it gives the later version. */
    private[log] def seed(s: Snapshot): this.type = {
      protocol = Some(s.protocol); metadata = Some(s.metadata)
      s.files.foreach(f => files.put(key(f.path, f.dvId), f))
      s.tombstones.foreach(r => tombstones.put(key(r.path, r.dvId), r))
      txns ++= s.transactions
      domains ++= s.domains
      this
    }

    private var protocol: Option[Protocol] = None
    private var metadata: Option[Metadata] = None
    private val files = mutable.LinkedHashMap.empty[(String, String), AddFile]
    private val tombstones = mutable.LinkedHashMap.empty[(String, String), RemoveFile]
    private val txns = mutable.HashMap.empty[String, SetTransaction]
    private val domains = mutable.HashMap.empty[String, DomainMetadata]

    /** A file action's key (PROTOCOL.md, "Action Reconciliation"): its absolute path and deletion vector id. */
    private def key(path: String, dvId: String): (String, String) = (absolutePath(tablePath, path).toString, dvId)

    def apply(a: Action): Unit = a match {
      case p: Protocol => protocol = Some(p)
      case m: Metadata => metadata = Some(m)
      case f: AddFile => val k = key(f.path, f.dvId); tombstones.remove(k); files.put(k, f.copy(dataChange = false))
      case r: RemoveFile => val k = key(r.path, r.dvId); files.remove(k); tombstones.put(k, r.copy(dataChange = false))
      case t: SetTransaction => txns.put(t.appId, t)
      case d: DomainMetadata => domains.put(d.domain, d)
      case _: CommitInfo | _: UnknownAction =>
    }

    def result(version: Long, segment: LogSegment): Snapshot = {
      val p = protocol.getOrElse(throw CorruptLogException("STRATA_CORRUPT_LOG",
        s"The log of $tablePath has no protocol action up to version $version (read ${segment.files.mkString(", ")})."))
      val m = metadata.getOrElse(throw CorruptLogException("STRATA_CORRUPT_LOG",
        s"The log of $tablePath has no metaData action up to version $version (read ${segment.files.mkString(", ")})."))
      new Snapshot(tablePath, version, segment, p, m, files.values.toIndexedSeq, tombstones.values.toIndexedSeq,
        txns.toMap, domains.toMap)
    }
  }
}
