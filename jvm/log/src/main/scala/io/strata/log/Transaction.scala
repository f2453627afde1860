package io.strata.log

import java.util.UUID

import org.apache.hadoop.fs.{FileAlreadyExistsException, FileStatus}

import scala.util.control.NonFatal

/**
 * What a commit did, for commitInfo and history. Parameter values are JSON-encoded strings, as delta-spark writes
 * most; `flags` are the few it writes as JSON booleans (OPTIMIZE's `auto` and `isFull`).
 */
final case class Operation(
    name: String,
    parameters: Map[String, String] = Map.empty,
    metrics: Map[String, Long] = Map.empty,
    userMetadata: Option[String] = None,
    flags: Map[String, Boolean] = Map.empty)

/**
 * The outcome of a commit. `alreadyCommitted`: nothing was written because version `version` of the table already
 * records this application's transaction version (an idempotent retry); `commitInfo` is then the one we would have
 * written.
 */
final case class CommitResult(version: Long, attempts: Int, commitInfo: CommitInfo, alreadyCommitted: Boolean = false)

/**
 * An optimistic transaction (PROTOCOL.md, "Optimistic Concurrency Control"): it reads version N, stages actions and
 * tries to create version N+1. When another writer got there first it reads the winning commits, fails with a
 * typed [[ConcurrentModificationException]] if they logically conflict with what this transaction read or
 * replaced, and otherwise tries the next version. Blind appends never conflict. What follows a commit that landed
 * (checkpoints, log cleanup, a connector's work) is not part of it: [[PostCommitHook]]s run then, and cannot fail it.
 */
final class Transaction private[log] (val log: TableLog, snapshot: Option[Snapshot],
                                     head: Option[SnapshotHead] = None) {
  /**
   * The version read without its file state: protocol, metadata, application versions, domains (None: no table).
   * Everything a commit needs comes from here; only operations that read or replace files need [[readSnapshot]].
   */
  val readHead: Option[SnapshotHead] = head.orElse(snapshot.map(SnapshotHead.of))
  /** False for a transaction over a [[SnapshotHead]] (a table above the connector's distributed-state threshold). */
  val hasFileState: Boolean = head.isEmpty
  /**
   * The version read, with its files (None: no table). A transaction started over a [[SnapshotHead]] has no file
   * state to give: asking for it is a typed error, never a wrong answer (such a transaction commits blind appends).
   */
  def readSnapshot: Option[Snapshot] =
    if (hasFileState) snapshot
    else throw InvalidTableOperationException("STRATA_NO_FILE_STATE", Map("table" -> log.tablePath,
      "version" -> readVersion))
  val readVersion: Long = readHead.map(_.version).getOrElse(-1L)
  /** One id for every attempt of this commit: after an ambiguous write, the version file tells whose it is. */
  val txnId: String = UUID.randomUUID().toString
  private var newMetadata: Option[Metadata] = None
  private var reads = ReadSet()
  private var requireNewTable = false
  private var requiredProtocol: Option[Protocol] = None
  private var committed = false
  private var hooks = Vector.empty[PostCommitHook]

  /** The metadata this transaction will commit with (the new one, if set). */
  def metadata: Option[Metadata] = newMetadata.orElse(readHead.map(_.metadata))
  def protocol: Option[Protocol] = readHead.map(_.protocol)

  /** Sets new table metadata (creating a table, or changing schema, partitioning or properties). */
  def updateMetadata(m: Metadata): Unit = newMetadata = Some(m)

  /** CREATE semantics: the commit fails with [[TableAlreadyExistsException]] unless no version of the table exists. */
  def requireNoTable(): Unit = {
    readHead.foreach(s => throw TableAlreadyExistsException(log.tablePath.toString, s.version))
    requireNewTable = true
  }

  /** Declares that the outcome depends on the rows this predicate selects (overwrite, replaceWhere, a read input). */
  def readWhere(predicate: FilePredicate): Unit =
    if (!reads.predicates.contains(predicate)) reads = reads.copy(predicates = reads.predicates :+ predicate)

  /**
   * Judges concurrent adds against the read set under serializable isolation whatever the table's level (a restore:
   * the version it commits must equal the old one exactly, so rows appended while it ran must not survive it).
   */
  def requireSerializable(): Unit = serializable = true
  private var serializable = false

  /** Asks for at least protocol `p` in this commit (table properties delta.minWriterVersion, delta.feature.*). */
  def requireProtocol(p: Protocol): Unit =
    requiredProtocol = Some(requiredProtocol.fold(p)(ProtocolSupport.merge(_, p, existing = false))) // asks add up

  private var domains = Vector.empty[DomainMetadata]
  /** Stages a `domainMetadata` action for the commit (e.g. a table feature's system domain, [[Clustering]]). */
  def writeDomain(d: DomainMetadata): Unit = domains = domains.filterNot(_.domain == d.domain) :+ d

  /** Commits exactly protocol `p`, a downgrade included (DROP FEATURE: [[FeatureDrop]]); the metadata must fit it. */
  def downgradeProtocol(p: Protocol): Unit = downgradedProtocol = Some(p)
  private var downgradedProtocol: Option[Protocol] = None

  /** Declares that the outcome depends on these files still being there (files it will remove or rewrite). */
  def readFiles(files: Iterable[AddFile]): Unit =
    reads = reads.copy(files = reads.files ++ files.map(f => Snapshot.absolutePath(log.tablePath, f.path).toString))

  /**
   * Declares that this transaction's input read the table at `version` (older than [[readVersion]]): the commits
   * after it are validated against the read set like concurrent winners.
   */
  def readInputAt(version: Long): Unit =
    if (version < readVersion) reads = reads.copy(fromVersion = Some(reads.fromVersion.fold(version)(math.min(_, version))))

  /** The last version `appId` committed, recorded so that a concurrent commit of the same app is a conflict. */
  def applicationVersion(appId: String): Option[Long] = {
    reads = reads.copy(appIds = reads.appIds + appId)
    readHead.flatMap(_.transactions.get(appId)).map(_.version)
  }

  /**
   * Runs `hook` after this transaction's commit lands, after the log core's own hooks (checkpoint, log cleanup); a
   * hook registered twice runs once. See [[PostCommitHook]].
   */
  def registerPostCommitHook(hook: PostCommitHook): Unit = if (!hooks.contains(hook)) hooks :+= hook

  /** Commits `op` (its reads declared, its actions staged) plus `extra` actions (a `txn`) as the next version. */
  def commit(op: TableOperation, extra: Seq[Action], operation: Operation): CommitResult = {
    rowRebase = op match { case d: TableOperation.DeleteRows => d.rebase; case _ => None }
    commit(op.stage(this, System.currentTimeMillis()) ++ extra, operation)
  }

  private var rowRebase: Option[RowDeleteRebase] = None

  /** Commits `actions` as the next version. Single use. */
  def commit(actionsGiven: Seq[Action], operation: Operation): CommitResult = {
    if (committed) throw new IllegalStateException("This transaction has already committed.")
    committed = true
    val actions = actionsGiven ++ domains
    val meta = metadata.getOrElse(throw InvalidTableOperationException("STRATA_MISSING_METADATA",
      Map("table" -> log.tablePath)))
    val derived = readHead match {
      case None => ProtocolSupport.minimumFor(meta)
      case Some(s) if newMetadata.isDefined => ProtocolSupport.upgradeFor(s.protocol, meta)
      case Some(s) => s.protocol
    }
    val protocol = downgradedProtocol.getOrElse(requiredProtocol.fold(derived)(
      ProtocolSupport.merge(derived, _, existing = readHead.isDefined)))
    ProtocolSupport.checkWritable(protocol, meta, log.tablePath.toString)
    validate(actions, meta)
    // Without the file state nothing can say which files a remove names: such a transaction only adds.
    if (!hasFileState && actions.exists(_.isInstanceOf[RemoveFile])) throw InvalidTableOperationException(
      "STRATA_NO_FILE_STATE", Map("table" -> log.tablePath, "version" -> readVersion))
    DomainWrites.validate(actions, protocol, log.tablePath.toString)
    val isolation = if (serializable) IsolationLevel.Serializable else IsolationLevel.of(meta.configuration)

    val staged = Vector.newBuilder[Action]
    if (readHead.forall(_.protocol != protocol)) staged += protocol
    newMetadata.foreach(staged += _)
    staged ++= actions
    var body: Seq[Action] = staged.result()
    val checker = new ConflictChecker(log, body, isolation, reads, readVersion,
      changesMetadata = newMetadata.isDefined || requireNewTable, rowRebase)
    val baseInfo = commitInfo(operation, body, checker.isBlindAppend, isolation)
    var info = baseInfo
    // What the version holds: `body`, its metadata with the in-commit timestamp enablement of the version it lands at.
    var written: Seq[Action] = body
    val ict = InCommitTimestamps.active(protocol, meta)
    def stage(v: Long): Seq[String] = {
      // The previous commit is the version read (its stamp checked before the put) or a winner just read.
      val previous = readHead.map(_.segment).filter(_.version == v - 1).flatMap(_.commitStamp)
      val ts = if (ict) Some(InCommitTimestamps.next(log, meta.id, v, System.currentTimeMillis(), previous)) else None
      info = ts.fold(baseInfo)(t => CommitInfo(baseInfo.json.deepCopy().put("timestamp", t).put("inCommitTimestamp", t)))
      written = body.map {
        case m: Metadata => InCommitTimestamps.withEnablement(m, readHead.map(_.metadata), v, ts)
        case a => a
      }
      (info +: written).map(ActionCodec.serialize) // commitInfo first (PROTOCOL.md asks it of in-commit timestamps)
    }
    var lines = stage(readVersion + 1)
    // Idempotence against the version this transaction read; the winners are checked in the loop.
    val alreadyRead = body.collectFirst {
      case t: SetTransaction if readHead.flatMap(_.transactions.get(t.appId)).exists(_.version >= t.version) => t
    }
    if (alreadyRead.isDefined) {
      val t = alreadyRead.get
      Transaction.logger.info(s"Application '${t.appId}' version ${t.version} is already committed in ${log.tablePath}.")
      return CommitResult(readVersion, 1, info, alreadyCommitted = true)
    }

    val maxAttempts = log.conf.getInt(Transaction.MaxRetriesKey, Transaction.DefaultMaxRetries) + 1
    var version = readVersion + 1
    var attempt = 1
    var ioFailures = 0
    def alreadyCommitted(a: ConflictChecker.AlreadyCommitted): CommitResult = {
      Transaction.logger.info(s"Application '${a.appId}' version ${a.appVersion} is already committed in version " +
        s"${a.version} of ${log.tablePath}: nothing to commit.")
      CommitResult(a.version, attempt, info, alreadyCommitted = true)
    }
    // Commits between the input's read and this transaction's read are validated like winners.
    reads.fromVersion.map(v => checker.checkCommits(v + 1, Some(readVersion))) match {
      case Some(a: ConflictChecker.AlreadyCommitted) => return alreadyCommitted(a)
      case _ =>
    }
    checkReadStillInLog()
    while (true) {
      put(version, lines) match {
        case Transaction.Landed =>
          val after = if (version == readVersion + 1) remember(version, written) else None
          val headStatus = if (version == readVersion + 1 && !hasFileState) rememberHead(version, written) else None
          val result = CommitResult(version, attempt, info)
          for (ts <- info.inCommitTimestamp; st <- after.map(_._2).orElse(headStatus))
            InCommitTimestamps.landed(log, meta.id, version, ts, FileStamp.of(st))
          val writtenMeta = written.collectFirst { case m: Metadata => m }.getOrElse(meta)
          PostCommitHook.runAll(PostCommitHook.LogHooks ++ hooks,
            new CommittedVersion(log, result, written, writtenMeta, after.map(_._1), after.map(_._2),
              readFileState = hasFileState))
          return result
        case Transaction.NotWritten(e) =>
          ioFailures += 1
          if (ioFailures >= Transaction.MaxIoFailures) throw e
          attempt += 1 // the same version again
        case Transaction.LostRace(winner) =>
          if (attempt >= maxAttempts) throw CommitRetriesExhaustedException(attempt, version)
          checker.checkCommits(version, None, winner) match {
            case a: ConflictChecker.AlreadyCommitted => return alreadyCommitted(a)
            case ConflictChecker.Checked(last) => version = last + 1
          }
          // Winners put vectors on files we change, on other rows: our vectors grow by theirs.
          rowRebase.filter(_.pending).foreach(r => body = r.restage(body, System.currentTimeMillis()))
          lines = stage(version)
          attempt += 1
      }
    }
    throw new IllegalStateException("unreachable")
  }

  /**
   * The version read is still the log's: its commit file has the [[FileStamp]] it had when read (one probe). A log
   * replaced under the table since the read (a copy put back, an object-store rollback) would otherwise get this
   * commit on top of another history, and the state cached after it ([[remember]]), which checkpoints are written
   * from, would be the read history's. Nothing to check for a new table or a state whose commit file is unknown.
   */
  private def checkReadStillInLog(): Unit = readHead.map(_.segment).foreach { s =>
    s.commitStamp.foreach { read =>
      val v = s.version // the version whose commit file the stamp is of
      val now = log.commitStamp(v)
      if (!now.exists(_.sameFile(read))) {
        val operation = now.flatMap(_ => scala.util.Try(log.readCommit(v)).toOption
          .flatMap(_.collectFirst { case c: CommitInfo => c.operation }.flatten))
          .getOrElse(if (now.isEmpty) "gone" else "?")
        throw LogReplacedException(v, operation, s"read ${FileNames.deltaFile(log.logPath, v)} as " +
          s"$read, now ${now.fold("absent")(_.toString)}")
      }
    }
  }

  /**
   * The table after this commit, when it directly follows the version read (no winner in between): the read
   * snapshot (none for a new table: its first commit is the whole table) plus this commit's actions, cached so the
   * next load of the table needs no replay (and a blind append starts from it, [[TableLog.appendBase]]); with the
   * commit file it was cached from.
   */
  private def remember(version: Long, body: Seq[Action]): Option[(Snapshot, FileStatus)] = {
    val newTable = hasFileState && readVersion < 0
    if (snapshot.isEmpty && !newTable) return None // a commit over a head keeps its head instead (rememberHead)
    try {
      val replay = snapshot.fold(new Snapshot.Replay(log.tablePath))(Snapshot.Replay.from)
      body.foreach(replay.apply)
      val status = log.store.fs.getFileStatus(FileNames.deltaFile(log.logPath, version))
      val seg = snapshot.fold(LogSegment(version, None, Nil, Nil, status.getModificationTime))(_.segment)
      val after = replay.result(version, seg.copy(version = version,
        commitFiles = seg.commitFiles :+ status.getPath, lastCommitTimestamp = status.getModificationTime,
        commitStamp = Some(FileStamp.of(status))))
      SnapshotCache.put(log.tablePath.toString, after, Some(status))
      Some((after, status))
    } catch { case NonFatal(e) => Transaction.logger.debug(s"Not caching version $version of ${log.tablePath}", e); None }
  }

  /**
   * After a commit over a head that directly follows it: the head after the commit, cached ([[HeadCache]]); returns
   * the commit file's status.
   */
  private def rememberHead(version: Long, body: Seq[Action]): Option[FileStatus] = head.flatMap { h =>
    try {
      val replay = new SnapshotHead.Replay(log.tablePath, Some(h))
      body.foreach(replay.apply)
      val status = log.store.fs.getFileStatus(FileNames.deltaFile(log.logPath, version))
      HeadCache.put(log.tablePath.toString, replay.after(version, Seq(status)), Some(status))
      Some(status)
    } catch {
      case NonFatal(e) => Transaction.logger.debug(s"Not caching version $version of ${log.tablePath}", e); None
    }
  }

  /**
   * One attempt to create `version`. After an I/O error, and after "already exists" too, the version is read back:
   * our txnId says whether it landed. A store that retries a put whose first attempt landed reports "already
   * exists" for our own commit; taking that for a lost race would commit a blind append twice, or fail a rewrite
   * against itself and delete the files its landed commit references.
   */
  private def put(version: Long, lines: Seq[String]): Transaction.PutOutcome =
    try { log.store.putIfAbsent(FileNames.deltaFile(log.logPath, version), lines); Transaction.Landed } catch {
      case _: FileAlreadyExistsException | _: java.nio.file.FileAlreadyExistsException => readBack(version) match {
        case Some(actions) if holdsThis(actions) => Transaction.Landed
        case other => Transaction.LostRace(other)
      }
      case e: java.io.IOException => readBack(version) match {
        case Some(actions) if holdsThis(actions) => Transaction.Landed
        case Some(actions) => Transaction.LostRace(Some(actions))
        case None => Transaction.NotWritten(e)
      }
    }

  /** Version `version`'s actions after an ambiguous or refused put, None when it cannot be read. */
  private def readBack(version: Long): Option[Seq[Action]] =
    try Some(log.readCommit(version)) catch { case _: MissingLogFileException => None }

  /** Whether a commit's actions are this transaction's (its txnId in commitInfo). */
  private def holdsThis(actions: Seq[Action]): Boolean =
    actions.exists { case c: CommitInfo => Option(c.json.get("txnId")).exists(_.asText == txnId); case _ => false }

  private def validate(actions: Seq[Action], meta: Metadata): Unit = {
    if (actions.exists(_.isInstanceOf[Metadata]) || actions.exists(_.isInstanceOf[Protocol])) {
      throw new IllegalArgumentException("Set metadata with updateMetadata; protocol is derived, not staged.")
    }
    // A file is added once and removed once at most; both only when its deletion vector changes (PROTOCOL.md).
    val adds = actions.collect { case a: AddFile => (a.path, a.dvId) }
    val removes = actions.collect { case r: RemoveFile => (r.path, r.dvId) }
    val dup = adds.map(_._1).groupBy(identity).collectFirst { case (p, ps) if ps.size > 1 => p }
      .orElse(removes.map(_._1).groupBy(identity).collectFirst { case (p, ps) if ps.size > 1 => p })
      .orElse(adds.find(removes.contains).map(_._1))
    dup.foreach(p => throw new IllegalArgumentException(s"File $p appears twice in one commit."))
    if (meta.configuration.get("delta.appendOnly").exists(_.equalsIgnoreCase("true")) &&
      actions.exists { case r: RemoveFile => r.dataChange; case _ => false }) {
      throw InvalidTableOperationException("STRATA_APPEND_ONLY", Map("table" -> log.tablePath))
    }
    val partCols = ColumnMapping.physicalPartitionColumns(meta).toSet // the log's keys (column mapping)
    actions.foreach {
      case a: AddFile if a.partitionValues.keySet != partCols => throw new IllegalArgumentException(
        s"File ${a.path} has partition values for ${a.partitionValues.keys.mkString("[", ", ", "]")} but the table " +
          s"is partitioned by ${meta.partitionColumns.mkString("[", ", ", "]")}.")
      case _ =>
    }
  }

  private def commitInfo(op: Operation, body: Seq[Action], blindAppend: Boolean,
                         isolation: IsolationLevel): CommitInfo = {
    val o = ActionCodec.mapper.createObjectNode()
    o.put("timestamp", System.currentTimeMillis())
    o.put("operation", op.name)
    val params = o.putObject("operationParameters")
    (op.parameters.toSeq.map { case (k, v) => k -> Left(v) } ++ op.flags.toSeq.map { case (k, v) => k -> Right(v) })
      .sortBy(_._1).foreach {
        case (k, Left(v)) => params.put(k, v)
        case (k, Right(b)) => params.put(k, b)
      }
    if (readVersion >= 0) o.put("readVersion", readVersion)
    o.put("isolationLevel", isolation.commitInfoName)
    o.put("isBlindAppend", blindAppend)
    if (op.metrics.nonEmpty) {
      val m = o.putObject("operationMetrics")
      op.metrics.toSeq.sortBy(_._1).foreach { case (k, v) => m.put(k, v.toString) }
    }
    op.userMetadata.foreach(o.put("userMetadata", _))
    o.put("engineInfo", Engine.info)
    o.put("txnId", txnId)
    CommitInfo(o)
  }
}

object Transaction {
  val MaxRetriesKey = "strata.commit.maxRetries"
  val DefaultMaxRetries = 100
  /** I/O failures (nothing landed) tolerated on one version before the error is raised. */
  private val MaxIoFailures = 3

  private sealed trait PutOutcome
  private case object Landed extends PutOutcome
  /** Another writer's commit holds the version; `winner`: its actions when the put already read them back. */
  private final case class LostRace(winner: Option[Seq[Action]]) extends PutOutcome
  private final case class NotWritten(error: java.io.IOException) extends PutOutcome

  private val logger = org.slf4j.LoggerFactory.getLogger(classOf[Transaction])
}
