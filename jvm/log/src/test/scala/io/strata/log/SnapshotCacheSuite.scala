package io.strata.log

import java.nio.file.Files

import org.scalatest.funsuite.AnyFunSuite

/** Loading a table again reads only the commits since the last load in this JVM, and never serves a stale table. */
class SnapshotCacheSuite extends AnyFunSuite with LogTestSupport {
  private def recordingConf() = {
    val conf = newConf()
    conf.set(LogStore.implKey("file"), classOf[RecordingLogStore].getName)
    conf
  }

  private def sameState(a: Snapshot, b: Snapshot): Unit = {
    assert(a.version == b.version)
    assert(a.files.map(_.path).toSet == b.files.map(_.path).toSet)
    assert(a.tombstones.map(_.path).toSet == b.tombstones.map(_.path).toSet)
    assert(a.transactions == b.transactions && a.metadata == b.metadata && a.protocol == b.protocol)
  }

  test("a second load replays only the new commits, and equals a full load") {
    val table = tempDir("cache")
    val log = createTable(table, files = Seq(add("a.parquet")))
    val reader = TableLog.forPath(hpath(table), recordingConf())
    assert(reader.snapshot().version == 0L)
    // Commits by another process: written straight to the log, so this JVM's cache does not know them.
    def commit(v: Long, actions: Action*): Unit = log.store.putIfAbsent(FileNames.deltaFile(log.logPath, v),
      actions.map(ActionCodec.serialize))
    commit(1L, add("b.parquet"))
    commit(2L, add("a.parquet").remove(1L), SetTransaction("app", 3L, None))
    RecordingLogStore.clear()
    val s = reader.snapshot()
    assert(RecordingLogStore.readNames == Seq(f"${1}%020d.json", f"${2}%020d.json"))
    sameState(s, reader.snapshotAt(2L))
    assert(s.files.map(_.path) == Seq("b.parquet") && s.transactionVersion("app").contains(3L))
    RecordingLogStore.clear()
    assert(reader.snapshot() eq s, "nothing new: the cached snapshot itself")
    assert(RecordingLogStore.readNames.isEmpty)
  }

  test("the committer's own new version is cached: the next load reads no commit file") {
    val table = tempDir("cache-own")
    val log = TableLog.forPath(hpath(table), recordingConf())
    val txn = log.startTransaction()
    txn.updateMetadata(metadata())
    txn.commit(Seq(add("a.parquet")), Operation("CREATE TABLE"))
    log.snapshot()
    val t = log.startTransaction()
    t.commit(Seq(add("b.parquet")), Operation("WRITE"))
    RecordingLogStore.clear()
    val s = log.snapshot()
    assert(RecordingLogStore.readNames.isEmpty, s"read ${RecordingLogStore.readNames}")
    sameState(s, log.snapshotAt(1L))
  }

  test("a table deleted and created again at the same place is loaded anew, not from the cache") {
    val table = tempDir("cache-recreate")
    val log = createTable(table, files = Seq(add("old-1.parquet")))
    append(log, add("old-2.parquet"))
    assert(log.snapshot().files.size == 2)
    LogTestSupport.deleteRecursively(table)
    Files.createDirectories(table)
    val again = createTable(table, metadata(partitionColumns = Seq("p")), Seq(add("p=1/new.parquet", Map("p" -> Some("1")))))
    append(again, add("p=1/new-2.parquet", Map("p" -> Some("1"))))
    val s = TableLog.forPath(hpath(table), newConf()).snapshot()
    assert(s.files.map(_.path).toSet == Set("p=1/new.parquet", "p=1/new-2.parquet"))
    assert(s.partitionColumns == Seq("p"))
  }

  test("a newer checkpoint is used instead of the cached state, so segments stay what a full load chooses") {
    val table = tempDir("cache-checkpoint")
    val log = createTable(table, metadata(configuration = Map("delta.checkpointInterval" -> "3")))
    log.snapshot()
    (1 to 4).foreach(i => append(log, add(s"f$i.parquet")))
    val s = TableLog.forPath(hpath(table), newConf()).snapshot()
    assert(s.version == 4L && s.segment.checkpointVersion.contains(3L))
    assert(s.segment.commitFiles.map(_.getName) == Seq(f"${4}%020d.json"))
  }

  test("the latest snapshot this JVM holds is found without a listing, never once a commit followed it") {
    val table = tempDir("cache-held")
    val log = createTable(table, files = Seq(add("a.parquet")))
    val reader = TableLog.forPath(hpath(table), recordingConf())
    def latest(distributed: Boolean = false) = reader.latest(_ => distributed).get
    val s = latest().toOption.get
    RecordingLogStore.clear()
    assert(latest().toOption.get eq s)
    assert(RecordingLogStore.listings.isEmpty && RecordingLogStore.readNames.isEmpty)
    // The distributed path decides from a listing, as before.
    assert(latest(distributed = true).isLeft && RecordingLogStore.listings.size == 1)
    // A commit by another process (straight to the log: this JVM's cache does not know it) is seen.
    log.store.putIfAbsent(FileNames.deltaFile(log.logPath, 1L), Seq(ActionCodec.serialize(add("b.parquet"))))
    RecordingLogStore.clear()
    val next = latest().toOption.get
    assert(next.version == 1L && next.files.map(_.path).toSet == Set("a.parquet", "b.parquet"))
    assert(RecordingLogStore.listings.size == 1 && RecordingLogStore.readNames == Seq(f"${1}%020d.json"))
    // The table deleted and created again up to the same version by another process: its commit file differs.
    LogTestSupport.deleteRecursively(table)
    writeCommit(table, 0L, Seq(Protocol(1, 2), metadata(partitionColumns = Seq("p")),
      add("p=1/new.parquet", Map("p" -> Some("1")))))
    writeCommit(table, 1L, Seq(add("p=1/new-2.parquet", Map("p" -> Some("1")))))
    val recreated = latest().toOption.get
    assert(recreated.version == 1L && recreated.partitionColumns == Seq("p"))
    assert(recreated.files.map(_.path).toSet == Set("p=1/new.parquet", "p=1/new-2.parquet"))
  }

  test("a one-file append to a big table reads only the winners and the commits since, and writes its own size") {
    val table = tempDir("cache-append")
    val log = createTable(table, files = (0 until 20000).map(i => add(f"part-$i%05d.parquet")))
    log.checkpoint(log.snapshot())
    val writer = TableLog.forPath(hpath(table), recordingConf())
    val txn = writer.startTransaction() // reads the checkpoint
    append(log, add("rival.parquet")) // version 1 lands first, through another log (not this JVM's cache entry)
    RecordingLogStore.clear()
    val result = txn.commit(Seq(add("mine.parquet")), Operation("WRITE"))
    assert(result.version == 2L && result.attempts == 2)
    // The winner is read once (after the refused put) and checked; the probe of version 2 found nothing yet.
    val reads = RecordingLogStore.readNames
    assert(reads.nonEmpty && reads.forall(n => n == f"${1}%020d.json" || n == f"${2}%020d.json"), reads)
    assert(reads.count(_ == f"${1}%020d.json") == 1, reads)
    val written = java.nio.file.Files.readAllLines(table.resolve("_delta_log").resolve(f"${2}%020d.json"))
    assert(written.size == 2 && written.get(1).startsWith("""{"add":{"path":"mine.parquet""""), written)
    RecordingLogStore.clear()
    // The rival committed in this JVM, so the cache holds version 1: only version 2 is read, nothing older.
    val after = writer.snapshot()
    assert(RecordingLogStore.readNames == Seq(f"${2}%020d.json"))
    assert(after.numFiles == 20002)
    val next = writer.startTransaction()
    RecordingLogStore.clear()
    next.commit(Seq(add("next.parquet")), Operation("WRITE"))
    assert(RecordingLogStore.readNames.isEmpty, "no winner: nothing read")
    writer.snapshot()
    assert(RecordingLogStore.readNames.isEmpty, "its own commit is cached: nothing read")
  }
}
