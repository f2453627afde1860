package io.strata.log

/**
 * Decides whether the commits that won the race (or that landed between the version a write's input read and the
 * version it started from) logically conflict with a transaction. The rules, per winning commit, in this order
 * (docs/concurrency.md has the full matrix):
 *  1. a protocol change conflicts; 2. a metadata change conflicts (a concurrent CREATE too);
 *  3. a `txn` of an application this transaction commits for: at or past our version, ours is already committed
 *     ([[AlreadyCommitted]], not an error); below it, two runs of one application raced (conflict);
 *  4. an add: when this transaction changes metadata or defines the table, any add conflicts (it was written for
 *     the old schema, constraints or table); under serializable isolation an add with `dataChange` that may match
 *     a read predicate conflicts; under snapshot isolation adds never conflict otherwise;
 *  5. a remove (any `dataChange`) of a file this transaction removes (delete-delete) or depends on (delete-read)
 *     conflicts at every level; so does a data-changing remove whose partition values and statistics may match a
 *     read predicate (rows this transaction read were deleted);
 *  6. deletion vectors: a file's new vector (remove and add of one path) adds no rows, so its add is no append; when
 *     this transaction deletes rows of the same file with a vector ([[RowDeleteRebase]], DELETE / UPDATE) and the
 *     rows are disjoint, the remove is absorbed instead of conflicting (overlapping rows: delete-delete).
 */
private[log] final class ConflictChecker(
    log: TableLog,
    staged: Seq[Action],
    isolation: IsolationLevel,
    reads: ReadSet,
    readVersion: Long,
    changesMetadata: Boolean,
    rowRebase: Option[RowDeleteRebase] = None) {
  private val removed = staged.collect { case r: RemoveFile => abs(r.path) }.toSet
  private val ownAppTxns = staged.collect { case t: SetTransaction => t.appId -> t.version }.toMap

  private def abs(path: String): String = Snapshot.absolutePath(log.tablePath, path).toString

  /** A pure append that read nothing: only metadata, protocol or application-id changes can invalidate it. */
  val isBlindAppend: Boolean = reads.predicates.isEmpty && reads.files.isEmpty && removed.isEmpty &&
    !changesMetadata && staged.forall { case _: AddFile | _: SetTransaction => true; case _ => false }

  /**
   * Checks every commit from `from` through `to` (or through the last one present when `to` is None); throws on the
   * first conflict, or [[AlreadyCommitted]]. Returns the last version checked.
   */
  def checkCommits(from: Long, to: Option[Long]): Long = {
    var v = from
    var last = from - 1
    var more = to.forall(from <= _)
    while (more) {
      val actions = try Some(log.readCommit(v)) catch { case _: CorruptLogException if to.isEmpty && v > from => None }
      actions match {
        case Some(winner) =>
          check(v, winner); last = v; v += 1
          more = to.forall(v <= _)
        case None => more = false
      }
    }
    last
  }

  private def check(version: Long, winner: Seq[Action]): Unit = {
    val op = winner.collectFirst { case c: CommitInfo => c.operation.getOrElse("unknown") }.getOrElse("unknown")
    // Application ids first: a retry whose earlier attempt (or a twin run) committed must be told so, not fail.
    winner.foreach {
      case t: SetTransaction if ownAppTxns.get(t.appId).exists(t.version >= _) =>
        throw new AlreadyCommitted(version, t.appId, t.version)
      case t: SetTransaction if ownAppTxns.contains(t.appId) || reads.appIds(t.appId) =>
        throw new ConcurrentTransactionException(version, op, s"application '${t.appId}' committed its version " +
          s"${t.version} concurrently")
      case _ =>
    }
    // Metadata before protocol: a commit that creates the table (or changes its schema and upgrades the protocol
    // with it) carries both, and the metadata change is what the losing transaction needs to hear about.
    if (winner.exists(_.isInstanceOf[Metadata])) throw new MetadataChangedException(version, op,
      if (readVersion >= 0) "the table's metadata changed" else "the table was created concurrently")
    if (winner.exists(_.isInstanceOf[Protocol])) {
      throw new ProtocolChangedException(version, op, "the table's protocol changed")
    }
    // A file given a new deletion vector (remove and add of one path): no rows added, some deleted.
    val revectored: Map[String, AddFile] = {
      val removedPaths = winner.collect { case r: RemoveFile => abs(r.path) }.toSet
      winner.collect { case a: AddFile if removedPaths(abs(a.path)) => abs(a.path) -> a }.toMap
    }
    // Rows of one of our files deleted by the winner, disjoint from ours: absorbed (see RowDeleteRebase).
    val absorbed: Set[String] = rowRebase.fold(Set.empty[String]) { rebase =>
      winner.collect {
        case r: RemoveFile if revectored.contains(abs(r.path)) && rebase.changes(abs(r.path)) &&
          rebase.absorb(version, op, abs(r.path), r, revectored(abs(r.path))) => abs(r.path)
      }.toSet
    }
    winner.foreach {
      case a: AddFile if revectored.contains(abs(a.path)) && !changesMetadata =>
      case r: RemoveFile if absorbed(abs(r.path)) =>
      case a: AddFile if changesMetadata => throw new MetadataChangedException(version, op,
        s"it added file ${a.path} while this transaction changes the table's definition")
      case a: AddFile if a.dataChange && isolation == IsolationLevel.Serializable =>
        reads.predicates.find(_.mayMatch(a.partitionValues, a.stats)).foreach { p =>
          throw new ConcurrentAppendException(version, op, s"it added file ${a.path} to $p, which this " +
            "transaction read")
        }
      case r: RemoveFile =>
        val path = abs(r.path)
        val how = if (r.dataChange) "removed" else "rewrote (dataChange=false)"
        if (removed(path)) throw new ConcurrentDeleteDeleteException(version, op, s"it also $how file ${r.path}")
        if (reads.files(path)) throw new ConcurrentDeleteReadException(version, op,
          s"it $how file ${r.path}, which this transaction read")
        // Rows deleted from what this transaction read (a rewrite with dataChange=false moved them, deleted none).
        if (r.dataChange) reads.predicates.find(_.mayMatch(r.partitionValues.getOrElse(Map.empty), r.stats))
          .foreach { p =>
            throw new ConcurrentDeleteReadException(version, op, s"it removed file ${r.path} from $p, which this " +
              "transaction read")
          }
      case _ =>
    }
  }
}

/** Thrown inside the commit loop: a winning commit already recorded this application's version. */
private[log] final class AlreadyCommitted(val version: Long, val appId: String, val appVersion: Long)
  extends RuntimeException(null, null, false, false)
