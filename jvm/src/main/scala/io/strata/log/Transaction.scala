package io.strata.log

import java.util.UUID

import org.apache.hadoop.fs.FileAlreadyExistsException

import scala.util.control.NonFatal

/** What a commit did, for commitInfo and history. Parameter values are JSON-encoded strings, as delta-spark writes. */
final case class Operation(
    name: String,
    parameters: Map[String, String] = Map.empty,
    metrics: Map[String, Long] = Map.empty,
    userMetadata: Option[String] = None)

/** A set of partitions (or the whole table) a transaction read: a concurrent add inside it is a conflict. */
final case class ReadPredicate(description: String, matches: Map[String, Option[String]] => Boolean)

object ReadPredicate {
  val WholeTable: ReadPredicate = ReadPredicate("the whole table", _ => true)
}

/** The outcome of a commit. */
final case class CommitResult(version: Long, attempts: Int, commitInfo: CommitInfo)

/**
 * An optimistic transaction (PROTOCOL.md, "Optimistic Concurrency Control"): it reads version N, stages actions and
 * tries to create version N+1. When another writer got there first it reads the winning commits, fails with a
 * typed [[ConcurrentModificationException]] if they logically conflict with what this transaction read or
 * replaced, and otherwise tries the next version. Blind appends never conflict.
 */
final class Transaction private[log] (val log: TableLog, val readSnapshot: Option[Snapshot]) {
  val readVersion: Long = readSnapshot.map(_.version).getOrElse(-1L)
  private var newMetadata: Option[Metadata] = None
  private var readPredicates: Vector[ReadPredicate] = Vector.empty
  private var readFilePaths: Set[String] = Set.empty
  private var readAppIds: Set[String] = Set.empty
  private var committed = false

  /** The metadata this transaction will commit with (the new one, if set). */
  def metadata: Option[Metadata] = newMetadata.orElse(readSnapshot.map(_.metadata))
  def protocol: Option[Protocol] = readSnapshot.map(_.protocol)

  /** Sets new table metadata (creating a table, or changing schema, partitioning or properties). */
  def updateMetadata(m: Metadata): Unit = newMetadata = Some(m)

  private var requiredProtocol: Option[Protocol] = None
  /** Asks for at least protocol `p` in this commit (table properties delta.minWriterVersion, delta.feature.*). */
  def requireProtocol(p: Protocol): Unit = requiredProtocol = Some(p)

  /** Declares that the outcome depends on the rows in these partitions (overwrite, replaceWhere, ...). */
  def readWhere(predicate: ReadPredicate): Unit = readPredicates :+= predicate

  /** Declares that the outcome depends on these files still being there (files it will remove or rewrite). */
  def readFiles(files: Iterable[AddFile]): Unit =
    readFilePaths ++= files.map(f => Snapshot.absolutePath(log.tablePath, f.path).toString)

  /** The last version `appId` committed, recorded so that a concurrent commit of the same app is a conflict. */
  def applicationVersion(appId: String): Option[Long] = {
    readAppIds += appId
    readSnapshot.flatMap(_.transactionVersion(appId))
  }

  /** Commits `actions` as the next version. Single use. */
  def commit(actions: Seq[Action], operation: Operation): CommitResult = {
    if (committed) throw new IllegalStateException("This transaction has already committed.")
    committed = true
    val meta = metadata.getOrElse(throw new InvalidTableOperationException(
      s"Cannot create table ${log.tablePath} without metadata (a schema)."))
    val derived = readSnapshot match {
      case None => ProtocolSupport.minimumFor(meta)
      case Some(s) if newMetadata.isDefined => ProtocolSupport.upgradeFor(s.protocol, meta)
      case Some(s) => s.protocol
    }
    val protocol = requiredProtocol.fold(derived)(ProtocolSupport.merge(derived, _))
    ProtocolSupport.checkWritable(protocol, meta, log.tablePath.toString)
    validate(actions, meta)
    val isolation = IsolationLevel.of(meta.configuration)

    val staged = Vector.newBuilder[Action]
    if (readSnapshot.forall(_.protocol != protocol)) staged += protocol
    newMetadata.foreach(staged += _)
    staged ++= actions
    val body = staged.result()
    val checker = new ConflictChecker(this, body, isolation, readPredicates, readFilePaths, readAppIds)

    val maxAttempts = log.conf.getInt(Transaction.MaxRetriesKey, Transaction.DefaultMaxRetries) + 1
    var version = readVersion + 1
    var attempt = 1
    while (true) {
      val info = commitInfo(operation, body, checker.isBlindAppend, isolation)
      val lines = (info +: body).map(ActionCodec.serialize)
      try {
        log.store.putIfAbsent(FileNames.deltaFile(log.logPath, version), lines)
        postCommit(version, meta)
        return CommitResult(version, attempt, info)
      } catch {
        case _: FileAlreadyExistsException | _: java.nio.file.FileAlreadyExistsException =>
          if (attempt >= maxAttempts) throw new CommitRetriesExhaustedException(attempt, version)
          version = checker.checkWinnersFrom(version) + 1
          attempt += 1
      }
    }
    throw new IllegalStateException("unreachable")
  }

  private def validate(actions: Seq[Action], meta: Metadata): Unit = {
    if (actions.exists(_.isInstanceOf[Metadata]) || actions.exists(_.isInstanceOf[Protocol])) {
      throw new IllegalArgumentException("Set metadata with updateMetadata; protocol is derived, not staged.")
    }
    val paths = actions.collect { case a: AddFile => a.path } ++ actions.collect { case r: RemoveFile => r.path }
    val dup = paths.groupBy(identity).collectFirst { case (p, ps) if ps.size > 1 => p }
    dup.foreach(p => throw new IllegalArgumentException(s"File $p appears twice in one commit."))
    if (meta.configuration.get("delta.appendOnly").exists(_.equalsIgnoreCase("true")) &&
      actions.exists { case r: RemoveFile => r.dataChange; case _ => false }) {
      throw new InvalidTableOperationException(s"Table ${log.tablePath} is append-only (delta.appendOnly=true): " +
        "this operation would remove data. Unset the property to allow it.")
    }
    val partCols = meta.partitionColumns.toSet
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
    op.parameters.toSeq.sortBy(_._1).foreach { case (k, v) => params.put(k, v) }
    if (readVersion >= 0) o.put("readVersion", readVersion)
    o.put("isolationLevel", isolation.commitInfoName)
    o.put("isBlindAppend", blindAppend)
    if (op.metrics.nonEmpty) {
      val m = o.putObject("operationMetrics")
      op.metrics.toSeq.sortBy(_._1).foreach { case (k, v) => m.put(k, v.toString) }
    }
    op.userMetadata.foreach(o.put("userMetadata", _))
    o.put("engineInfo", Transaction.engineInfo)
    o.put("txnId", UUID.randomUUID().toString)
    CommitInfo(o)
  }

  private def postCommit(version: Long, meta: Metadata): Unit = {
    val interval = TableLog.checkpointInterval(meta.configuration)
    if (version > 0 && version % interval == 0) {
      // A checkpoint only speeds up reading; the commit has landed whatever happens here.
      try log.checkpoint(log.snapshotAt(version)) catch {
        case NonFatal(e) => Transaction.logger.warn(s"Checkpoint of version $version of ${log.tablePath} failed", e)
      }
    }
  }
}

object Transaction {
  val MaxRetriesKey = "strata.commit.maxRetries"
  val DefaultMaxRetries = 100
  private val logger = org.slf4j.LoggerFactory.getLogger(classOf[Transaction])

  lazy val strataVersion: String = {
    val in = getClass.getResourceAsStream("/io/strata/strata-version.properties")
    if (in == null) "unknown" else try {
      val p = new java.util.Properties(); p.load(in); p.getProperty("version", "unknown")
    } finally in.close()
  }

  lazy val engineInfo: String = {
    val spark = scala.util.Try(Class.forName("org.apache.spark.package$").getField("MODULE$").get(null))
      .flatMap(m => scala.util.Try(m.getClass.getMethod("SPARK_VERSION").invoke(m).toString)).toOption
    s"Strata/$strataVersion" + spark.map(v => s" Apache-Spark/$v").getOrElse("")
  }
}

/** Decides whether the commits that won the race logically conflict with a transaction (its isolation rules). */
private[log] final class ConflictChecker(
    txn: Transaction,
    staged: Seq[Action],
    isolation: IsolationLevel,
    readPredicates: Seq[ReadPredicate],
    readFiles: Set[String],
    readAppIds: Set[String]) {
  private val log = txn.log
  private val removed = staged.collect { case r: RemoveFile => Snapshot.absolutePath(log.tablePath, r.path).toString }.toSet

  /** A pure append that read nothing: no concurrent commit can invalidate it. */
  val isBlindAppend: Boolean = readPredicates.isEmpty && readFiles.isEmpty && removed.isEmpty &&
    staged.forall { case _: AddFile | _: SetTransaction => true; case _ => false }

  /** Reads every commit from `from` on and throws on the first conflict; returns the last version seen. */
  def checkWinnersFrom(from: Long): Long = {
    var v = from
    var last = from - 1
    var more = true
    while (more) {
      val actions = try Some(log.readCommit(v)) catch { case _: CorruptLogException if v > from => None }
      actions match {
        case Some(winner) => check(v, winner); last = v; v += 1
        case None => more = false
      }
    }
    last
  }

  private def check(version: Long, winner: Seq[Action]): Unit = {
    val op = winner.collectFirst { case c: CommitInfo => c.operation.getOrElse("unknown") }.getOrElse("unknown")
    // Metadata first: a commit that creates the table (or changes its schema and upgrades the protocol with it)
    // carries both, and the metadata change is what the losing transaction needs to hear about.
    if (winner.exists(_.isInstanceOf[Metadata])) throw new MetadataChangedException(version, op,
      if (txn.readVersion < 0) "the table was created concurrently" else "the table's metadata changed")
    if (winner.exists(_.isInstanceOf[Protocol])) {
      throw new ProtocolChangedException(version, op, "the table's protocol changed")
    }
    winner.foreach {
      case t: SetTransaction if readAppIds(t.appId) =>
        throw new ConcurrentTransactionException(version, op, s"application '${t.appId}' committed concurrently")
      case a: AddFile if a.dataChange && isolation == IsolationLevel.Serializable =>
        readPredicates.find(_.matches(a.partitionValues)).foreach { p =>
          throw new ConcurrentAppendException(version, op, s"it added file ${a.path} to ${p.description}, which this " +
            "transaction read")
        }
      case r: RemoveFile if r.dataChange =>
        val path = Snapshot.absolutePath(log.tablePath, r.path).toString
        if (removed(path)) throw new ConcurrentDeleteDeleteException(version, op, s"it also removed file ${r.path}")
        if (readFiles(path)) throw new ConcurrentDeleteReadException(version, op, s"it removed file ${r.path}, which this transaction read")
        readPredicates.find(p => r.partitionValues.exists(p.matches)).foreach { p =>
          throw new ConcurrentDeleteReadException(version, op, s"it removed file ${r.path} from ${p.description}, which this transaction read")
        }
      case _ =>
    }
  }
}
