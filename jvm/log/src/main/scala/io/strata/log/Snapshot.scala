package io.strata.log

import java.net.URI

import org.apache.hadoop.fs.Path

/**
 * The log files one snapshot is built from: a complete checkpoint (all its parts) and the commits after it.
 * `commitStamp`: the [[FileStamp]] of the commit file of `version` as it was when the state was read, None when the
 * version has no commit file (a log whose commits before its checkpoint are gone) or it is not known: what proves
 * later that the log still holds the history this state came from ([[TableLog.commitStamp]]).
 */
final case class LogSegment(
    version: Long,
    checkpointVersion: Option[Long],
    checkpointFiles: Seq[Path],
    commitFiles: Seq[Path],
    lastCommitTimestamp: Long,
    commitStamp: Option[FileStamp] = None) {
  def files: Seq[Path] = checkpointFiles ++ commitFiles
}

/**
 * The state of a table at one version: protocol, metadata, live files, tombstones and application versions. Files
 * and tombstones are held column-wise ([[FileSet]]); `files` and `tombstones` build each action when it is read.
 */
final class Snapshot private[log] (
    val tablePath: Path,
    val version: Long,
    val segment: LogSegment,
    val protocol: Protocol,
    val metadata: Metadata,
    private[log] val fileSet: FileSet,
    private[log] val tombstoneSet: FileSet,
    val transactions: Map[String, SetTransaction],
    val domains: Map[String, DomainMetadata]) {

  /** The live files, in log order; each element is built when read (hold on to what you use more than once). */
  def files: IndexedSeq[AddFile] = fileSet.addFiles
  /** Files removed and not added back (for VACUUM and checkpoints), in log order. */
  def tombstones: IndexedSeq[RemoveFile] = tombstoneSet.removeFiles
  def numFiles: Int = fileSet.size
  /**
   * The live files grouped by partition values, each group built only when read (planning keeps the partitions a
   * filter selects and never builds the others' files).
   */
  def filesByPartition: Seq[(Map[String, Option[String]], IndexedSeq[AddFile])] = fileSet.byPartition

  /** The statistics of the live files, grouped as [[filesByPartition]] groups them (same groups, same order). */
  def statsByPartition: Seq[(Map[String, Option[String]], FileStatistics)] = fileSet.statsByPartition

  /** When this version was committed (the commit file's modification time), in epoch milliseconds. */
  def timestamp: Long = segment.lastCommitTimestamp
  def partitionColumns: Seq[String] = metadata.partitionColumns
  def sizeInBytes: Long = fileSet.sizeInBytes
  /** Some live file has a deletion vector (its reads must drop the rows it marks). */
  def hasDeletionVectors: Boolean = fileSet.hasDeletionVectors
  def transactionVersion(appId: String): Option[Long] = transactions.get(appId).map(_.version)

  /**
   * The table's metadata domains (PROTOCOL.md, "Domain Metadata"), without removed ones: `domains` keeps a removed
   * domain's tombstone (so replay on top of this snapshot still suppresses it), snapshot reads never show it.
   */
  def activeDomains: Map[String, DomainMetadata] = domains.filterNot(_._2.removed)
  /** The configuration of domain `name`, None when the table has no such domain (or it was removed). */
  def domainConfiguration(name: String): Option[String] = activeDomains.get(name).map(_.configuration)

  /** Heap bytes of the file and tombstone state, and the same without statistics (for sizing and benchmarks). */
  def stateHeapBytes: (Long, Long) =
    (fileSet.heapBytes + tombstoneSet.heapBytes, fileSet.heapBytesWithoutStats + tombstoneSet.heapBytesWithoutStats)

  /** Heap bytes of the typed statistics columns queries have built so far (shared with related snapshots). */
  def typedStatsHeapBytes: Long = fileSet.typedStatsHeapBytes

  /** The absolute location of a file named by an add or remove action. */
  def absolutePath(actionPath: String): Path = Snapshot.absolutePath(tablePath, actionPath)

  /** This state with another log segment (the same version, read from a new checkpoint). */
  private[log] def withSegment(s: LogSegment): Snapshot =
    new Snapshot(tablePath, version, s, protocol, metadata, fileSet, tombstoneSet, transactions, domains)

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

  /**
   * The key under which replay reconciles a file action (PROTOCOL.md, "Action Reconciliation": path and deletion
   * vector id; relative and absolute spellings of one file are one key), for replays outside the log core.
   */
  def replayKey(tablePath: Path, path: String, dvId: String): String = FileSet.key(tablePath, path, dvId)

  /** A snapshot of exactly these files and tombstones (tests, and tools that build a state by hand). */
  def of(tablePath: Path, version: Long, segment: LogSegment, protocol: Protocol, metadata: Metadata,
         files: Seq[AddFile], tombstones: Seq[RemoveFile] = Nil,
         transactions: Map[String, SetTransaction] = Map.empty,
         domains: Map[String, DomainMetadata] = Map.empty): Snapshot = {
    val replay = new Replay(tablePath)
    replay.apply(protocol); replay.apply(metadata)
    tombstones.foreach(replay.apply); files.foreach(replay.apply)
    transactions.values.foreach(replay.apply); domains.values.foreach(replay.apply)
    replay.result(version, segment)
  }

  private[log] object Replay {
    def from(s: Snapshot): Replay = new Replay(s.tablePath, Some(s))
  }

  private val built = new java.util.concurrent.atomic.AtomicLong()

  /**
   * How many file states ([[FileSet]]s: snapshots replayed from the log, or brought up to date from a cached one)
   * this JVM has built: what shows that a write above the distributed-state threshold built none (tests, benchmarks).
   */
  def fileStatesBuilt: Long = built.get()

  /**
   * Replays actions in log order into a snapshot (later actions win, per PROTOCOL.md "Action Reconciliation").
   * Started from a snapshot, it shares that snapshot's file state and copies only what changes ([[FileSet]]).
   */
  final class Replay(tablePath: Path, seed: Option[Snapshot] = None) {
    private var protocol: Option[Protocol] = seed.map(_.protocol)
    private var metadata: Option[Metadata] = seed.map(_.metadata)
    private val files = seed.fold(FileSet.newBuilder(tablePath))(_.fileSet.update())
    private val tombstones = seed.fold(FileSet.newBuilder(tablePath))(_.tombstoneSet.update())
    private val txns = scala.collection.mutable.HashMap.from(seed.fold(Map.empty[String, SetTransaction])(_.transactions))
    private val domains = scala.collection.mutable.HashMap.from(seed.fold(Map.empty[String, DomainMetadata])(_.domains))

    def apply(a: Action): Unit = a match {
      case p: Protocol => protocol = Some(p)
      case m: Metadata => metadata = Some(m)
      case f: AddFile => val k = files.keyOf(f.path, f.dvId); tombstones.remove(k); files.put(f, k)
      case r: RemoveFile => val k = files.keyOf(r.path, r.dvId); files.remove(k); tombstones.put(r, k)
      case t: SetTransaction => txns.put(t.appId, t)
      case d: DomainMetadata => domains.put(d.domain, d)
      case _: CommitInfo | _: UnknownAction =>
    }

    def result(version: Long, segment: LogSegment): Snapshot = {
      val p = protocol.getOrElse(throw CorruptLogException("STRATA_CORRUPT_LOG",
        s"The log of $tablePath has no protocol action up to version $version (read ${segment.files.mkString(", ")})."))
      val m = metadata.getOrElse(throw CorruptLogException("STRATA_CORRUPT_LOG",
        s"The log of $tablePath has no metaData action up to version $version (read ${segment.files.mkString(", ")})."))
      built.incrementAndGet()
      new Snapshot(tablePath, version, segment, p, m, files.result(), tombstones.result(), txns.toMap, domains.toMap)
    }
  }
}
