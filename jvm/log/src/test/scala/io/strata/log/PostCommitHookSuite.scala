package io.strata.log

import java.nio.file.Files

import io.strata.testkit.FaultInjectingLogStore
import org.scalatest.LoneElement
import org.scalatest.funsuite.AnyFunSuite

import scala.collection.mutable.ArrayBuffer

/** What runs after a commit lands: the log core's checkpoint and log cleanup hooks, then the registered ones. */
class PostCommitHookSuite extends AnyFunSuite with LogTestSupport with LoneElement {
  /** Records what it saw (and whether the checkpoint of that version was there by then); fails when asked to. */
  private final class Recorder(val name: String, failing: Boolean = false) extends PostCommitHook {
    val seen = ArrayBuffer.empty[(CommittedVersion, Boolean)]
    def run(commit: CommittedVersion): Unit = {
      seen += commit -> Files.exists(checkpointFile(java.nio.file.Paths.get(commit.log.tablePath.toUri), commit.version))
      if (failing) throw new IllegalStateException(s"$name fails")
    }
  }

  test("a failing hook leaves the commit landed and reported; the hooks after it still run") {
    val table = tempDir()
    val log = createTable(table)
    val txn = log.startTransaction()
    val (failing, next) = (new Recorder("failing", failing = true), new Recorder("next"))
    txn.registerPostCommitHook(failing)
    txn.registerPostCommitHook(next)
    val r = txn.commit(Seq(add("a.parquet")), Operation("WRITE"))
    assert(r.version == 1L && r.attempts == 1 && !r.alreadyCommitted)
    assert(failing.seen.map(_._1.version) == Seq(1L) && next.seen.map(_._1.version) == Seq(1L))
    assert(actionsOf(deltaFile(table, 1L)).collect { case a: AddFile => a.path } == Seq("a.parquet"))
    assert(TableLog.forPath(hpath(table), newConf()).snapshot().files.map(_.path) == Seq("a.parquet"))
  }

  test("hooks see the committed version, its actions and metadata, and the table after it when known") {
    val table = tempDir()
    val log = createTable(table, metadata(configuration = Map("delta.checkpointInterval" -> "2")))
    val direct = new Recorder("direct")
    val txn = log.startTransaction()
    txn.registerPostCommitHook(direct)
    txn.registerPostCommitHook(direct) // runs once
    txn.commit(Seq(add("a.parquet")), Operation("WRITE"))
    val (c, _) = direct.seen.loneElement
    assert(c.version == 1L && c.result.commitInfo.operation.contains("WRITE") && c.log.tablePath == log.tablePath)
    assert(c.actions.collect { case a: AddFile => a.path } == Seq("a.parquet"))
    assert(c.metadata.configuration("delta.checkpointInterval") == "2")
    assert(c.snapshot.map(s => (s.version, s.files.map(_.path))).contains((1L, Seq("a.parquet"))))

    // A winner in between: the table after the commit is not known without reading the log. Version 2 is due a
    // checkpoint: the log core's hooks ran first.
    val late = new Recorder("late")
    val txn2 = log.startTransaction()
    txn2.registerPostCommitHook(late)
    append(log, add("b.parquet"))
    assert(txn2.commit(Seq(add("c.parquet")), Operation("WRITE")).version == 3L)
    assert(late.seen.map { case (s, cp) => (s.version, s.snapshot.isEmpty, cp) } == Seq((3L, true, false)))
    val late2 = new Recorder("late2")
    val txn3 = log.startTransaction()
    txn3.registerPostCommitHook(late2)
    txn3.commit(Seq(add("d.parquet")), Operation("WRITE"))
    assert(late2.seen.map { case (s, cp) => (s.version, cp) } == Seq((4L, true)), "the checkpoint came first")
  }

  test("no hook runs after a retry whose application version is already committed") {
    val table = tempDir()
    val log = createTable(table)
    log.startTransaction().commit(Seq(SetTransaction("app", 1L, None)), Operation("WRITE"))
    val hook = new Recorder("hook")
    val txn = log.startTransaction()
    txn.registerPostCommitHook(hook)
    assert(txn.commit(Seq(SetTransaction("app", 1L, None), add("a.parquet")), Operation("WRITE")).alreadyCommitted)
    assert(hook.seen.isEmpty)
  }

  test("a failing checkpoint leaves the commit landed and reported; the next one due is written") {
    val table = tempDir()
    val conf = newConf()
    conf.set(FaultInjectingLogStore.Setting._1, FaultInjectingLogStore.Setting._2)
    val log = createTable(table, metadata(configuration = Map("delta.checkpointInterval" -> "2")), conf = conf)
    append(log, add("a.parquet"))
    val r = FaultInjectingLogStore.withFailingCheckpoints(append(log, add("b.parquet")))
    assert(r.version == 2L && !Files.exists(checkpointFile(table, 2L)))
    assert(TableLog.forPath(hpath(table), newConf()).snapshot().files.map(_.path).toSet == Set("a.parquet", "b.parquet"))
    append(log, add("c.parquet"))
    append(log, add("d.parquet"))
    assert(Files.exists(checkpointFile(table, 4L)))
    assert(TableLog.forPath(hpath(table), newConf()).snapshot().segment.checkpointVersion.contains(4L))
  }

  test("a large table's checkpoint is written after the commit returns, off the committing thread") {
    val table = tempDir()
    val conf = newConf()
    conf.set(FaultInjectingLogStore.Setting._1, FaultInjectingLogStore.Setting._2)
    conf.setLong(CheckpointHook.BackgroundMinFilesKey, 2L) // "large": two files
    createTable(table, metadata(configuration = Map("delta.checkpointInterval" -> "2")))
    val log = TableLog.forPath(hpath(table), conf)
    append(log, add("a.parquet"))
    FaultInjectingLogStore.withCheckpointGate { open =>
      val txn = log.startTransaction()
      val r = txn.commit(Seq(add("b.parquet")), Operation("WRITE"))
      // The checkpoint of version 2 waits at the gate: the commit returned without it.
      assert(r.version == 2L && !Files.exists(checkpointFile(table, 2L)))
      open()
      CheckpointHook.awaitBackground()
      assert(Files.exists(checkpointFile(table, 2L)))
    }
    assert(log.lastCheckpointVersion().contains(2L))
    val fresh = TableLog.forPath(hpath(table), newConf())
    assert(fresh.snapshotAt(2L).segment.checkpointVersion.contains(2L))
    assert(fresh.snapshotAt(2L).files.map(_.path).toSet == Set("a.parquet", "b.parquet"))
  }

  test("a small table's checkpoint is written before the commit returns") {
    val table = tempDir()
    val log = createTable(table, metadata(configuration = Map("delta.checkpointInterval" -> "2")))
    append(log, add("a.parquet"))
    append(log, add("b.parquet"))
    assert(Files.exists(checkpointFile(table, 2L)))
  }

  test("an OutOfMemoryError in a background checkpoint leaves no checkpoint and no hint; later ones are written") {
    val table = tempDir()
    val conf = newConf()
    conf.set(FaultInjectingLogStore.Setting._1, FaultInjectingLogStore.Setting._2)
    conf.setLong(CheckpointHook.BackgroundMinFilesKey, 2L)
    createTable(table, metadata(configuration = Map("delta.checkpointInterval" -> "2")))
    val log = TableLog.forPath(hpath(table), conf)
    append(log, add("a.parquet"))
    // The error is handled (logged with table and version), not left to end the checkpoint thread uncaught.
    val uncaught = new java.util.concurrent.ConcurrentLinkedQueue[Throwable]()
    val previous = Thread.getDefaultUncaughtExceptionHandler
    Thread.setDefaultUncaughtExceptionHandler((_, e) => uncaught.add(e))
    try FaultInjectingLogStore.withCheckpointError(() => new OutOfMemoryError("injected: Java heap space")) {
      val r = log.startTransaction().commit(Seq(add("b.parquet")), Operation("WRITE"))
      assert(r.version == 2L) // the commit landed and returned
      CheckpointHook.awaitBackground()
    } finally Thread.setDefaultUncaughtExceptionHandler(previous)
    assert(uncaught.isEmpty, uncaught)
    def logFiles = logFileNames(table)
    assert(!Files.exists(checkpointFile(table, 2L)))
    assert(!logFiles.exists(_.contains(".tmp")), logFiles) // no half-written file
    assert(log.lastCheckpointVersion().isEmpty)
    append(log, add("c.parquet"))
    append(log, add("d.parquet"))
    CheckpointHook.awaitBackground()
    assert(Files.exists(checkpointFile(table, 4L)) && log.lastCheckpointVersion().contains(4L))
    assert(TableLog.forPath(hpath(table), newConf()).snapshot().files.map(_.path).toSet ==
      Set("a.parquet", "b.parquet", "c.parquet", "d.parquet"))
  }

  test("a mistyped checkpoint part size fails a write before it commits, naming the setting") {
    Seq(CheckpointWriter.PartSizeKey, CheckpointWriter.DeltaPartSizeKey).foreach { key =>
      val table = tempDir()
      createTable(table, metadata(configuration = Map("delta.checkpointInterval" -> "2")))
      val conf = newConf()
      conf.set(key, "10k")
      val log = TableLog.forPath(hpath(table), conf)
      val e = intercept[InvalidTableOperationException](log.startTransaction())
      assert(e.getCondition == "STRATA_INVALID_CONF_VALUE" && e.getSqlState == "22022")
      assert(e.getMessage.contains(key) && e.getMessage.contains("'10k'") && e.getMessage.contains("positive whole number"))
      assert(latestVersion(table) == 0L) // nothing committed
      conf.set(key, "2")
      append(log, add("a.parquet"))
      append(log, add("b.parquet")) // version 2: a checkpoint of 2 parts (4 actions, 2 a part)
      assert(log.lastCheckpointVersion().contains(2L))
      assert(logFileNames(table).count(n => n.contains(".checkpoint.") && n.endsWith(".parquet")) == 2)
    }
  }
}
