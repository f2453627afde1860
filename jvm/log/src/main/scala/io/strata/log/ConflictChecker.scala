package io.strata.log

/**
 * Decides whether the commits that won the race (or that landed between the version a write's input read and the
 * version it started from) logically conflict with a transaction. A transaction may commit on top of a winner only
 * when the result equals a serial order of the two, and each rule below says which order and why it holds. The one
 * question every rule answers: can a row this transaction's read matched have changed, disappeared or become
 * visible? (docs/concurrency.md has the matrix; ConflictMatrixSuite and DeletionVectorRaceSuite a test per refusal.)
 *
 * Per winning commit, in this order:
 *  1. `txn` of an application we commit for: at or past our version ours is already committed; otherwise conflict.
 *     1b. a `domainMetadata` of a domain we also write: conflict (PROTOCOL.md, "Domain Metadata").
 *  2. metadata, 3. protocol: conflict (rows were written or read under another definition).
 *  4. adds: conflict when we change metadata; otherwise an add that may bring rows matching our read set conflicts
 *     unless the serial order "us, then winner" explains it (see [[checksAdds]]); a new vector that only deletes
 *     rows brings none ([[onlyDeletes]]); a `dataChange = false` add only moves rows (its removes are rule 5).
 *  5. removes: of a file we remove or read, conflict at every level; a data-changing remove that may match our read
 *     set deleted rows we read: conflict. 6. One exception to 5 ([[RowDeleteRebase.absorb]]): a new vector on a file
 *     our DELETE / UPDATE also grows, deleting other rows and bringing none back.
 */
private[log] final class ConflictChecker(
    log: TableLog,
    staged: Seq[Action],
    isolation: IsolationLevel,
    reads: ReadSet,
    readVersion: Long,
    changesMetadata: Boolean,
    rowRebase: Option[RowDeleteRebase] = None) {
  import ConflictChecker.{AlreadyCommitted, Checked, Outcome}
  private val removed = staged.collect { case r: RemoveFile => abs(r.path) }.toSet
  private val ownAppTxns = staged.collect { case t: SetTransaction => t.appId -> t.version }.toMap
  private val ownDomains = staged.collect { case d: DomainMetadata => d.domain }.toSet

  private def abs(path: String): String = Snapshot.absolutePath(log.tablePath, path).toString

  /** A pure append that read nothing: only metadata, protocol or application-id changes can invalidate it. */
  val isBlindAppend: Boolean = reads.predicates.isEmpty && reads.files.isEmpty && removed.isEmpty &&
    !changesMetadata && staged.forall { case _: AddFile | _: SetTransaction => true; case _ => false }

  /**
   * Checks every commit from `from` through `to` (or through the last one present when `to` is None); throws the
   * first conflict. [[ConflictChecker.Checked]] with the last version checked when none conflicts, or
   * [[ConflictChecker.AlreadyCommitted]] at the first that records this transaction's application version.
   * `first`: commit `from`'s actions when the caller has read them already (a lost put reads the winner back).
   */
  def checkCommits(from: Long, to: Option[Long], first: Option[Seq[Action]] = None): Outcome = {
    var v = from
    var outcome: Outcome = Checked(from - 1)
    var more = to.forall(from <= _)
    while (more) {
      val actions = if (v == from && first.isDefined) first
        else try Some(log.readCommit(v)) catch { case _: MissingLogFileException if to.isEmpty && v > from => None }
      actions match {
        case Some(winner) =>
          outcome = check(v, winner).getOrElse(Checked(v))
          v += 1
          more = outcome.isInstanceOf[Checked] && to.forall(v <= _)
        case None => more = false
      }
    }
    outcome
  }

  /** Throws when `winner` conflicts; the outcome when it already records our application version. */
  private def check(version: Long, winner: Seq[Action]): Option[AlreadyCommitted] = {
    val op = winner.collectFirst { case c: CommitInfo => c.operation.getOrElse("unknown") }.getOrElse("unknown")
    // Rule 1. Application ids first: a retry whose earlier attempt (or a twin run) committed must be told so.
    val alreadyCommitted = winner.iterator.collect { case t: SetTransaction => t }.flatMap { t =>
      if (ownAppTxns.get(t.appId).exists(t.version >= _)) Some(AlreadyCommitted(version, t.appId, t.version))
      else if (ownAppTxns.contains(t.appId) || reads.appIds(t.appId)) throw ConcurrentTransactionException(version,
        op, s"application '${t.appId}' committed its version ${t.version} concurrently")
      else None
    }.nextOption()
    if (alreadyCommitted.isDefined) return alreadyCommitted
    // Rule 1b. PROTOCOL.md, "Domain Metadata": two overlapping transactions writing one domain conflict.
    winner.collectFirst { case d: DomainMetadata if ownDomains(d.domain) => d }.foreach { d =>
      throw ConcurrentDomainMetadataException(version, op, s"it also wrote metadata domain '${d.domain}'" +
        (if (d.removed) " (removed it)" else ""))
    }
    // Rules 2 and 3. Metadata before protocol: a commit that creates the table (or changes its schema and upgrades
    // the protocol with it) carries both, and the metadata change is what the losing transaction needs to hear about.
    if (winner.exists(_.isInstanceOf[Metadata])) throw MetadataChangedException(version, op,
      if (readVersion >= 0) "the table's metadata changed" else "the table was created concurrently")
    if (winner.exists(_.isInstanceOf[Protocol])) {
      throw ProtocolChangedException(version, op, "the table's protocol changed")
    }
    val winnerRemoves: Map[String, RemoveFile] = winner.collect { case r: RemoveFile => abs(r.path) -> r }.toMap
    // A file given a new deletion vector: the remove of its old entry and the add of its new one, same path.
    val revectored: Map[String, AddFile] =
      winner.collect { case a: AddFile if winnerRemoves.contains(abs(a.path)) => abs(a.path) -> a }.toMap
    // Rule 6: a new vector on one of our files, other rows, none brought back (see RowDeleteRebase.absorb).
    val absorbed: Set[String] = rowRebase.fold(Set.empty[String]) { rebase =>
      revectored.collect {
        case (path, a) if rebase.changes(path) && rebase.absorb(version, op, path, winnerRemoves(path), a) => path
      }.toSet
    }
    val addsChecked = checksAdds(winner)
    winner.foreach {
      // Rule 4. A definition change: rows added under the old schema, constraints or table cannot stay.
      case a: AddFile if changesMetadata => throw MetadataChangedException(version, op,
        s"it added file ${a.path} while this transaction changes the table's definition")
      // Rows moved by a rewrite (compaction): none new; the removes of the files they came from are rule 5.
      case a: AddFile if !a.dataChange =>
      // Absorbed (rule 6): its vector was found to contain the one we read, so it brings no row back.
      case a: AddFile if absorbed(abs(a.path)) =>
      // A grown vector brings no row back: the file's rows are a subset of those we could have read.
      case a: AddFile if revectored.contains(abs(a.path)) && onlyDeletes(winnerRemoves(abs(a.path)), a) =>
      // New rows (or rows a smaller vector brought back, as a RESTORE does): had we read after the winner, a row that
      // may match our read set would have been ours to read. File entries bound every row by partition values and
      // min/max statistics, so a file no predicate may match holds no such row and "winner, then us" reads the same.
      case a: AddFile if addsChecked => reads.predicates.find(_.mayMatch(a.partitionValues, a.stats)).foreach { p =>
        val what = if (revectored.contains(abs(a.path))) s"brought back deleted rows of file ${a.path} (its new " +
          "deletion vector lacks rows the old one had)" else s"added file ${a.path}"
        throw ConcurrentAppendException(version, op, s"$what to $p, which this transaction read")
      }
      case _: AddFile =>
      case r: RemoveFile if absorbed(abs(r.path)) =>
      // Rule 5. Removing a file again (or keeping a rewrite of a file that is gone) would resurrect or duplicate its
      // rows, whatever dataChange says: a compaction moved them elsewhere.
      case r: RemoveFile =>
        val path = abs(r.path)
        val how = if (r.dataChange) "removed" else "rewrote (dataChange=false)"
        if (removed(path)) throw ConcurrentDeleteDeleteException(version, op, s"it also $how file ${r.path}")
        if (reads.files(path)) throw ConcurrentDeleteReadException(version, op,
          s"it $how file ${r.path}, which this transaction read")
        // Rows deleted from what this transaction read: "winner, then us" would not have read them, "us, then
        // winner" would have had the winner delete rows we may have changed. A rewrite (dataChange=false) of a file
        // we did not read moved rows we did not read.
        if (r.dataChange) reads.predicates.find(_.mayMatch(r.partitionValues.getOrElse(Map.empty), r.stats))
          .foreach { p =>
            throw ConcurrentDeleteReadException(version, op, s"it removed file ${r.path} from $p, which this " +
              "transaction read")
          }
      case _ =>
    }
    None
  }

  /**
   * Whether the winner's new rows are judged against our read set. Under serializable isolation always. Under
   * snapshot isolation not for a blind append: it read nothing, so the serial order "us, then the append" gives the
   * same table (our removes touch none of its new files). Any other winner (an UPDATE's rewritten rows, a MERGE, a
   * RESTORE's returning rows) read the table, possibly rows we changed, so "us, then winner" need not hold: its new
   * rows are checked as under serializable isolation (delta-spark's WriteSerializable does the same).
   */
  private def checksAdds(winner: Seq[Action]): Boolean = isolation == IsolationLevel.Serializable || {
    val declared = winner.collectFirst { case c: CommitInfo => Option(c.json.get("isBlindAppend")) }.flatten
      .filter(_.isBoolean).map(_.asBoolean)
    // Engines that do not say: a commit that removed nothing is taken for a blind append.
    !declared.getOrElse(!winner.exists(_.isInstanceOf[RemoveFile]))
  }

  /** Whether `added` (same path as `removed`) only deletes more rows: its vector contains the removed entry's. */
  private def onlyDeletes(removed: RemoveFile, added: AddFile): Boolean = (removed.deletionVector, added.deletionVector) match {
    case (None, Some(_)) => true
    case (Some(old), Some(now)) => now.cardinality >= old.cardinality && (old.uniqueId == now.uniqueId ||
      DeletionVectors.read(now, log.tablePath, log.conf).containsAll(DeletionVectors.read(old, log.tablePath, log.conf)))
    case _ => false
  }
}

private[log] object ConflictChecker {
  /** What checking the commits found, when none conflicts. */
  sealed trait Outcome

  /** No conflict; `lastVersion`: the last commit checked (one before the first asked for when there was none). */
  final case class Checked(lastVersion: Long) extends Outcome

  /** Commit `version` already records `appId`'s version `appVersion` (ours or a later one): nothing to commit. */
  final case class AlreadyCommitted(version: Long, appId: String, appVersion: Long) extends Outcome
}
