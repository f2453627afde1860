package io.strata.log

import java.nio.file.{Path => JPath}

import org.scalatest.funsuite.AnyFunSuite

/** A version without its file state ([[SnapshotHead]]) says what the full snapshot says, and how big its state is. */
class SnapshotHeadSuite extends AnyFunSuite with LogTestSupport {

  /** A table with a 3-part checkpoint at version 2 (txn and domain inside), then commits 3 and 4. */
  private def table(): (JPath, TableLog) = {
    val dir = tempDir("head")
    val conf = newConf()
    conf.set(CheckpointWriter.PartSizeKey, "4")
    val log = createTable(dir, metadata(Seq("p"), Map("delta.checkpointInterval" -> "1000")), conf = conf)
    append(log, (1 to 6).map(i => add(s"p=a/f$i.parquet", Map("p" -> Some("a")))): _*)
    writeCommit(dir, 2, Seq(SetTransaction("app", 7, None), DomainMetadata("d1", "{}", removed = false),
      RemoveFile("p=a/f1.parquet", Some(1L), dataChange = true)))
    log.writeCheckpoint(log.snapshot())
    writeCommit(dir, 3, Seq(add("p=b/g1.parquet", Map("p" -> Some("b"))), SetTransaction("app", 8, None),
      DomainMetadata("d2", "{\"x\":1}", removed = false)))
    writeCommit(dir, 4, Seq(RemoveFile("p=a/f2.parquet", Some(2L), dataChange = true),
      add("p=b/g2.parquet", Map("p" -> Some("b")))))
    (dir, log)
  }

  private def sameAsSnapshot(head: SnapshotHead, snap: Snapshot): Unit = {
    assert(head.version == snap.version)
    assert(head.protocol == snap.protocol && head.metadata == snap.metadata)
    assert(head.transactions == snap.transactions && head.domains == snap.domains)
    assert(head.segment == snap.segment)
  }

  test("the head of the latest version, read without the file columns, matches the snapshot") {
    val (dir, log) = table()
    SnapshotCache.invalidate(log.tablePath.toString)
    val head = log.headOption().get
    assert(head.segment.checkpointFiles.size == 3, head.segment) // a multi-part checkpoint is what it starts from
    assert(head.transactions("app").version == 8 && head.domains.keySet == Set("d1", "d2"))
    // _last_checkpoint's numOfAddFiles (5 live at version 2) plus the adds of the commits after it (2): an upper bound
    assert(head.size.files.contains(7L), head.size)
    assert(head.size.logBytes > 0)
    val snap = log.snapshotAt(4)
    sameAsSnapshot(head, snap)
    assert(snap.numFiles == 6)
  }

  test("stateSize: numOfAddFiles of the newest checkpoint before anything is replayed; exact once loaded") {
    val (_, log) = table()
    SnapshotCache.invalidate(log.tablePath.toString)
    val size = log.stateSize().get
    assert(size.files.contains(5L), size)
    log.snapshot()
    assert(log.stateSize().get.files.contains(6L))
    assert(log.headOption().get.size.files.contains(6L)) // from the cached snapshot
  }

  test("a JSON-only log: the head counts the commits' adds; stateSize states no count, only bytes") {
    val dir = tempDir("head-json")
    val log = createTable(dir, metadata())
    append(log, add("a.parquet"), add("b.parquet"))
    append(log, add("c.parquet"))
    SnapshotCache.invalidate(log.tablePath.toString)
    val size = log.stateSize().get
    assert(size.files.isEmpty && size.logBytes > 0)
    val head = log.headOption().get
    assert(head.size.files.contains(3L))
    sameAsSnapshot(head, log.snapshot())
  }

  test("headAt: time travel to each version gives that version's snapshot without its files") {
    val (_, log) = table()
    (0L to 4L).foreach(v => sameAsSnapshot(log.headAt(v), log.snapshotAt(v)))
    val e = intercept[InvalidTableOperationException](log.headAt(9))
    assert(e.getMessage.contains("does not exist"))
  }

  test("latest: one listing, then the snapshot or the head as the size decides") {
    val (_, log) = table()
    SnapshotCache.invalidate(log.tablePath.toString)
    var seen = Option.empty[StateSize]
    val head = log.latest { size => seen = Some(size); true }
    assert(seen.get.files.contains(5L)) // _last_checkpoint's count, nothing replayed
    assert(head.exists(_.left.exists(h => h.version == 4 && h.segment.checkpointFiles.size == 3)), head)
    val snap = log.latest(_ => false)
    assert(snap.exists(_.exists(_.numFiles == 6)), snap)
  }

  test("a commit leaves the version after it held; a held head sizes the table without _last_checkpoint") {
    val (dir, log) = table()
    SnapshotCache.invalidate(log.tablePath.toString)
    val head = log.headOption().get
    assert(log.heldHead(4).contains(head) && log.heldHead(3).isEmpty)
    val onHead = log.startTransaction(head).commit(Seq(add("p=b/g3.parquet", Map("p" -> Some("b")))),
      Operation("WRITE"))
    // The head after the commit: the checkpoint's 5 files plus the 3 commits' adds since (an upper bound).
    assert(onHead.version == 5 && log.heldHead(5).exists(_.size.files.contains(8L)), log.heldHead(5))
    // The next append's size comes from that head: `_last_checkpoint` is not read again (here: gone).
    java.nio.file.Files.delete(dir.resolve("_delta_log").resolve("_last_checkpoint"))
    assert(log.stateSize().get.files.contains(8L), log.stateSize())
    assert(log.latest(_ => true).exists(_.left.exists(_.version == 5)))
    // A commit over a snapshot leaves the snapshot after it held, for that version only.
    val snap = log.snapshot()
    val onSnap = log.startTransaction(Some(snap)).commit(Seq(add("p=c/h1.parquet", Map("p" -> Some("c")))),
      Operation("WRITE"))
    assert(log.heldSnapshot(onSnap.version).exists(s => s.version == 6 && s.numFiles == snap.numFiles + 1))
    assert(log.heldSnapshot(5).isEmpty)
  }

  test("a snapshot held a few commits behind sizes the table without _last_checkpoint") {
    val (dir, log) = table()
    assert(log.snapshot().numFiles == 6)
    writeCommit(dir, 5, Seq(add("p=c/h1.parquet", Map("p" -> Some("c"))))) // another writer's commit
    java.nio.file.Files.delete(dir.resolve("_delta_log").resolve("_last_checkpoint"))
    assert(log.stateSize().get.files.contains(6L), log.stateSize()) // the held version 4's count
    assert(log.latest(_ => false).exists(_.exists(s => s.version == 5 && s.numFiles == 7)))
  }

  test("no table: headOption, stateSize and latest are None") {
    val log = TableLog.forPath(hpath(tempDir("head-none")), newConf())
    assert(log.headOption().isEmpty && log.stateSize().isEmpty && log.latest(_ => true).isEmpty)
  }
}
