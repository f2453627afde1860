package io.strata.log

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files

import org.scalatest.funsuite.AnyFunSuite

/**
 * V2 checkpoints read (UUID-named, JSON or Parquet top file, adds in sidecar files under `_delta_log/_sidecars`), a
 * missing sidecar sending replay to the commits, and checkpointProtection honoured by log cleanup. The files are
 * written by hand as delta-spark lays them out (the pytest module test_table_features.py reads delta-spark's own).
 */
class V2CheckpointSuite extends AnyFunSuite with LogTestSupport {
  private val V2 = Protocol(3, 7, Some(Set("v2Checkpoint")), Some(Set("v2Checkpoint", "appendOnly", "invariants")))

  /** Versions 0-2 as commits; a JSON UUID checkpoint of version 2 whose adds live in two sidecars. */
  private def v2Table(name: String): (java.nio.file.Path, Metadata, Seq[AddFile]) = {
    val table = tempDir(name)
    val meta = metadata()
    val files = (1 to 4).map(i => add(s"f$i.parquet"))
    writeCommit(table, 0, Seq(V2, meta))
    writeCommit(table, 1, files.take(2))
    writeCommit(table, 2, files.drop(2) :+ files.head.remove(5L))
    val sidecars = logDir(table).resolve("_sidecars")
    Files.createDirectories(sidecars)
    val live = files.drop(1)
    Checkpoints.write(hpath(sidecars.resolve("a.parquet")), live.take(2).iterator, newConf())
    Checkpoints.write(hpath(sidecars.resolve("b.parquet")), (live.drop(2) :+ files.head.remove(5L)).iterator, newConf())
    def sidecar(p: String) = s"""{"sidecar":{"path":"$p","sizeInBytes":1,"modificationTime":1}}"""
    val top = Seq("""{"checkpointMetadata":{"version":2}}""", ActionCodec.serialize(V2), ActionCodec.serialize(meta),
      sidecar("a.parquet"), sidecar("b.parquet"))
    Files.write(logDir(table).resolve(f"${2}%020d.checkpoint.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.json"),
      top.mkString("", "\n", "\n").getBytes(UTF_8))
    (table, meta, live)
  }

  test("a UUID-named checkpoint with sidecars is read; the commits before it are not needed") {
    val (table, _, live) = v2Table("v2-read")
    Seq(0, 1, 2).foreach(v => Files.delete(deltaFile(table, v)))
    writeCommit(table, 3, Seq(add("f5.parquet")))
    val log = TableLog.forPath(hpath(table), newConf())
    val s = log.snapshot()
    assert(s.version == 3L && s.segment.checkpointVersion.contains(2L))
    assert(s.files.map(_.path).toSet == (live.map(_.path) :+ "f5.parquet").toSet)
    assert(s.tombstones.map(_.path) == Seq("f1.parquet"))
    // Strata writes on it (the feature allows classic checkpoints), single-file only.
    append(log, add("f6.parquet"))
    log.checkpoint(log.snapshot())
    assert(Files.exists(checkpointFile(table, 4)))
    SnapshotCache.invalidate(hpath(table).toString)
    assert(TableLog.forPath(hpath(table), newConf()).snapshot().numFiles == 5)
  }

  test("a missing sidecar: the checkpoint is passed over and the commits rebuild the table") {
    val (table, _, live) = v2Table("v2-missing")
    Files.delete(logDir(table).resolve("_sidecars").resolve("b.parquet"))
    val s = TableLog.forPath(hpath(table), newConf()).snapshot()
    assert(s.segment.checkpointVersion.isEmpty && s.files.map(_.path).toSet == live.map(_.path).toSet)
  }

  test("delta.checkpointPolicy = v2: the feature, one UUID-named V2 checkpoint, read back with the commits gone") {
    val table = tempDir("v2-write")
    val log = createTable(table, metadata(configuration = Map("delta.checkpointPolicy" -> "v2")))
    val p = log.snapshot().protocol
    assert(p.readerFeatures.exists(_("v2Checkpoint")) && p.writerFeatures.exists(_("v2Checkpoint")))
    (1 to 3).foreach(i => append(log, add(s"f$i.parquet")))
    val written = log.writeCheckpoint(log.snapshot())
    val name = written.files.head.getName
    assert(name.matches("""0{19}3\.checkpoint\.[0-9a-f-]{36}\.parquet""") && !Files.exists(checkpointFile(table, 3)), name)
    val rows = Checkpoints.read(written.files.head, newConf()).toSeq
    assert(rows.collect { case a: AddFile => a.path }.toSet == Set("f1.parquet", "f2.parquet", "f3.parquet"))
    val hint = new String(Files.readAllBytes(logDir(table).resolve("_last_checkpoint")), UTF_8)
    assert(hint.contains("\"version\":3") && hint.contains(name), hint)
    // The checkpointMetadata row is there (a V2-spec checkpoint must have it).
    val reader = org.apache.parquet.hadoop.ParquetFileReader.open(
      org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(written.files.head, newConf()))
    try assert(reader.getFooter.getFileMetaData.getSchema.containsField("checkpointMetadata")) finally reader.close()
    (0 to 3).foreach(v => Files.delete(deltaFile(table, v)))
    SnapshotCache.invalidate(hpath(table).toString)
    val s = TableLog.forPath(hpath(table), newConf()).snapshot()
    assert(s.version == 3L && s.numFiles == 3 && s.metadata.configuration("delta.checkpointPolicy") == "v2")
  }

  test("checkpointProtection: no cleanup below the protected version unless all of it goes at once") {
    val table = tempDir("protection")
    val p = Protocol(1, 7, None, Some(Set("appendOnly", "invariants", LogCleanup.ProtectionFeature)))
    writeCommit(table, 0, Seq(p, metadata(configuration = Map(LogCleanup.ProtectedBeforeKey -> "3",
      "delta.checkpointInterval" -> "1000"))))
    val log = TableLog.forPath(hpath(table), newConf())
    (1 to 4).foreach { i => append(log, add(s"f$i.parquet")); log.checkpoint(log.snapshot()) }
    def old(v: Long): Unit = deltaFile(table, v).toFile.setLastModified(1000L * (v + 1))
    // Versions 0-2 are expired (checkpoints 1 and 2 qualify); 3 and 4 are recent.
    (0L to 2L).foreach(old)
    val now = System.currentTimeMillis()
    val held = LogCleanup.run(log, retentionMillis = now - 10000L, now = now)
    assert(held.commitsDeleted == 0 && held.checkpointsDeleted == 0, "cleanup up to 2 would split the protected range")
    assert(Files.exists(checkpointFile(table, 1)) && Files.exists(deltaFile(table, 0)))
    old(3L)
    val all = LogCleanup.run(log, retentionMillis = now - 10000L, now = now)
    assert(all.oldestVersion == 3L && all.commitsDeleted == 3 && all.checkpointsDeleted == 2, all)
    assert(!Files.exists(checkpointFile(table, 2)) && Files.exists(checkpointFile(table, 3)))
    assert(log.snapshot().numFiles == 4)
  }
}
