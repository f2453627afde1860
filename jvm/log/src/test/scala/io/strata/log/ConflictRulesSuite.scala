package io.strata.log

import org.scalatest.funsuite.AnyFunSuite

/**
 * The rules that let a transaction commit on top of a winner, each shown refusing where its argument does not hold
 * (ConflictChecker states the arguments): a new deletion vector that brings rows back is new rows, and under
 * snapshot isolation only a blind append's rows are let through (told by commitInfo, or, from an engine that does
 * not say, by the commit removing nothing). Winners are written by hand, as another engine would write them.
 */
class ConflictRulesSuite extends AnyFunSuite with LogTestSupport {
  private val now = 1L

  private def inP(p: String, name: String) = add(s"p=$p/$name.parquet", Map("p" -> Some(p)))

  /** A table with file a in p=1 carrying the inline vector `rows`; T reads p=1 and appends to p=2. */
  private def setUp(level: IsolationLevel, rows: Seq[Long]): (java.nio.file.Path, TableLog, Transaction, Seq[Action]) = {
    val table = tempDir("rules")
    val a = inP("1", "a").copy(deletionVector = Some(vector(table, rows)))
    val log = createTable(table, metadata(Seq("p"), Map(IsolationLevel.Property -> level.name)), Seq(a))
    val txn = log.startTransaction()
    txn.readWhere(partitionIs("p", "1"))
    (table, log, txn, TableOperation.Append(Seq(inP("2", "t"))).stage(txn, now))
  }

  private def vector(table: java.nio.file.Path, rows: Seq[Long]): DeletionVectorDescriptor =
    DeletionVectorStore.write(hpath(table), newConf(), Seq(DeletedRows.of(rows)), maxInlineBytes = 1 << 10).head

  /** The winner re-adds file a with the vector `rows` (its remove says dataChange=false: only the add can refuse). */
  private def revector(table: java.nio.file.Path, log: TableLog, rows: Seq[Long]): Unit = {
    val a = log.snapshot().files.head
    writeCommit(table, 1, Seq(a.remove(now, dataChange = false),
      a.copy(deletionVector = Some(vector(table, rows)), dataChange = true)))
  }

  test("a new vector lacking rows the old one had brings rows back: judged as new rows, a typed conflict") {
    val (table, log, txn, staged) = setUp(IsolationLevel.Serializable, Seq(1L, 2L))
    revector(table, log, Seq(1L))
    val e = intercept[ConcurrentAppendException](txn.commit(staged, Operation("WRITE")))
    assert(e.getMessage.contains("brought back deleted rows of file p=1/a.parquet") && e.winningVersion == 1L)
    assert(latestVersion(table) == 1L)
  }

  test("a new vector containing the old one brings no row: the transaction commits on top") {
    val (table, log, txn, staged) = setUp(IsolationLevel.Serializable, Seq(1L, 2L))
    revector(table, log, Seq(1L, 2L, 3L))
    assert(txn.commit(staged, Operation("WRITE")).version == 2L)
  }

  test("snapshot isolation: rows from a winner that is no blind append conflict; a blind append's do not") {
    for ((blind, outcome) <- Seq(Some(false) -> "conflict", Some(true) -> "commits", None -> "commits")) {
      val (table, _, txn, staged) = setUp(IsolationLevel.Snapshot, Nil)
      val info = blind.map { b =>
        val o = ActionCodec.mapper.createObjectNode().put("operation", "WRITE")
        o.put("isBlindAppend", b)
        CommitInfo(o)
      }
      writeCommit(table, 1, info.toSeq :+ inP("1", "w"))
      val result = scala.util.Try(txn.commit(staged, Operation("WRITE")))
      if (outcome == "conflict") assert(result.failed.get.isInstanceOf[ConcurrentAppendException], blind)
      else assert(result.get.version == 2L, blind)
    }
  }

  test("snapshot isolation, a winner that does not say whether it is a blind append: one that removed files is not") {
    val (table, log, txn, staged) = setUp(IsolationLevel.Snapshot, Nil)
    val elsewhere = inP("3", "c")
    assert(log.startTransaction().commit(Seq(elsewhere), Operation("WRITE")).version == 1L) // blind: lets T through
    // No commitInfo: rows moved from p=3 into p=1 (an UPDATE-like rewrite, which read the table).
    writeCommit(table, 2, Seq(elsewhere.remove(now), inP("1", "w")))
    val e = intercept[ConcurrentAppendException](txn.commit(staged, Operation("WRITE")))
    assert(e.winningVersion == 2L && latestVersion(table) == 2L)
  }

  test("checking winners is a value: the last version checked, or the commit that already holds our app version") {
    val table = tempDir("rules-outcome")
    val log = createTable(table)
    val ours = Seq(SetTransaction("app", 5L, None), add("ours.parquet"))
    def checker = new ConflictChecker(log, ours, IsolationLevel.Serializable, ReadSet(), 0L, changesMetadata = false)
    append(log, add("w1.parquet"))
    assert(checker.checkCommits(1L, None) == ConflictChecker.Checked(1L))
    assert(checker.checkCommits(2L, Some(1L)) == ConflictChecker.Checked(1L), "none to check")
    log.startTransaction().commit(Seq(SetTransaction("app", 6L, None)), Operation("WRITE"))
    append(log, add("w3.parquet"))
    assert(checker.checkCommits(1L, None) == ConflictChecker.AlreadyCommitted(2L, "app", 6L), "stops at version 2")
    assert(checker.checkCommits(1L, Some(1L)) == ConflictChecker.Checked(1L))
    // Through the transaction: the retry reports the winner's version as already committed, and writes nothing.
    val txn = log.startTransaction(Some(log.snapshotAt(0L)))
    val r = txn.commit(ours, Operation("WRITE"))
    assert(r.alreadyCommitted && r.version == 2L && latestVersion(table) == 3L)
  }
}
