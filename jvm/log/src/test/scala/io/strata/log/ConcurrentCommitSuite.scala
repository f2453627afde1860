package io.strata.log

import java.nio.file.{Files, Path => JPath}
import java.util.concurrent.ConcurrentLinkedQueue

import io.strata.testkit.FaultInjectingLogStore
import org.scalatest.funsuite.AnyFunSuite

import scala.jdk.CollectionConverters._

class ConcurrentCommitSuite extends AnyFunSuite with LogTestSupport {

  private def tempFilesIn(table: JPath): Seq[String] = logFileNames(table).filter(_.endsWith(".tmp"))

  /** Every commit file 1..n holds exactly one add, and it is the one its writer reported for that version. */
  private def checkOneAddPerCommit(table: JPath, byVersion: Map[Long, String], n: Int): Unit = {
    assert(commitVersions(table) == (0L to n.toLong), "versions 0..n present, no gaps")
    var adds = 0
    (1L to n.toLong).foreach { v =>
      val as = actionsOf(deltaFile(table, v))
      val fileAdds = as.collect { case a: AddFile => a.path }
      assert(fileAdds == Seq(byVersion(v)), s"commit $v holds $fileAdds, expected ${byVersion(v)}")
      assert(!as.exists(a => a.isInstanceOf[Metadata] || a.isInstanceOf[Protocol] || a.isInstanceOf[RemoveFile]))
      assert(as.count(_.isInstanceOf[CommitInfo]) == 1)
      adds += fileAdds.size
    }
    assert(adds == n, "the adds across all commit files == the number of commits: no commit was overwritten")
  }

  test("threads racing blind appends: every commit lands exactly once, checkpoints on the way") {
    val threads = 8
    val perThread = 25
    val total = threads * perThread
    val table = tempDir("race-threads")
    createTable(table)
    val results = new ConcurrentLinkedQueue[(Long, String, Int)]()
    val t0 = System.nanoTime()
    val race = ThreadRace(threads) { t =>
      val log = TableLog.forPath(hpath(table), newConf())
      () => (1 to perThread).foreach { i =>
        val path = s"t$t-$i.parquet"
        val r = log.startTransaction().commit(Seq(add(path)), Operation("WRITE"))
        results.add((r.version, path, r.attempts))
      }
    }
    assert(race.finished, "writers did not finish in 120 s")
    info(f"$total commits by $threads threads in ${(System.nanoTime() - t0) / 1e9}%.1f s, " +
      s"max attempts ${results.asScala.map(_._3).max}")
    assert(race.errors.isEmpty, s"writer failures: ${race.errors.map(_.toString).mkString("; ")}")

    val rs = results.asScala.toSeq
    assert(rs.size == total)
    assert(rs.map(_._1).sorted == (1L to total.toLong), "versions returned are distinct and cover 1..total")
    assert(rs.map(_._2).distinct.size == total)
    assert(rs.exists(_._3 > 1), "the writers really raced (some commit needed a retry)")
    checkOneAddPerCommit(table, rs.map(r => r._1 -> r._2).toMap, total)
    assert(tempFilesIn(table).isEmpty, s"temporary files left: ${tempFilesIn(table)}")

    // checkpoints were written by the committers of versions 10, 20, ...
    val checkpoints = logFileNames(table).flatMap(FileNames.classify).collect {
      case FileNames.CheckpointPart(v, _, _) => v
    }.sorted
    assert(checkpoints == (10L to total.toLong by 10), s"checkpoints: $checkpoints")

    val fresh = TableLog.forPath(hpath(table), newConf()).snapshot()
    assert(fresh.version == total)
    assert(fresh.segment.checkpointVersion.contains(total.toLong))
    assert(fresh.segment.commitFiles.isEmpty)
    assert(fresh.files.map(_.path).toSet == rs.map(_._2).toSet)
    val before = TableLog.forPath(hpath(table), newConf()).snapshotAt(total - 5L)
    assert(before.segment.checkpointVersion.contains(total - 10L))
    assert(before.files.size == total - 5)
  }

  private def runWriters(table: JPath, processes: Int, perProcess: Int, mode: String): (Seq[(Long, String, Int)], Seq[String]) =
    ConcurrentAppender.runWriters(table.toString, tempDir("race-barrier"), processes, perProcess, mode)

  test("4 JVM processes x 25 blind appends: no version lost, overwritten or skipped") {
    val (processes, perProcess) = (4, 25)
    val total = processes * perProcess
    val table = tempDir("race-jvms")
    createTable(table)
    val (committed, conflicts) = runWriters(table, processes, perProcess, "append")
    info(s"$total commits by $processes JVMs, max attempts ${committed.map(_._3).max}")
    assert(conflicts.isEmpty, "blind appends never conflict")
    assert(committed.size == total)
    assert(committed.map(_._1).sorted == (1L to total.toLong), "each process got distinct versions covering 1..N")
    checkOneAddPerCommit(table, committed.map(c => c._1 -> c._2).toMap, total)
    assert(tempFilesIn(table).isEmpty, s"temporary files left: ${tempFilesIn(table)}")

    val snap = TableLog.forPath(hpath(table), newConf()).snapshot()
    assert(snap.version == total)
    val expected = for (w <- 1 to processes; i <- 1 to perProcess) yield s"w$w-$i.parquet"
    assert(snap.files.map(_.path).sorted == expected.sorted)
  }

  test("4 JVM processes x 10 overwrites of their own partitions: all commit, each partition holds its last file") {
    val (processes, perProcess) = (4, 10)
    val table = tempDir("race-jvms-overwrite")
    createTable(table, metadata(partitionColumns = Seq("p")))
    val (committed, conflicts) = runWriters(table, processes, perProcess, "overwrite")
    info(s"${committed.size} overwrites by $processes JVMs, max attempts ${committed.map(_._3).max}, " +
      s"conflicts: ${conflicts.size}")
    assert(conflicts.isEmpty, s"overwrites of different partitions do not conflict: $conflicts")
    assert(committed.size == processes * perProcess)
    assert(committed.map(_._1).sorted == (1L to (processes * perProcess).toLong), "versions contiguous")
    val snap = TableLog.forPath(hpath(table), newConf()).snapshot()
    assert(snap.files.map(_.path).sorted == (1 to processes).map(w => s"p=$w/w$w-$perProcess.parquet"))
    // Every overwrite removed exactly the file its writer's previous overwrite added.
    (1L to snap.version).foreach { v =>
      val actions = actionsOf(deltaFile(table, v))
      val added = actions.collect { case a: AddFile => a.path }
      val removed = actions.collect { case r: RemoveFile => r.path }
      assert(added.size == 1)
      val Array(_, name) = added.head.split("/"); val Array(w, i) = name.stripPrefix("w").stripSuffix(".parquet").split("-")
      assert(removed == (if (i.toInt == 1) Nil else Seq(s"p=$w/w$w-${i.toInt - 1}.parquet")), s"version $v")
    }
  }

  // ---- logical conflicts ---------------------------------------------------------------------------------------

  /** Runs `f`, which must fail, and checks it wrote nothing into `_delta_log`. */
  private def failsWritingNothing[T <: Throwable](table: JPath)(f: => Any)(implicit ct: scala.reflect.ClassTag[T]): T = {
    val before = contentDigests(logDir(table))
    val e = intercept[T](f)
    assert(contentDigests(logDir(table)) == before, "a failed commit must not write anything")
    e
  }

  test("an overwrite loses to a concurrent append: ConcurrentAppendException names the winner") {
    val table = tempDir()
    val log = createTable(table, files = Seq(add("a.parquet"), add("b.parquet")))
    val overwrite = log.startTransaction()
    val snap = overwrite.readSnapshot.get
    overwrite.readWhere(FilePredicate.WholeTable)
    overwrite.readFiles(snap.files)
    val now = System.currentTimeMillis()
    val staged = snap.files.map(_.remove(now)) :+ add("c.parquet")

    val winner = log.startTransaction().commit(Seq(add("w.parquet")), Operation("STREAMING UPDATE"))
    assert(winner.version == 1L)
    val e = failsWritingNothing[ConcurrentAppendException](table) {
      overwrite.commit(staged, Operation("WRITE", Map("mode" -> "\"Overwrite\"")))
    }
    assert(e.winningVersion == 1L)
    assert(e.winningOperation == "STREAMING UPDATE")
    assert(e.getMessage.contains("w.parquet") && e.getMessage.contains("version 1"))
    assert(latestVersion(table) == 1L)
    assert(log.snapshot().files.map(_.path).toSet == Set("a.parquet", "b.parquet", "w.parquet"))
  }

  test("snapshot isolation (table property): an overwrite keeps rows appended concurrently instead of failing") {
    val table = tempDir()
    val log = createTable(table, metadata(configuration = Map(IsolationLevel.Property -> "snapshot")),
      files = Seq(add("a.parquet"), add("b.parquet")))
    val overwrite = log.startTransaction()
    val snap = overwrite.readSnapshot.get
    overwrite.readWhere(FilePredicate.WholeTable)
    overwrite.readFiles(snap.files)
    append(log, add("w.parquet"))
    val r = overwrite.commit(snap.files.map(_.remove(1L)) :+ add("c.parquet"), Operation("WRITE"))
    assert(r.version == 2L && r.attempts == 2)
    assert(r.commitInfo.json.get("isolationLevel").asText == "SnapshotIsolation")
    assert(log.snapshot().files.map(_.path).toSet == Set("w.parquet", "c.parquet"))

    // Removals still conflict under snapshot isolation.
    val t1 = log.startTransaction()
    val t2 = log.startTransaction()
    val c = t1.readSnapshot.get.files.find(_.path == "c.parquet").get
    t1.readFiles(Seq(c)); t2.readFiles(Seq(c))
    t1.commit(Seq(c.remove(2L)), Operation("DELETE"))
    failsWritingNothing[ConcurrentDeleteDeleteException](table)(t2.commit(Seq(c.remove(2L)), Operation("DELETE")))
  }

  test("an unknown isolation level is refused naming the property and the allowed values") {
    val table = tempDir()
    val e = intercept[InvalidTableOperationException](
      createTable(table, metadata(configuration = Map(IsolationLevel.Property -> "read-committed"))))
    assert(e.getMessage.contains("strata.isolationLevel has invalid value 'read-committed'") &&
      e.getMessage.contains("'serializable', 'snapshot'"))
    assert(!Files.exists(table.resolve("_delta_log").resolve("00000000000000000000.json")))
  }

  test("an overwrite of one partition does not conflict with an append to another") {
    val table = tempDir()
    val log = createTable(table, metadata(partitionColumns = Seq("p")),
      files = Seq(add("p=1/a.parquet", Map("p" -> Some("1"))), add("p=2/b.parquet", Map("p" -> Some("2")))))
    val overwrite = log.startTransaction()
    val snap = overwrite.readSnapshot.get
    val p1 = snap.files.filter(_.partitionValues("p").contains("1"))
    overwrite.readWhere(partitionIs("p", "1"))
    overwrite.readFiles(p1)
    append(log, add("p=2/c.parquet", Map("p" -> Some("2"))))
    val r = overwrite.commit(p1.map(_.remove(1L)) :+ add("p=1/d.parquet", Map("p" -> Some("1"))), Operation("WRITE"))
    assert(r.version == 2L && r.attempts == 2)
    append(log, add("p=1/e.parquet", Map("p" -> Some("1"))))
    assert(log.snapshot().files.map(_.path).toSet == Set("p=2/b.parquet", "p=2/c.parquet", "p=1/d.parquet", "p=1/e.parquet"))
  }

  /** A table of files a and b, two transactions that read it, and file a. */
  private def twoReadersOfFileA(): (JPath, TableLog, Transaction, Transaction, AddFile) = {
    val table = tempDir()
    val log = createTable(table, files = Seq(add("a.parquet"), add("b.parquet")))
    val (t1, t2) = (log.startTransaction(), log.startTransaction())
    (table, log, t1, t2, t1.readSnapshot.get.files.find(_.path == "a.parquet").get)
  }

  test("two concurrent removals of the same file: ConcurrentDeleteDeleteException") {
    val (table, log, t1, t2, a) = twoReadersOfFileA()
    t1.readFiles(Seq(a))
    t2.readFiles(Seq(a))
    assert(t1.commit(Seq(a.remove(System.currentTimeMillis())), Operation("DELETE")).version == 1L)
    val e = failsWritingNothing[ConcurrentDeleteDeleteException](table) {
      t2.commit(Seq(a.remove(System.currentTimeMillis())), Operation("OPTIMIZE"))
    }
    assert(e.winningVersion == 1L && e.winningOperation == "DELETE")
    assert(e.getMessage.contains("a.parquet"))
    assert(latestVersion(table) == 1L)
    assert(log.snapshot().files.map(_.path) == Seq("b.parquet"))
  }

  test("a rewrite of a file removed concurrently: ConcurrentDeleteReadException") {
    val (table, _, t1, t2, a) = twoReadersOfFileA()
    t2.readFiles(Seq(a))
    t1.commit(Seq(a.remove(System.currentTimeMillis())), Operation("DELETE"))
    val e = failsWritingNothing[ConcurrentDeleteReadException](table) {
      // t2 read a.parquet and writes a new file from it without removing it (e.g. a copy)
      t2.commit(Seq(add("copy-of-a.parquet")), Operation("COPY"))
    }
    assert(e.winningVersion == 1L && e.winningOperation == "DELETE")
  }

  test("two concurrent creators of a new table: MetadataChangedException") {
    val table = tempDir()
    val log = TableLog.forPath(hpath(table), newConf())
    val t1 = log.startTransaction()
    val t2 = log.startTransaction()
    assert(t1.readVersion == -1L && t2.readVersion == -1L)
    t1.updateMetadata(metadata())
    t2.updateMetadata(metadata(partitionColumns = Seq("p")))
    assert(t1.commit(Seq(add("a.parquet")), Operation("CREATE TABLE")).version == 0L)
    val e = failsWritingNothing[MetadataChangedException](table) {
      t2.commit(Seq(add("p=1/b.parquet", Map("p" -> Some("1")))), Operation("CREATE TABLE AS SELECT"))
    }
    assert(e.winningVersion == 0L && e.winningOperation == "CREATE TABLE")
    assert(latestVersion(table) == 0L)
    val snap = log.snapshot()
    assert(snap.partitionColumns.isEmpty)
    assert(snap.files.map(_.path) == Seq("a.parquet"))
  }

  test("two blind appends from the same read version both commit, as N+1 and N+2") {
    val table = tempDir()
    val log = createTable(table, files = Seq(add("a.parquet")))
    append(log, add("b.parquet"))
    val t1 = log.startTransaction()
    val t2 = log.startTransaction()
    assert(t1.readVersion == 1L && t2.readVersion == 1L)
    val r2 = t2.commit(Seq(add("c.parquet")), Operation("WRITE"))
    val r1 = t1.commit(Seq(add("d.parquet")), Operation("WRITE"))
    assert(r2.version == 2L && r2.attempts == 1)
    assert(r1.version == 3L && r1.attempts == 2)
    assert(actionsOf(deltaFile(table, 2)).collect { case a: AddFile => a.path } == Seq("c.parquet"))
    assert(actionsOf(deltaFile(table, 3)).collect { case a: AddFile => a.path } == Seq("d.parquet"))
    assert(r1.commitInfo.json.get("isBlindAppend").asBoolean)
    assert(r1.commitInfo.json.get("readVersion").asLong == 1L)
    assert(log.snapshot().files.map(_.path).toSet == Set("a.parquet", "b.parquet", "c.parquet", "d.parquet"))
  }

  test("app x: a concurrent commit of x's version makes ours a no-op; an older one of x is a ConcurrentTransactionException") {
    val table = tempDir()
    val log = createTable(table)
    val t1 = log.startTransaction()
    assert(t1.applicationVersion("x").isEmpty)
    val other = log.startTransaction()
    assert(other.applicationVersion("y").isEmpty)
    val t2 = log.startTransaction()
    t2.applicationVersion("x")
    val now = System.currentTimeMillis()
    assert(t2.commit(Seq(SetTransaction("x", 1L, Some(now)), add("a.parquet")), Operation("STREAMING UPDATE")).version == 1L)
    val t3 = log.startTransaction()
    t3.applicationVersion("x")
    val skipped = t1.commit(Seq(SetTransaction("x", 1L, Some(now)), add("b.parquet")), Operation("WRITE"))
    assert(skipped.alreadyCommitted && skipped.version == 1L && latestVersion(table) == 1L)
    // t3 and t4 both read version 1 (x at 1); t3 commits x=2 first, so t4's x=3 raced another run of x
    val t4 = log.startTransaction()
    t4.applicationVersion("x")
    t3.commit(Seq(SetTransaction("x", 2L, Some(now)), add("b2.parquet")), Operation("STREAMING UPDATE"))
    val e = failsWritingNothing[ConcurrentTransactionException](table) {
      t4.commit(Seq(SetTransaction("x", 3L, Some(now)), add("b3.parquet")), Operation("WRITE"))
    }
    assert(e.winningVersion == 2L && e.winningOperation == "STREAMING UPDATE")
    assert(e.getMessage.contains("'x'"))
    // a transaction that read another application's version is not affected
    assert(other.commit(Seq(SetTransaction("y", 5L, Some(now)), add("c.parquet")), Operation("WRITE")).version == 3L)
    val snap = log.snapshot()
    assert(snap.transactionVersion("x").contains(2L) && snap.transactionVersion("y").contains(5L))
    assert(snap.files.map(_.path).toSet == Set("a.parquet", "b2.parquet", "c.parquet"))
  }

  test("a rival injected by the test log store lands between a transaction's read and its first commit attempt") {
    val table = tempDir()
    val conf = newConf()
    conf.set(FaultInjectingLogStore.Setting._1, FaultInjectingLogStore.Setting._2)
    val log = createTable(table, metadata(Seq("p")), Seq(add("p=a/a.parquet", Map("p" -> Some("a")))), conf)
    val overwrite = log.startTransaction()
    overwrite.readWhere(partitionIs("p", "a"))
    val rivalThreads = new ConcurrentLinkedQueue[Thread]()
    val e = intercept[ConcurrentAppendException](FaultInjectingLogStore.withRivalBeforeFirstCommit { () =>
      rivalThreads.add(Thread.currentThread())
      append(log, add("p=a/rival.parquet", Map("p" -> Some("a")))) // its own commit is not paused
    }(overwrite.commit(Seq(add("p=a/b.parquet", Map("p" -> Some("a")))), Operation("WRITE"))))
    assert(rivalThreads.asScala.toSeq == Seq(Thread.currentThread()), "once, in the committing thread")
    assert(e.winningVersion == 1L && latestVersion(table) == 1L)
    // A blind append retries on top of the rival.
    def inB(name: String) = add(s"p=b/$name.parquet", Map("p" -> Some("b")))
    val r = FaultInjectingLogStore.withRivalBeforeFirstCommit(() => append(log, inB("c")))(append(log, inB("d")))
    assert(r.version == 3L && r.attempts == 2 && latestVersion(table) == 3L)
  }
}
