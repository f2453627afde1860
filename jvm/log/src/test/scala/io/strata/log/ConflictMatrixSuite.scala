package io.strata.log

import org.scalatest.funsuite.AnyFunSuite

/**
 * The conflict matrix of docs/concurrency.md, one test per cell: a transaction T reads version 0 of a table
 * partitioned by p (file a in p=1, b in p=2), a winner W commits version 1, then T commits. Each cell states the
 * outcome: T commits (as version 2, the table then equals W followed by T), T's application version is found
 * already committed (nothing written), or a typed conflict (nothing written, W's state intact).
 */
class ConflictMatrixSuite extends AnyFunSuite with LogTestSupport {
  private def inP(p: String, name: String, dataChange: Boolean = true) =
    add(s"p=$p/$name.parquet", Map("p" -> Some(p))).copy(dataChange = dataChange)

  private val now = 1L
  private val pIs1 = partitionIs("p", "1")

  /** An operation: declares its reads on the transaction and returns its actions. */
  private final case class Op(name: String, run: Transaction => Seq[Action])

  private def files(t: Transaction) = t.readSnapshot.get.files
  private def file(t: Transaction, n: String) = files(t).find(_.path.endsWith(s"/$n.parquet")).get
  private def newConf(t: Transaction) = t.metadata.get.copy(configuration = t.metadata.get.configuration + ("x" -> "y"))

  private def staged(op: TableOperation): Transaction => Seq[Action] = t => op.stage(t, now)
  import TableOperation._

  // The log operations the write paths use (TableOperation), plus the two read/idempotence declarations.
  private val ops: Seq[Op] = Seq(
    Op("blind append to p=1", staged(Append(Seq(inP("1", "t"))))),
    Op("append read from p=1 (read-then-write)", { t => t.readWhere(pIs1); Append(Seq(inP("2", "t"))).stage(t, now) }),
    Op("overwrite p=1 (replaceWhere / dynamic)", t => OverwriteByFilter(pIs1, Seq(file(t, "a")), Seq(inP("1", "t"))).stage(t, now)),
    Op("overwrite whole table", t => OverwriteByFilter(FilePredicate.WholeTable, files(t), Seq(inP("1", "t"))).stage(t, now)),
    Op("metadata change (SET TBLPROPERTIES)", t => ChangeMetadata(newConf(t), Nil).stage(t, now)),
    Op("replace table (CREATE OR REPLACE, overwriteSchema)", t =>
      ReplaceTable(newConf(t), files(t), Seq(inP("1", "t")), createOnly = false).stage(t, now)),
    Op("compaction of p=1 (dataChange=false)", t => RewriteFiles(Seq(file(t, "a")), Seq(inP("1", "t"))).stage(t, now)),
    Op("idempotent append, app x version 1", { t =>
      t.applicationVersion("x"); SetTransaction("x", 1L, Some(now)) +: Append(Seq(inP("1", "t"))).stage(t, now)
    }),
    Op("idempotent append, app x version 2", { t =>
      t.applicationVersion("x"); SetTransaction("x", 2L, Some(now)) +: Append(Seq(inP("1", "t"))).stage(t, now)
    }))

  private val winners: Seq[Op] = Seq(
    Op("append to p=2", staged(Append(Seq(inP("2", "w"))))),
    Op("append to p=1", staged(Append(Seq(inP("1", "w"))))),
    Op("delete of a (p=1)", t => OverwriteByFilter(pIs1, Seq(file(t, "a")), Nil).stage(t, now)),
    Op("compaction of a (p=1)", t => RewriteFiles(Seq(file(t, "a")), Seq(inP("1", "w"))).stage(t, now)),
    Op("metadata change", t => ChangeMetadata(newConf(t), Nil).stage(t, now)),
    Op("idempotent append, app x version 1", _ => Seq(SetTransaction("x", 1L, Some(now)), inP("2", "w"))),
    // Not a blind append: its rows came from a read of the table, so "T, then W" need not be a serial order.
    Op("append to p=1 read from p=2", { t => t.readWhere(partitionIs("p", "2")); Append(Seq(inP("1", "w"))).stage(t, now) }))

  private val Commits = "commits"
  private val Skipped = "already committed"
  // Rows: T's operations; columns: winners in the order above. Snapshot isolation differs only where noted.
  private val serializable: Map[String, Seq[String]] = Map(
    "blind append to p=1" -> Seq(Commits, Commits, Commits, Commits, "MetadataChangedException", Commits, Commits),
    "append read from p=1 (read-then-write)" -> Seq(Commits, "ConcurrentAppendException",
      "ConcurrentDeleteReadException", Commits, "MetadataChangedException", Commits, "ConcurrentAppendException"),
    "overwrite p=1 (replaceWhere / dynamic)" -> Seq(Commits, "ConcurrentAppendException",
      "ConcurrentDeleteDeleteException", "ConcurrentDeleteDeleteException", "MetadataChangedException", Commits, "ConcurrentAppendException"),
    "overwrite whole table" -> Seq("ConcurrentAppendException", "ConcurrentAppendException",
      "ConcurrentDeleteDeleteException", "ConcurrentDeleteDeleteException", "MetadataChangedException",
      "ConcurrentAppendException", "ConcurrentAppendException"),
    "metadata change (SET TBLPROPERTIES)" -> Seq("MetadataChangedException", "MetadataChangedException", Commits,
      "MetadataChangedException", "MetadataChangedException", "MetadataChangedException", "MetadataChangedException"),
    "replace table (CREATE OR REPLACE, overwriteSchema)" -> Seq("MetadataChangedException",
      "MetadataChangedException", "ConcurrentDeleteDeleteException", "ConcurrentDeleteDeleteException",
      "MetadataChangedException", "MetadataChangedException", "MetadataChangedException"),
    "compaction of p=1 (dataChange=false)" -> Seq(Commits, Commits, "ConcurrentDeleteDeleteException",
      "ConcurrentDeleteDeleteException", "MetadataChangedException", Commits, Commits),
    "idempotent append, app x version 1" -> Seq(Commits, Commits, Commits, Commits, "MetadataChangedException",
      Skipped, Commits),
    "idempotent append, app x version 2" -> Seq(Commits, Commits, Commits, Commits, "MetadataChangedException",
      "ConcurrentTransactionException", Commits))
  private val snapshotDiffers: Map[(String, String), String] = Map(
    ("append read from p=1 (read-then-write)", "append to p=1") -> Commits,
    ("overwrite p=1 (replaceWhere / dynamic)", "append to p=1") -> Commits,
    ("overwrite whole table", "append to p=2") -> Commits,
    ("overwrite whole table", "append to p=1") -> Commits,
    ("overwrite whole table", "idempotent append, app x version 1") -> Commits)

  private def livePaths(log: TableLog) = log.snapshot().files.map(_.path).toSet

  for (level <- Seq(IsolationLevel.Serializable, IsolationLevel.Snapshot); t <- ops; (w, col) <- winners.zipWithIndex) {
    val expected = if (level == IsolationLevel.Snapshot) snapshotDiffers.getOrElse((t.name, w.name), serializable(t.name)(col))
                   else serializable(t.name)(col)
    test(s"[${level.name}] T: ${t.name} | W: ${w.name} -> $expected") {
      val table = tempDir("matrix")
      val log = createTable(table, metadata(Seq("p"), Map(IsolationLevel.Property -> level.name)),
        Seq(inP("1", "a"), inP("2", "b")))
      val txn = log.startTransaction()
      val staged = t.run(txn)
      val winner = log.startTransaction()
      assert(winner.commit(w.run(winner), Operation(w.name)).version == 1L)
      val afterWinner = livePaths(log)
      val attempt = scala.util.Try(txn.commit(staged, Operation(t.name)))
      expected match {
        case Commits =>
          val r = attempt.get
          assert(r.version == 2L && !r.alreadyCommitted)
          // Serial order W then T: T's removes and adds applied to W's result.
          val removed = staged.collect { case rm: RemoveFile => rm.path }.toSet
          val added = staged.collect { case a: AddFile => a.path }.toSet
          assert(livePaths(log) == (afterWinner -- removed) ++ added)
        case Skipped =>
          val r = attempt.get
          assert(r.alreadyCommitted && r.version == 1L)
          assert(latestVersion(table) == 1L && livePaths(log) == afterWinner)
        case conflict =>
          val e = attempt.failed.get
          assert(e.getClass.getSimpleName == conflict, s"expected $conflict, got $e")
          assert(e.asInstanceOf[ConcurrentModificationException].winningVersion == 1L)
          assert(latestVersion(table) == 1L && livePaths(log) == afterWinner, "nothing committed, nothing lost")
      }
    }
  }

  test("CREATE: a table created while the creator ran is a typed conflict, and CREATE on an existing table refuses") {
    val table = tempDir("matrix-create")
    val log = TableLog.forPath(hpath(table), newConf())
    val t = log.startTransaction()
    t.requireNoTable()
    t.updateMetadata(metadata())
    createTable(table)
    val e = intercept[MetadataChangedException](t.commit(Seq(add("mine.parquet")), Operation("CREATE TABLE AS SELECT")))
    assert(e.getMessage.contains("created concurrently"))
    assert(latestVersion(table) == 0L && log.snapshot().files.isEmpty)
    val e2 = intercept[TableAlreadyExistsException](log.startTransaction().requireNoTable())
    assert(e2.getMessage.contains("already exists (version 0)"))
  }

  test("commits between an input's read and the transaction's read are validated like winners") {
    val table = tempDir("matrix-input")
    val log = createTable(table, metadata(Seq("p")), Seq(inP("1", "a")))
    append(log, inP("1", "late")) // version 1: appended after the input read version 0
    val t = log.startTransaction()
    assert(t.readVersion == 1L)
    t.readWhere(pIs1)
    t.readInputAt(0L)
    val e = intercept[ConcurrentAppendException](t.commit(Seq(inP("2", "t")), Operation("WRITE")))
    assert(e.winningVersion == 1L)
    // Nothing in between: the same write commits.
    val t2 = log.startTransaction()
    t2.readWhere(pIs1)
    t2.readInputAt(1L)
    assert(t2.commit(Seq(inP("2", "t2")), Operation("WRITE")).version == 2L)
  }

  test("one txnId per transaction; an ambiguous put that landed is our commit, one that did not is tried again") {
    val table = tempDir("matrix-ambiguous")
    val conf = newConf()
    conf.set(LogStore.implKey("file"), classOf[LandsThenFailsLogStore].getName)
    val log = createTable(table, conf = newConf())
    val flaky = TableLog.forPath(hpath(table), conf)
    val t = flaky.startTransaction()
    val r = t.commit(Seq(add("x.parquet")), Operation("WRITE"))
    assert(r.version == 1L && r.attempts == 1)
    assert(r.commitInfo.json.get("txnId").asText == t.txnId)
    assert(latestVersion(table) == 1L && log.snapshot().files.map(_.path) == Seq("x.parquet"))

    // A put that failed before landing: the same version is tried again, once.
    val conf2 = newConf()
    conf2.set(LogStore.implKey("file"), classOf[FailsOnceLogStore].getName)
    FailsOnceLogStore.failed.set(false)
    val r2 = TableLog.forPath(hpath(table), conf2).startTransaction().commit(Seq(add("y.parquet")), Operation("WRITE"))
    assert(r2.version == 2L && r2.attempts == 2 && latestVersion(table) == 2L)
    assert(actionsOf(deltaFile(table, 2)).collect { case a: AddFile => a.path } == Seq("y.parquet"))
  }
}

/** A log store whose first put fails with an I/O error before anything lands (then it works). */
final class FailsOnceLogStore(underlying: org.apache.hadoop.fs.FileSystem) extends LogStore {
  private val local = new LocalLogStore(underlying)
  override def fs: org.apache.hadoop.fs.FileSystem = local.fs
  override def putIfAbsent(path: org.apache.hadoop.fs.Path, lines: Seq[String]): Unit =
    if (FailsOnceLogStore.failed.compareAndSet(false, true)) throw new java.io.IOException("connection refused")
    else local.putIfAbsent(path, lines)
}
object FailsOnceLogStore { val failed = new java.util.concurrent.atomic.AtomicBoolean(false) }

/** A log store whose put lands and then reports an I/O error (a lost response): the commit's outcome is ambiguous. */
final class LandsThenFailsLogStore(underlying: org.apache.hadoop.fs.FileSystem) extends LogStore {
  private val local = new LocalLogStore(underlying)
  override def fs: org.apache.hadoop.fs.FileSystem = local.fs
  override def putIfAbsent(path: org.apache.hadoop.fs.Path, lines: Seq[String]): Unit = {
    local.putIfAbsent(path, lines)
    throw new java.io.IOException("connection reset after the request was sent")
  }
}
