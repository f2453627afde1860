package io.strata.log

import org.scalatest.funsuite.AnyFunSuite

/** Action reconciliation (PROTOCOL.md "Action Reconciliation") on logs written by other writers. */
class LogReplaySuite extends AnyFunSuite with LogTestSupport {

  private def info0 = CommitInfo(ActionCodec.mapper.createObjectNode().put("operation", "Manual Update"))
  private def rm(path: String) = RemoveFile(path, Some(1L), dataChange = true)

  test("a remove cancels an add naming the same file relative, absolute or URI-encoded") {
    val table = tempDir("replay")
    val root = hpath(table).toString.stripSuffix("/") // file:/tmp/...
    writeCommit(table, 0, Seq(info0, Protocol(1, 2), metadata(),
      add("a.parquet"), add("rel/b%20c.parquet"), add(s"$root/d.parquet"), add("e.parquet")))
    writeCommit(table, 1, Seq(info0,
      rm(s"$root/a.parquet"), // relative add, qualified remove
      rm(s"$root/rel/b%20c.parquet"),
      rm("d.parquet"), // qualified add, relative remove
      rm("file://" + table.toUri.getPath + "e.parquet"))) // file:///... form
    val snap = TableLog.forPath(hpath(table), newConf()).snapshot()
    assert(snap.files.isEmpty, snap.files.map(_.path))
    assert(snap.tombstones.size == 4)
  }

  test("scheme-less absolute paths are the same file as their file: form (canonicalized paths)") {
    // What delta-spark's canonicalized-paths golden tables hold: add "/some/path", remove "file:/some/path".
    val table = tempDir("canonical")
    writeCommit(table, 0, Seq(info0, Protocol(1, 2), metadata(),
      add("/some/unqualified/absolute/path"), add("/some/unqualified/with%20space/p@%23h"), add("file:/other/x")))
    writeCommit(table, 1, Seq(info0,
      rm("file:/some/unqualified/absolute/path"), rm("file:///some/unqualified/with%20space/p@%23h"), rm("/other/x")))
    val snap = TableLog.forPath(hpath(table), newConf()).snapshot()
    assert(snap.files.map(_.path).isEmpty, "every add was removed")
    assert(snap.tombstones.size == 3)
  }

  test("delete and re-add of the same path in different commits, and the latest metaData and protocol win") {
    val table = tempDir("readd")
    writeCommit(table, 0, Seq(info0, Protocol(1, 2), metadata(), add("foo")))
    writeCommit(table, 1, Seq(info0, rm("foo")))
    writeCommit(table, 2, Seq(info0, add("foo").copy(size = 42L)))
    writeCommit(table, 3, Seq(info0, add("bar"), Protocol(3, 7, Some(Set.empty), Some(Set("appendOnly", "invariants"))),
      metadata(configuration = Map("k" -> "v"))))
    val log = TableLog.forPath(hpath(table), newConf())
    val snap = log.snapshot()
    assert(snap.files.map(_.path).toSet == Set("foo", "bar"))
    assert(snap.files.find(_.path == "foo").get.size == 42L)
    assert(snap.tombstones.isEmpty, "a re-added file is no longer a tombstone")
    assert(snap.protocol.minReaderVersion == 3)
    assert(snap.metadata.configuration == Map("k" -> "v"))
    assert(log.snapshotAt(1).files.isEmpty && log.snapshotAt(1).tombstones.map(_.path) == Seq("foo"))
    // a checkpoint of it round-trips the same state
    log.checkpoint(snap)
    val again = TableLog.forPath(hpath(table), newConf()).snapshot()
    assert(again.segment.checkpointVersion.contains(3L))
    assert(again.files.toSet == snap.files.toSet && again.protocol == snap.protocol && again.metadata == snap.metadata)
  }
}
