package io.strata.log

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files

import org.scalatest.funsuite.AnyFunSuite

class CheckpointSuite extends AnyFunSuite with LogTestSupport {

  private def name(v: Long): String = f"$v%020d.json"
  private def cpName(v: Long): String = f"$v%020d.checkpoint.parquet"

  test("a 1,000-commit table: a fresh load reads only the last checkpoint and the commits after it") {
    val table = tempDir("thousand")
    val log = createTable(table) // version 0, default checkpoint interval (10)
    val s0 = log.snapshot()
    val t0 = System.nanoTime()
    val files = scala.collection.mutable.ArrayBuffer.empty[AddFile]
    (1 to 999).foreach { i =>
      // Each commit goes through Transaction.commit (and its post-commit checkpoints), but starts from a snapshot
      // built here (the files committed so far) instead of a load: listing the log before each of the 999 commits
      // would dominate the test's run time. The snapshot must be the true state: checkpoints are written from it.
      val read = Snapshot.of(s0.tablePath, i - 1L, s0.segment, s0.protocol, s0.metadata, files.toIndexedSeq)
      val file = add(f"f$i%04d.parquet")
      val r = new Transaction(log, Some(read)).commit(Seq(file), Operation("WRITE"))
      assert(r.version == i && r.attempts == 1)
      files += file
    }
    info(f"999 commits in ${(System.nanoTime() - t0) / 1e9}%.1f s")
    val checkpoints = logFileNames(table).flatMap(FileNames.classify).collect { case c: FileNames.CheckpointPart => c.version }
    assert(checkpoints.sorted == (10L to 990L by 10))

    val conf = newConf()
    conf.set(LogStore.implKey("file"), classOf[RecordingLogStore].getName)
    SnapshotCache.invalidate(log.tablePath.toString) // a load by another process: the committer's cache does not help
    val fresh = TableLog.forPath(hpath(table), conf)
    assert(fresh.store.isInstanceOf[RecordingLogStore])

    RecordingLogStore.clear()
    val snap = fresh.snapshot()
    val read = RecordingLogStore.readNames
    assert(read.count(_ == FileNames.LastCheckpointName) <= 1)
    assert(read.filterNot(_ == FileNames.LastCheckpointName) == cpName(990) +: (991L to 999L).map(name),
      s"files read: $read")
    assert(snap.version == 999L)
    assert(snap.files.size == 999)
    assert(snap.files.map(_.path).toSet == (1 to 999).map(i => f"f$i%04d.parquet").toSet)
    assert(snap.segment.version == 999L)
    assert(snap.segment.checkpointVersion.contains(990L))
    assert(snap.segment.checkpointFiles.map(_.getName) == Seq(cpName(990)))
    assert(snap.segment.commitFiles.map(_.getName) == (991L to 999L).map(name))

    // time travel reads the checkpoint at or below the version asked for
    RecordingLogStore.clear()
    val old = fresh.snapshotAt(985)
    assert(RecordingLogStore.readNames.filterNot(_ == FileNames.LastCheckpointName) ==
      cpName(980) +: (981L to 985L).map(name))
    assert(old.files.size == 985)
    RecordingLogStore.clear()
    val exact = fresh.snapshotAt(500)
    assert(RecordingLogStore.readNames.filterNot(_ == FileNames.LastCheckpointName) == Seq(cpName(500)))
    assert(exact.files.size == 500 && exact.segment.commitFiles.isEmpty)
  }

  test("a checkpoint Strata writes round-trips; expired tombstones are dropped") {
    val table = tempDir("cp-roundtrip")
    val conf = newConf()
    val meta = metadata(partitionColumns = Seq("p"), configuration = Map(
      "delta.deletedFileRetentionDuration" -> "interval 1 hours", "delta.checkpointInterval" -> "1000",
      "custom.key" -> "custom value"))
    val stats = """{"numRecords":2,"minValues":{"id":1},"maxValues":{"id":2},"nullCount":{"id":0}}"""
    val log = createTable(table, meta, Seq(
      add("p=1/a.parquet", Map("p" -> Some("1")), stats = Some(stats)).copy(tags = Map("INSERTION_TIME" -> "1")),
      add("p=__HIVE_DEFAULT_PARTITION__/b.parquet", Map("p" -> None), stats = Some(stats)),
      add("p=a%20b/c.parquet", Map("p" -> Some("a b"))),
      add("p=x/d.parquet", Map("p" -> Some("x")), size = 77)), conf)
    val now = System.currentTimeMillis()
    log.startTransaction().commit(Seq(SetTransaction("app-1", 3L, Some(now)), SetTransaction("app-2", 7L, None),
      add("p=1/e.parquet", Map("p" -> Some("1")))), Operation("STREAMING UPDATE"))
    val s1 = log.snapshot()
    def file(p: String) = s1.files.find(_.path == p).get
    // c removed 2 hours ago (older than the 1 hour retention): expired; d removed 10 minutes ago: kept
    log.startTransaction().commit(Seq(file("p=a%20b/c.parquet").remove(now - 2 * 3600 * 1000L)), Operation("DELETE"))
    log.startTransaction().commit(Seq(file("p=x/d.parquet").remove(now - 10 * 60 * 1000L)), Operation("DELETE"))
    val withDomain = log.startTransaction()
    withDomain.requireProtocol(Protocol(1, 7, None, Some(Set("domainMetadata"))))
    withDomain.commit(Seq(DomainMetadata("user.domain", """{"k":1}""", removed = false)), Operation("X"))
    val snap = log.snapshot()
    assert(snap.version == 4L && snap.tombstones.size == 2)

    log.checkpoint(snap)
    val cp = checkpointFile(table, 4)
    assert(Files.exists(cp))
    val hint = ActionCodec.mapper.readTree(new String(Files.readAllBytes(logDir(table).resolve("_last_checkpoint")), UTF_8))
    assert(hint.get("version").asLong == 4L)
    assert(hint.get("numOfAddFiles").asLong == 3L)

    val actions = Checkpoints.read(hpath(cp), conf).toVector
    assert(hint.get("size").asLong == actions.size.toLong)
    assert(actions.collect { case p: Protocol => p } == Seq(snap.protocol))
    val metas = actions.collect { case m: Metadata => m }
    assert(metas == Seq(snap.metadata))
    assert(metas.head.partitionColumns == Seq("p"))
    assert(metas.head.configuration("custom.key") == "custom value")
    assert(actions.collect { case t: SetTransaction => t }.toSet ==
      Set(SetTransaction("app-1", 3L, Some(now)), SetTransaction("app-2", 7L, None)))
    assert(actions.collect { case d: DomainMetadata => d } == Seq(DomainMetadata("user.domain", """{"k":1}""", removed = false)))

    val adds = actions.collect { case a: AddFile => a }
    assert(adds.toSet == snap.files.toSet)
    val b = adds.find(_.path == "p=__HIVE_DEFAULT_PARTITION__/b.parquet").get
    assert(b.partitionValues == Map("p" -> None))
    assert(b.stats.contains(stats))
    assert(adds.find(_.path == "p=1/a.parquet").get.tags == Map("INSERTION_TIME" -> "1"))
    assert(adds.forall(!_.dataChange))

    val removes = actions.collect { case r: RemoveFile => r }
    assert(removes.map(_.path) == Seq("p=x/d.parquet"), "only the tombstone within the retention period is kept")
    val d = removes.head
    assert(d.deletionTimestamp.contains(now - 10 * 60 * 1000L))
    assert(d.partitionValues.contains(Map("p" -> Some("x"))))
    assert(d.size.contains(77L))
    assert(d.extendedFileMetadata.contains(true))
    assert(!d.dataChange)

    // and a fresh load from the checkpoint gives back the same table
    val reloaded = TableLog.forPath(hpath(table), conf).snapshot()
    assert(reloaded.segment.checkpointVersion.contains(4L))
    assert(reloaded.segment.commitFiles.isEmpty)
    assert(reloaded.protocol == snap.protocol && reloaded.metadata == snap.metadata)
    assert(reloaded.files.toSet == snap.files.toSet)
    assert(reloaded.transactions == snap.transactions)
    assert(reloaded.domains == snap.domains)
    assert(reloaded.tombstones.map(_.path) == Seq("p=x/d.parquet"))
  }

  test("a checkpoint of a table with timestamp_ntz keeps its table features") {
    val table = tempDir()
    val schema = """{"type":"struct","fields":[{"name":"t","type":"timestamp_ntz","nullable":true,"metadata":{}}]}"""
    val log = createTable(table, metadata(schema = schema), Seq(add("a.parquet")))
    log.checkpoint(log.snapshot())
    val back = Checkpoints.read(hpath(checkpointFile(table, 0)), newConf()).collect { case p: Protocol => p }.toSeq
    assert(back == Seq(Protocol(3, 7, Some(Set("timestampNtz")), Some(Set("appendOnly", "invariants", "timestampNtz")))))
  }

  test("time travel before and after a checkpoint; versions out of range are named") {
    val table = tempDir("travel")
    val log = createTable(table, files = Seq(add("a0.parquet")))
    (1 to 14).foreach { v =>
      if (v == 7) {
        val f3 = log.snapshot().files.find(_.path == "f3.parquet").get
        log.startTransaction().commit(Seq(f3.remove(System.currentTimeMillis()), add("f7.parquet")), Operation("WRITE"))
      } else append(log, add(s"f$v.parquet"))
    }
    assert(Files.exists(checkpointFile(table, 10)))
    def expected(v: Int): Set[String] =
      Set("a0.parquet") ++ (1 to v).map(i => s"f$i.parquet") -- (if (v >= 7) Set("f3.parquet") else Set.empty)

    val fresh = TableLog.forPath(hpath(table), newConf())
    (0 to 14).foreach { v =>
      val s = fresh.snapshotAt(v)
      assert(s.version == v)
      assert(s.files.map(_.path).toSet == expected(v), s"files at version $v")
      assert(s.segment.checkpointVersion == (if (v >= 10) Some(10L) else None), s"checkpoint used for version $v")
    }
    assert(fresh.snapshotAt(6).tombstones.isEmpty)
    assert(fresh.snapshotAt(12).tombstones.map(_.path) == Seq("f3.parquet"))
    assert(fresh.snapshotAt(12).segment.commitFiles.map(_.getName) == Seq(name(11), name(12)))
    assert(fresh.snapshot().files.map(_.path).toSet == expected(14))

    val after = intercept[InvalidTableOperationException](fresh.snapshotAt(15))
    assert(after.getMessage.contains("Version 15") && after.getMessage.contains("latest version is 14"))
    val negative = intercept[InvalidTableOperationException](fresh.snapshotAt(-1))
    assert(negative.getMessage.contains("Version -1"))
  }

  test("Intervals parses the retention durations Delta writes") {
    assert(Intervals.parseMillis("interval 1 week").contains(604800000L))
    assert(Intervals.parseMillis("interval 2 hours").contains(7200000L))
    assert(Intervals.parseMillis("30 days").contains(30L * 86400000L))
    assert(Intervals.parseMillis("INTERVAL 5 MINUTES").contains(300000L))
    assert(Intervals.parseMillis("forever").isEmpty)
    assert(TableLog.tombstoneRetentionMillis(Map.empty) == 7L * 86400000L)
  }

  test("row tracking and clustering fields of add and remove actions survive a JSON commit and a checkpoint") {
    val table = tempDir("row-ids")
    createTable(table)
    // As delta-spark writes them for a table with delta.enableRowTracking (and a clustered table's provider).
    Files.write(deltaFile(table, 1L), Seq(
      """{"add":{"path":"a.parquet","partitionValues":{},"size":10,"modificationTime":1,"dataChange":true,""" +
        """"stats":"{\"numRecords\":3}","tags":{"INSERTION_TIME":"1"},"baseRowId":0,"defaultRowCommitVersion":1,""" +
        """"clusteringProvider":"liquid"}}""",
      """{"add":{"path":"b.parquet","partitionValues":{},"size":10,"modificationTime":1,"dataChange":true,""" +
        """"baseRowId":3,"defaultRowCommitVersion":1}}""",
      s"""{"remove":{"path":"old.parquet","deletionTimestamp":${System.currentTimeMillis},"dataChange":true,"baseRowId":7,""" +
        """"defaultRowCommitVersion":1}}""").mkString("\n").getBytes(UTF_8))
    val log = TableLog.forPath(hpath(table), newConf())
    def fields(s: Snapshot) = s.files.sortBy(_.path).map(f => (f.path, f.tags,
      f.extra.map(e => Seq("baseRowId", "defaultRowCommitVersion", "clusteringProvider").map(k => Option(e.get(k)).map(_.asText)))))
    val fromJson = log.snapshot()
    val expected = Seq(
      ("a.parquet", Map("INSERTION_TIME" -> "1"), Some(Seq(Some("0"), Some("1"), Some("liquid")))),
      ("b.parquet", Map.empty[String, String], Some(Seq(Some("3"), Some("1"), None))))
    assert(fields(fromJson) == expected)
    // A commit that re-emits an add (a new deletion-vector entry, RESTORE) writes them back into JSON.
    assert(ActionCodec.parse(ActionCodec.serialize(fromJson.files.head)).asInstanceOf[AddFile].extra ==
      fromJson.files.head.extra)
    log.checkpoint(fromJson)
    SnapshotCache.invalidate(log.tablePath.toString)
    val fromCheckpoint = TableLog.forPath(hpath(table), newConf()).snapshot()
    assert(fromCheckpoint.segment.checkpointVersion.contains(1L))
    assert(fields(fromCheckpoint) == expected)
    assert(fromCheckpoint.tombstones.map(r => r.extra.map(_.get("baseRowId").asLong)) == Seq(Some(7L)))
  }
}
