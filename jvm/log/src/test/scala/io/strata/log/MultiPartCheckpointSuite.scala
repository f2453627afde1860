package io.strata.log

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path => JPath}

import io.strata.testkit.FaultInjectingLogStore
import org.scalatest.funsuite.AnyFunSuite

class MultiPartCheckpointSuite extends AnyFunSuite with LogTestSupport {

  private def partName(v: Long, p: Int, n: Int): String = f"$v%020d.checkpoint.$p%010d.$n%010d.parquet"

  private def lastCheckpoint(table: JPath) =
    ActionCodec.mapper.readTree(new String(Files.readAllBytes(logDir(table).resolve("_last_checkpoint")), UTF_8))

  private def checkpointNames(table: JPath): Seq[String] = logFileNames(table).filter(n => n.contains(".checkpoint.") && !n.startsWith("."))

  /** A table of `files` files in one commit (version 1), with `partSize` actions a checkpoint part. */
  private def tableOf(files: Int, partSize: Option[String], key: String = CheckpointWriter.PartSizeKey) = {
    val table = tempDir("multipart")
    val conf = newConf()
    partSize.foreach(conf.set(key, _))
    val log = createTable(table, metadata(configuration = Map("delta.checkpointInterval" -> "1000")), conf = conf)
    log.startTransaction().commit((1 to files).map(i => add(f"f$i%03d.parquet")), Operation("WRITE"))
    (table, log)
  }

  /** A configuration whose log store can fail chosen checkpoint files, with parts of `partSize` actions. */
  private def faultInjectingConf(partSize: Int) = {
    val conf = newConf()
    conf.set(FaultInjectingLogStore.Setting._1, FaultInjectingLogStore.Setting._2)
    conf.set(CheckpointWriter.PartSizeKey, partSize.toString)
    conf
  }

  // 8 files + protocol + metadata = 10 actions
  for ((partSize, parts) <- Seq(10 -> 1, 11 -> 1, 9 -> 2, 5 -> 2, 4 -> 3, 3 -> 4, 1 -> 10)) {
    test(s"10 actions with partSize $partSize: $parts part(s), none above the size, each action once") {
      val (table, log) = tableOf(8, Some(partSize.toString))
      val snap = log.snapshot()
      val written = log.writeCheckpoint(snap)
      val expected = if (parts == 1) Seq(f"${1L}%020d.checkpoint.parquet") else (1 to parts).map(partName(1, _, parts))
      assert(written.files.map(_.getName) == expected)
      assert(checkpointNames(table) == expected)
      val perPart = written.files.map(f => Checkpoints.read(f, newConf()).toVector)
      assert(perPart.forall(p => p.nonEmpty && p.size <= partSize), perPart.map(_.size))
      val all = perPart.flatten
      assert(all.size == 10)
      assert(all.collect { case a: AddFile => a }.toSet == snap.files.toSet)
      assert(all.count(_.isInstanceOf[Protocol]) == 1 && all.count(_.isInstanceOf[Metadata]) == 1)

      val hint = lastCheckpoint(table)
      assert(hint.get("version").asLong == 1L && hint.get("size").asLong == 10L)
      assert(hint.get("numOfAddFiles").asLong == 8L)
      assert(hint.get("sizeInBytes").asLong == written.files.map(f => Files.size(java.nio.file.Paths.get(f.toUri))).sum)
      if (parts == 1) assert(!hint.has("parts")) else assert(hint.get("parts").asInt == parts)

      SnapshotCache.invalidate(log.tablePath.toString)
      val reloaded = TableLog.forPath(hpath(table), newConf()).snapshot()
      assert(reloaded.segment.checkpointVersion.contains(1L) && reloaded.segment.commitFiles.isEmpty)
      assert(reloaded.segment.checkpointFiles.map(_.getName) == expected)
      assert(reloaded.files.toSet == snap.files.toSet && reloaded.metadata == snap.metadata)
    }
  }

  test("delta-spark's spark.databricks.delta.checkpoint.partSize is honoured; Strata's setting wins over it") {
    val (table, log) = tableOf(8, Some("5"), CheckpointWriter.DeltaPartSizeKey)
    assert(log.writeCheckpoint(log.snapshot()).files.size == 2)
    log.conf.set(CheckpointWriter.PartSizeKey, "4")
    log.startTransaction().commit(Seq(add("g.parquet")), Operation("WRITE"))
    assert(log.writeCheckpoint(log.snapshot()).files.map(_.getName) == (1 to 3).map(partName(2, _, 3)))
    assert(checkpointNames(table).size == 5)
  }

  test("an invalid part size is an error naming the setting") {
    for (bad <- Seq("0", "-3", "many")) {
      val (table, _) = tableOf(2, None)
      val conf = newConf()
      conf.set(CheckpointWriter.PartSizeKey, bad)
      val log = TableLog.forPath(hpath(table), conf)
      // Both where a checkpoint is written and where a write starts (before an automatic checkpoint could meet it).
      Seq(() => log.writeCheckpoint(log.snapshot()), () => log.startTransaction()).foreach { run =>
        val e = intercept[InvalidTableOperationException](run())
        assert(e.getMessage.contains("STRATA_INVALID_CONF_VALUE") && e.getMessage.contains(CheckpointWriter.PartSizeKey) &&
          e.getMessage.contains(s"'$bad'") && e.getMessage.contains("positive whole number"), e.getMessage)
      }
    }
  }

  test("a missing part: the checkpoint is ignored; the previous complete one, or the commits, rebuild the table") {
    val (table, log) = tableOf(8, Some("4"))
    log.writeCheckpoint(log.snapshot()) // version 1, 3 parts
    log.startTransaction().commit(Seq(add("g.parquet")), Operation("WRITE"))
    val s2 = log.snapshot()
    log.writeCheckpoint(s2) // version 2, 3 parts (11 actions)
    Files.delete(logDir(table).resolve(partName(2, 2, 3)))
    SnapshotCache.invalidate(log.tablePath.toString)
    val fresh = TableLog.forPath(hpath(table), newConf())
    val s = fresh.snapshot()
    assert(s.version == 2L && s.segment.checkpointVersion.contains(1L), s.segment)
    assert(s.segment.checkpointFiles.map(_.getName) == (1 to 3).map(partName(1, _, 3)))
    assert(s.files.toSet == s2.files.toSet)
    // without the older checkpoint, the commits alone
    (1 to 3).foreach(p => Files.delete(logDir(table).resolve(partName(1, p, 3))))
    SnapshotCache.invalidate(log.tablePath.toString)
    val s0 = TableLog.forPath(hpath(table), newConf()).snapshot()
    assert(s0.segment.checkpointVersion.isEmpty && s0.files.toSet == s2.files.toSet)
    // and without commit 0 either, the error names the incomplete checkpoint _last_checkpoint promised
    Files.delete(deltaFile(table, 0))
    SnapshotCache.invalidate(log.tablePath.toString)
    val e = intercept[MissingLogFileException](TableLog.forPath(hpath(table), newConf()).snapshot())
    assert(e.getMessage.contains("named by _last_checkpoint is missing or incomplete"), e.getMessage)
  }

  test("an unreadable part (read ahead on another thread): the previous checkpoint is used, the error logged") {
    val (table, log) = tableOf(8, Some("4"))
    log.writeCheckpoint(log.snapshot()) // version 1, 3 parts
    log.startTransaction().commit(Seq(add("g.parquet")), Operation("WRITE"))
    val s2 = log.snapshot()
    log.writeCheckpoint(s2)
    for (p <- Seq(3, 1)) { // the last part, then the first (read in the caller's turn first)
      val part = logDir(table).resolve(partName(2, p, 3))
      val good = Files.readAllBytes(part)
      Files.write(part, "not parquet".getBytes(UTF_8))
      SnapshotCache.invalidate(log.tablePath.toString)
      val s = TableLog.forPath(hpath(table), newConf()).snapshot()
      assert(s.version == 2L && s.segment.checkpointVersion.contains(1L), s"part $p: ${s.segment}")
      assert(s.files.map(_.path).toSet == s2.files.map(_.path).toSet)
      Files.write(part, good)
    }
    SnapshotCache.invalidate(log.tablePath.toString)
    assert(TableLog.forPath(hpath(table), newConf()).snapshot().segment.checkpointVersion.contains(2L))
  }

  test("a part that fails to write: no checkpoint is left and _last_checkpoint is untouched; the commit stands") {
    val table = tempDir("multipart-fail")
    val conf = faultInjectingConf(partSize = 3)
    val log = createTable(table, metadata(configuration = Map("delta.checkpointInterval" -> "2")), conf = conf)
    append(log, add("a.parquet"), add("b.parquet"))
    append(log, add("c.parquet")) // version 2: checkpoint of 5 actions, 2 parts
    assert(lastCheckpoint(table).get("parts").asInt == 2)
    append(log, add("d.parquet"))
    val r = FaultInjectingLogStore.withFailingCheckpointFiles(_.getName.contains(".0000000002.0000000003."))(
      append(log, add("e.parquet"))) // version 4: 7 actions, 3 parts, the second fails
    assert(r.version == 4L)
    assert(checkpointNames(table) == Seq(partName(2, 1, 2), partName(2, 2, 2)), "the other parts were deleted")
    assert(lastCheckpoint(table).get("version").asLong == 2L)
    SnapshotCache.invalidate(log.tablePath.toString)
    val s = TableLog.forPath(hpath(table), newConf()).snapshot()
    assert(s.version == 4L && s.segment.checkpointVersion.contains(2L))
    assert(s.files.map(_.path).toSet == Set("a", "b", "c", "d", "e").map(_ + ".parquet"))
  }

  test("a failed rewrite of a version's checkpoint keeps the complete parts that were there before it") {
    val table = tempDir("multipart-rewrite")
    val conf = faultInjectingConf(partSize = 3)
    val log = createTable(table, metadata(configuration = Map("delta.checkpointInterval" -> "1000")), conf = conf)
    append(log, add("a.parquet"), add("b.parquet"), add("c.parquet"), add("d.parquet")) // 6 actions: 2 parts
    val s1 = log.snapshot()
    log.writeCheckpoint(s1)
    val before = checkpointNames(table)
    assert(before == Seq(partName(1, 1, 2), partName(1, 2, 2)))
    intercept[java.io.IOException](FaultInjectingLogStore.withFailingCheckpointFiles(_.getName == partName(1, 2, 2))(
      log.writeCheckpoint(s1)))
    assert(checkpointNames(table) == before)
    SnapshotCache.invalidate(log.tablePath.toString)
    assert(TableLog.forPath(hpath(table), newConf()).snapshot().segment.checkpointVersion.contains(1L))
  }

  test("the post-commit checkpoint of a due version is multi-part; the cached table's segment names every part") {
    val table = tempDir("multipart-hook")
    val conf = newConf()
    conf.set(CheckpointWriter.PartSizeKey, "2")
    val log = createTable(table, metadata(configuration = Map("delta.checkpointInterval" -> "2")), conf = conf)
    append(log, add("a.parquet"))
    append(log, add("b.parquet"), add("c.parquet"))
    assert(checkpointNames(table) == (1 to 3).map(partName(2, _, 3)))
    val cached = log.snapshot()
    assert(cached.segment.checkpointFiles.map(_.getName) == (1 to 3).map(partName(2, _, 3)))
    assert(cached.files.map(_.path).toSet == Set("a.parquet", "b.parquet", "c.parquet"))
  }

  test("the golden multi-part checkpoint (delta-spark, 2 parts) gives the table its commits give") {
    val copy = tempDir("golden-multipart")
    LogTestSupport.copyRecursively(Fixtures.goldenTable("multi-part-checkpoint"), copy)
    val s = TableLog.forPath(hpath(copy), newConf()).snapshot()
    assert(s.segment.checkpointFiles.map(_.getName) == (1 to 2).map(partName(1, _, 2)))
    logFileNames(copy).filter(_.contains(".checkpoint.")).foreach(n => Files.delete(logDir(copy).resolve(n)))
    SnapshotCache.invalidate(s.tablePath.toString)
    val replayed = TableLog.forPath(hpath(copy), newConf()).snapshot()
    assert(replayed.segment.checkpointVersion.isEmpty)
    def key(f: AddFile) = (f.path, f.size, f.partitionValues, f.stats)
    assert(s.files.map(key).toSet == replayed.files.map(key).toSet && s.numFiles == 10)
    assert(s.metadata == replayed.metadata)
  }
}
