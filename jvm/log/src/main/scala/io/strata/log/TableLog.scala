package io.strata.log

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, Path}

import scala.util.control.NonFatal

/** One commit as history shows it. */
final case class CommitRecord(version: Long, timestamp: Long, commitInfo: Option[CommitInfo])

/**
 * The transaction log of one table: loads snapshots (checkpoint + later commits), shows history, writes
 * checkpoints and starts transactions. Knows Hadoop and Jackson, not Spark.
 */
final class TableLog private (val tablePath: Path, val store: LogStore, val conf: Configuration) extends TimeTravel {
  val logPath: Path = new Path(tablePath, FileNames.LogDirName)

  private[log] def listLog(): LogListing = {
    val commits = Map.newBuilder[Long, FileStatus]
    val parts = scala.collection.mutable.HashMap.empty[(Long, Int), Seq[FileStatus]]
    val v2 = scala.collection.mutable.HashMap.empty[Long, Seq[FileStatus]]
    val classified = Vector.newBuilder[(FileNames.LogFile, FileStatus)]
    store.list(logPath).foreach { st =>
      val kind = FileNames.classify(st.getPath.getName)
      kind.foreach(k => classified += k -> st)
      kind match {
        case Some(FileNames.DeltaFile(v)) => commits += v -> st
        case Some(FileNames.CheckpointPart(v, _, n)) => parts((v, n)) = parts.getOrElse((v, n), Nil) :+ st
        case Some(FileNames.V2Checkpoint(v)) => v2(v) = v2.getOrElse(v, Nil) :+ st
        case _ =>
      }
    }
    // A checkpoint counts only when all of its parts are there.
    val complete = parts.collect { case ((v, n), files) if files.size == n => v -> files.sortBy(_.getPath.getName) }
    // A UUID-named (V2) checkpoint is one file (its sidecars are read with it); a version with a classic one too
    // keeps the classic one. Several V2 checkpoints of one version hold the same state: any will do.
    val uuidNamed = v2.collect { case (v, files) if !complete.contains(v) => v -> Seq(files.minBy(_.getPath.getName)) }
    LogListing(commits.result(), complete.toMap ++ uuidNamed, v2.keySet.toSet, classified.result())
  }

  /** True when the table has at least one commit. */
  def exists: Boolean = listLog().commits.nonEmpty

  /**
   * The latest snapshot, or None when there is no table here yet. One listing of the log; when this JVM loaded the
   * table before, only the commits since are read ([[SnapshotCache]]).
   */
  def snapshotOption(): Option[Snapshot] = snapshotFrom(listLog())

  /**
   * After one listing: the latest snapshot, or its [[SnapshotHead]] when `distributed` says so of its [[StateSize]]
   * (a reader that replays big states elsewhere); None when there is no table. No listing when this JVM holds the
   * latest snapshot and the driver path reads it ([[heldLatest]]).
   */
  def latest(distributed: StateSize => Boolean): Option[Either[SnapshotHead, Snapshot]] = latestFor(distributed, false)

  /**
   * The latest version for a blind append, whose commit reads no file (None: no table). The snapshot this JVM holds
   * when it is the latest, or when the commits since bring it there (cheap, and later reads stay warm); otherwise
   * only the version's head: a file state is never built for an append. `distributed` as in [[latest]]: a held
   * snapshot whose size it sends to the distributed path is not taken either.
   */
  def appendBase(distributed: StateSize => Boolean): Option[Either[SnapshotHead, Snapshot]] =
    latestFor(distributed, append = true)

  private def latestFor(distributed: StateSize => Boolean, append: Boolean)
      : Option[Either[SnapshotHead, Snapshot]] = {
    val held = heldLatest().filterNot(s => distributed(StateSize(Some(s.numFiles.toLong), 0L)))
    if (held.isDefined) held.map(Right(_)) else {
      val listing = listLog()
      def upToDate = SnapshotCache.current(tablePath.toString, listing.commits, listing.checkpoints.keys)
        .exists(s => (s.version + 1 to listing.latest).forall(listing.commits.contains))
      sizeFrom(listing).map { size =>
        if (!distributed(size) && (!append || upToDate)) Right(snapshotFrom(listing).get)
        // The distributed state (and checkpoint) reads classic checkpoint parts only: a table with V2 checkpoints
        // (sidecars, JSON checkpoints) keeps the driver path.
        else headFrom(listing).get match {
          case h if !h.classicCheckpoint => Right(snapshotFrom(listing).get)
          case h => Left(h)
        }
      }
    }
  }

  /**
   * The snapshot this JVM holds when it is still the latest version, known from two file probes instead of a listing
   * of the whole log (a catalog read loads its table twice: Spark 4.1 reloads it before running the plan): its commit
   * file is unchanged (so not a table deleted and created again) and the next version's commit does not exist
   * (commits are put in version order, each only if absent). It is the snapshot a listing would return, except that
   * its segment may start at an older checkpoint than one another process wrote since: the same state.
   */
  private def heldLatest(): Option[Snapshot] =
    SnapshotCache.unchanged(tablePath.toString, v => store.status(FileNames.deltaFile(logPath, v)))
      .filter(s => store.status(FileNames.deltaFile(logPath, s.version + 1)).isEmpty)

  private def snapshotFrom(listing: LogListing): Option[Snapshot] = {
    val key = tablePath.toString
    if (listing.isEmpty) { SnapshotCache.invalidate(key); return None }
    val latest = (listing.commits.keys ++ listing.checkpoints.keys).max
    val snapshot = SnapshotCache.current(key, listing.commits, listing.checkpoints.keys) match {
      case Some(s) if s.version == latest => s
      case Some(s) if (s.version + 1 to latest).forall(listing.commits.contains) =>
        val replay = Snapshot.Replay.from(s)
        val newCommits = (s.version + 1 to latest).map(v => v -> listing.commits(v))
        newCommits.foreach { case (v, st) => readCommit(v, st.getPath).foreach(replay.apply) }
        val old = s.segment
        replay.result(latest, old.copy(version = latest, commitFiles = old.commitFiles ++ newCommits.map(_._2.getPath),
          lastCommitTimestamp = newCommits.last._2.getModificationTime,
          commitStamp = Some(FileStamp.of(newCommits.last._2))))
      case held =>
        // None held, or one of another history of the path (or before a newer checkpoint): this load replaces it.
        if (held.isEmpty) SnapshotCache.invalidate(key)
        load(listing, None)
    }
    SnapshotCache.put(key, snapshot, listing.commits.get(latest))
    Some(snapshot)
  }

  /**
   * The snapshot of `version` this JVM holds, without a listing (None when it holds another version): a commit of
   * this JVM that directly followed the version it read leaves the table after it there ([[Transaction]]). For the
   * writer that just made `version`, to describe what it wrote: a version's content never changes, so nothing in
   * the log needs checking for that, unlike for the latest version ([[snapshotOption]] lists the log).
   */
  def heldSnapshot(version: Long): Option[Snapshot] =
    SnapshotCache.get(tablePath.toString).filter(_.version == version)

  /** As [[heldSnapshot]], for the head a commit over a head leaves ([[HeadCache]]). */
  def heldHead(version: Long): Option[SnapshotHead] = HeadCache.get(tablePath.toString).filter(_.version == version)

  /** The latest snapshot; [[TableNotFoundException]] when there is no table. */
  def snapshot(): Snapshot = snapshotOption().getOrElse(throw TableNotFoundException(tablePath.toString))

  /**
   * The latest version without its file state ([[SnapshotHead]]), or None when there is no table here: the
   * checkpoint's non-file columns and the commits' non-file actions. A snapshot this JVM already holds for that
   * version gives it at no cost.
   */
  def headOption(): Option[SnapshotHead] = headFrom(listLog())

  private[log] def headFrom(listing: LogListing): Option[SnapshotHead] = {
    if (listing.isEmpty) return None
    val cached = currentSnapshot(listing).filter(_ => listing.v2Checkpoints.isEmpty)
    Some(cached.map(SnapshotHead.of).orElse(cachedHead(listing)).getOrElse {
      HeadCache.invalidate(tablePath.toString) // none held, or of another history: this head replaces it
      val head = load(listing, None, replayHead)
      HeadCache.put(tablePath.toString, head, listing.commits.get(head.version))
      head
    })
  }

  /**
   * The latest head from the one this JVM holds ([[HeadCache]]) and the commits since (their non-file actions only:
   * no checkpoint read), when it is still current and they are all there.
   */
  private def cachedHead(listing: LogListing): Option[SnapshotHead] =
    HeadCache.current(tablePath.toString, listing.commits, listing.checkpoints.keys)
      .filter(h => (h.version + 1 to listing.latest).forall(listing.commits.contains)).map { h =>
        if (h.version == listing.latest) h else {
          val replay = new SnapshotHead.Replay(tablePath, Some(h))
          val commits = (h.version + 1 to listing.latest).map(v => v -> listing.commits(v))
          commits.foreach { case (v, st) => readCommit(v, st.getPath).foreach(replay.apply) }
          val head = replay.after(listing.latest, commits.map(_._2))
          HeadCache.put(tablePath.toString, head, commits.lastOption.map(_._2))
          head
        }
      }

  /**
   * How big the latest version's file state is, from one listing and `_last_checkpoint` (nothing replayed), or None
   * when there is no table: exact for a snapshot this JVM holds of it; else an older snapshot's or head's size from
   * the newest checkpoint, plus the bytes of the commits since (no second read of `_last_checkpoint` for appends
   * racing others or made over heads); else `_last_checkpoint`'s `numOfAddFiles` when it names the newest complete
   * checkpoint (commits after it not counted), and the bytes of that checkpoint and the commits after it.
   */
  def stateSize(): Option[StateSize] = sizeFrom(listLog())

  /**
   * How big the table is just after `version`, a commit of this JVM (for what runs after a commit: where its
   * checkpoint is written, whether compaction may build the state): the head the commit left when it directly
   * followed the head it read; else [[stateSize]] when that states a file count; else the head at `version`.
   */
  def sizeAfter(version: Long): StateSize =
    heldHead(version).map(_.size).orElse(stateSize().filter(_.files.isDefined)).getOrElse(headAt(version).size)

  private def sizeFrom(listing: LogListing): Option[StateSize] = {
    if (listing.isEmpty) return None
    def since(version: Long) = listing.commits.collect { case (v, st) if v > version => st.getLen }.sum
    SnapshotCache.current(tablePath.toString, listing.commits, listing.checkpoints.keys)
      .map(s => StateSize(Some(s.numFiles.toLong), since(s.version))).orElse {
      HeadCache.current(tablePath.toString, listing.commits, listing.checkpoints.keys)
        .map(h => h.size.copy(logBytes = h.size.logBytes + since(h.version)))
    }.orElse {
      val cp = listing.checkpoints.keys.maxOption
      val commits = listing.commits.filter { case (v, _) => cp.forall(v > _) }
      val bytes = cp.fold(0L)(listing.checkpoints(_).map(_.getLen).sum) + commits.values.map(_.getLen).sum
      Some(StateSize(checkpointFileCount(cp), bytes))
    }
  }

  /** The snapshot this JVM holds of the listing's latest version, when nothing in the log has changed under it. */
  private def currentSnapshot(listing: LogListing): Option[Snapshot] =
    SnapshotCache.current(tablePath.toString, listing.commits, listing.checkpoints.keys)
      .filter(_.version == listing.latest)

  /** `_last_checkpoint`'s `numOfAddFiles` when it names checkpoint `cp` (delta-spark's and Strata's do). */
  private def checkpointFileCount(cp: Option[Long]): Option[Long] =
    cp.flatMap(v => readLastCheckpoint().filter(_.path("version").asLong(-1) == v))
      .flatMap(n => Option(n.get("numOfAddFiles")).filter(_.canConvertToLong).map(_.asLong))

  /** The version `version` without its file state (time travel; [[headOption]]). */
  def headAt(version: Long): SnapshotHead = {
    val listing = listLog()
    if (listing.isEmpty) throw TableNotFoundException(tablePath.toString)
    load(listing, Some(version), replayHead)
  }

  /** The snapshot at `version` (time travel). */
  def snapshotAt(version: Long): Snapshot = {
    val listing = listLog()
    if (listing.isEmpty) throw TableNotFoundException(tablePath.toString)
    load(listing, Some(version))
  }

  /** Commits newest first, with their commitInfo. */
  def history(limit: Int = Int.MaxValue): Seq[CommitRecord] = {
    val stamps = commitTimestamps()
    if (stamps.isEmpty) throw TableNotFoundException(tablePath.toString)
    stamps.reverse.take(limit).map { case (v, ts) =>
      val info = readCommit(v, FileNames.deltaFile(logPath, v)).collectFirst { case c: CommitInfo => c }
      CommitRecord(v, ts, info)
    }
  }

  /**
   * The [[FileStamp]] of commit `version`'s file now, None when there is none: one probe, no listing. A state built up
   * to that version (whose segment's `commitStamp` it was) still describes this log while the two are equal.
   */
  def commitStamp(version: Long): Option[FileStamp] =
    store.status(FileNames.deltaFile(logPath, version)).map(FileStamp.of)

  /** The actions of commit `version`, as written. */
  def readCommit(version: Long): Seq[Action] = readCommit(version, FileNames.deltaFile(logPath, version))

  private[log] def readCommit(version: Long, path: Path): Seq[Action] = LogFileReads.commit(store, version, path)

  /** The version `_last_checkpoint` names, if it is there and readable. */
  def lastCheckpointVersion(): Option[Long] = readLastCheckpointHint()

  private def readLastCheckpointHint(): Option[Long] =
    readLastCheckpoint().flatMap(n => Option(n.get("version"))).map(_.asLong)

  private def readLastCheckpoint(): Option[com.fasterxml.jackson.databind.JsonNode] =
    LogFileReads.lastCheckpoint(store, logPath)

  private[log] def load(listing: LogListing, target: Option[Long]): Snapshot = load(listing, target, replay)

  /** Loads `target` (else the latest) by `replay` from the newest checkpoint that reads, else older starting points. */
  private def load[T](listing: LogListing, target: Option[Long], replay: (LogListing, Option[Long], Long) => T): T = {
    val latest = (listing.commits.keys ++ listing.checkpoints.keys).max
    val version = target.getOrElse(latest)
    if (version > latest || version < 0) throw InvalidTableOperationException("STRATA_TIME_TRAVEL_OUT_OF_RANGE",
      s"Version $version of $tablePath does not exist; the latest version is $latest.")
    val usable = listing.checkpoints.keys.filter(_ <= version).toSeq.sorted.reverse
    // Newest checkpoint first; an unreadable one is passed over when the commits after an older one are all there.
    val routes = (usable.map(Some(_)) :+ None).filter(cp => (cp.map(_ + 1).getOrElse(0L) to version)
      .forall(listing.commits.contains))
    if (routes.isEmpty) {
      // Below the oldest version the log can still rebuild: history cleaned up (cleanup_log, delta-spark's log
      // retention), not a damaged log.
      listing.oldestReconstructable.filter(version < _).foreach { oldest =>
        throw InvalidTableOperationException("STRATA_VERSION_NOT_AVAILABLE",
          s"Version $version of $tablePath is no longer available: the log " +
          s"before version $oldest has been cleaned up (delta.logRetentionDuration). The oldest version that can be " +
          s"read or restored is $oldest; the latest is $latest.")
      }
      val start = usable.headOption.map(_ + 1).getOrElse(0L)
      val gone = FileNames.deltaFile(logPath, (start to version).find(v => !listing.commits.contains(v)).get)
      // Name the checkpoint _last_checkpoint promised, when its absence is what makes the version unreachable.
      val why = readLastCheckpointHint().filter(h => h <= version && !listing.checkpoints.contains(h)) match {
        case Some(h) => s"the checkpoint ${FileNames.checkpointFile(logPath, h)} named by _last_checkpoint is " +
          s"missing or incomplete, and commit file $gone needed to rebuild the table without it is gone"
        case None => s"commit file $gone is missing"
      }
      throw MissingLogFileException("STRATA_LOG_FILE_MISSING", s"Cannot rebuild version $version of $tablePath: $why.")
    }
    var firstFailure: Option[CorruptLogException] = None
    routes.iterator.map { cp =>
      try Some(replay(listing, cp, version)) catch {
        case e: CheckpointUnreadable =>
          firstFailure = firstFailure.orElse(Some(e.error))
          TableLog.logger.warn(s"${e.error.getMessage} Rebuilding version $version from an older starting point.")
          None
      }
    }.collectFirst { case Some(s) => s }.getOrElse(throw firstFailure.get)
  }

  /** The head of `version` from checkpoint `cp` (if any): non-file columns and actions only ([[SnapshotHead]]). */
  private def replayHead(listing: LogListing, cp: Option[Long], version: Long): SnapshotHead = {
    val cpStatus = cp.map(listing.checkpoints(_)).getOrElse(Nil)
    val commits = (cp.map(_ + 1).getOrElse(0L) to version).map(v => v -> listing.commits(v))
    val lastTs = commits.lastOption.map(_._2.getModificationTime).getOrElse(cpStatus.head.getModificationTime)
    val segment = LogSegment(version, cp, cpStatus.map(_.getPath), commits.map(_._2.getPath), lastTs,
      listing.commits.get(version).map(FileStamp.of))
    val head = new SnapshotHead.Replay(tablePath)
    cpStatus.foreach { st =>
      // A V2 checkpoint's top file holds every non-file action (its sidecars only adds and removes).
      def actions = if (st.getPath.getName.endsWith(".json")) store.read(st.getPath).iterator.map(ActionCodec.parse)
        else store.readCheckpoint(st.getPath, SnapshotHead.Columns)
      try actions.foreach(head.apply) catch {
        case e: StrataException => throw e
        case NonFatal(e) => throw new CheckpointUnreadable(CorruptLogException("STRATA_CORRUPT_LOG",
          s"Checkpoint file ${st.getPath} is unreadable: $e.", e))
      }
    }
    commits.foreach { case (v, st) => readCommit(v, st.getPath).foreach(head.apply) }
    val bytes = cpStatus.map(_.getLen).sum + commits.map(_._2.getLen).sum
    head.result(version, segment, checkpointFileCount(cp), bytes)
  }

  private final class CheckpointUnreadable(val error: CorruptLogException) extends Exception(error)

  /** Replays checkpoint `cp` (if any) and the commits after it up to `version`. */
  private def replay(listing: LogListing, cp: Option[Long], version: Long): Snapshot = {
    val cpFiles = cp.map(listing.checkpoints(_).map(_.getPath)).getOrElse(Nil)
    val commits = (cp.map(_ + 1).getOrElse(0L) to version).map(v => v -> listing.commits(v))
    val lastTs = commits.lastOption.map(_._2.getModificationTime)
      .getOrElse(listing.checkpoints(version).head.getModificationTime)
    val segment = LogSegment(version, cp, cpFiles, commits.map(_._2.getPath), lastTs,
      listing.commits.get(version).map(FileStamp.of))
    val replay = new Snapshot.Replay(tablePath)
    new CheckpointParts(cpFiles, V2Checkpoints.reader(store, logPath)).foreach { (f, actions) =>
      try actions.foreach(replay.apply) catch {
        case NonFatal(e) => Checkpoints.readFailure(f, e) match {
          case c: CorruptLogException if c ne e => throw new CheckpointUnreadable(c)
          case other => throw other
        }
      }
    }
    commits.foreach { case (v, st) => readCommit(v, st.getPath).foreach(replay.apply) }
    replay.result(version, segment)
  }

  // ---- writing ---------------------------------------------------------------------------------------------------

  /**
   * Starts a transaction on the latest version (or on no table, to create one). The settings its commit's automatic
   * checkpoint reads are checked first: a mistyped one fails the write before it writes anything, never after its
   * commit has landed (a post-commit hook can only log).
   */
  def startTransaction(): Transaction = { checkCommitSettings(); new Transaction(this, snapshotOption()) }

  /**
   * Starts a transaction on `base`, a snapshot of this table the caller already holds (the one a statement was
   * analyzed against): no log listing. Commits after it are checked as concurrent winners.
   */
  def startTransaction(base: Option[Snapshot]): Transaction = { checkCommitSettings(); new Transaction(this, base) }

  /**
   * Starts a transaction on `head`, a version of this table read without its file state ([[latest]] chose it): for
   * blind appends, whose commit needs the version's protocol, metadata and application versions only. Its
   * [[Transaction.readSnapshot]] is a typed error; after its commit the automatic checkpoint is left to the hooks the
   * connector registers ([[CheckpointHook]] does not build the state on the driver).
   */
  def startTransaction(head: SnapshotHead): Transaction = {
    checkCommitSettings(); new Transaction(this, None, Some(head))
  }

  /** The checkpoint part size (`strata.checkpoint.partSize` / delta-spark's) is valid where it is set. */
  private def checkCommitSettings(): Unit = CheckpointWriter.partSize(conf)

  /**
   * Writes a classic checkpoint of `snapshot` (one file, or parts: [[CheckpointWriter]]) and points
   * `_last_checkpoint` at it; returns its first file.
   */
  def checkpoint(snapshot: Snapshot): Path = writeCheckpoint(snapshot).files.head

  /** As [[checkpoint]], with every file written. */
  def writeCheckpoint(snapshot: Snapshot): WrittenCheckpoint = {
    val retentionMs = TableLog.tombstoneRetentionMillis(snapshot.metadata.configuration)
    // PROTOCOL.md, "V2 Checkpoint Table Feature": such a table must not use multi-part checkpoints (classic ones do).
    val partSize = if (TableFeatures.V2Checkpoint.supportedBy(snapshot.protocol)) Long.MaxValue
      else CheckpointWriter.partSize(conf)
    CheckpointWriter.write(this, snapshot, partSize, System.currentTimeMillis() - retentionMs)
  }
}

object TableLog {
  private val logger = org.slf4j.LoggerFactory.getLogger(classOf[TableLog])
  def forPath(tablePath: Path, conf: Configuration): TableLog = {
    val fs = tablePath.getFileSystem(conf)
    val qualified = fs.makeQualified(tablePath)
    new TableLog(qualified, LogStore.forPath(qualified, conf), conf)
  }

  val CheckpointIntervalKey = "delta.checkpointInterval"
  val DefaultCheckpointInterval = 10

  def checkpointInterval(conf: Map[String, String]): Int =
    conf.get(CheckpointIntervalKey).map { v =>
      v.toIntOption.filter(_ > 0).getOrElse(
        throw TableProperties.invalidValue(s"Table property $CheckpointIntervalKey", v, "a positive whole number"))
    }.getOrElse(DefaultCheckpointInterval)

  /** The first version with in-commit timestamps, when the table's (latest) metadata enables them. */
  private[log] def inCommitTimestampsFrom(m: Metadata): Option[Long] =
    if (!m.configuration.get("delta.enableInCommitTimestamps").exists(_.trim.equalsIgnoreCase("true"))) None
    else Some(m.configuration.get("delta.inCommitTimestampEnablementVersion").flatMap(_.trim.toLongOption).getOrElse(0L))

  /** delta.deletedFileRetentionDuration ("interval 1 week" by default). */
  def tombstoneRetentionMillis(conf: Map[String, String]): Long =
    conf.get("delta.deletedFileRetentionDuration").flatMap(Intervals.parseMillis).getOrElse(7L * 24 * 3600 * 1000)
}
