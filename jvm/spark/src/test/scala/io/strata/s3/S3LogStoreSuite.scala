package io.strata.s3

import java.nio.file.Files
import java.util.concurrent.ConcurrentLinkedQueue

import io.strata.log._
import org.apache.hadoop.fs.{FileAlreadyExistsException, Path}
import org.scalatest.funsuite.AnyFunSuite

import scala.jdk.CollectionConverters._

/** The S3 log store against a real S3 server (s3proxy on localhost) through Hadoop's real S3A client. */
class S3LogStoreSuite extends AnyFunSuite with S3TestTables {
  test("s3a:// and s3:// (mapped to S3A) get the S3 log store; s3:// served by another file system is refused") {
    assert(logOf(freshKey("choose")).store.isInstanceOf[S3LogStore])
    val s3 = TableLog.forPath(new Path(s"s3://${server.bucket}/${freshKey("choose")}"),
      server.conf("fs.s3.impl" -> S3LogStore.S3AFileSystemClass))
    assert(s3.store.isInstanceOf[S3LogStore])
    val other = intercept[UnsafeLogStoreException](LogStore.forPath(new Path(s"s3://${server.bucket}/x"),
      server.conf("fs.s3.impl" -> "org.apache.hadoop.fs.RawLocalFileSystem")))
    assert(other.getMessage.contains(s"spark.hadoop.fs.s3.impl=${S3LogStore.S3AFileSystemClass}"), other.getMessage)
  }

  test("putIfAbsent is one conditional PUT: a second writer of the version loses, a retry of our own PUT lands") {
    val store = logOf(freshKey("put")).store
    val path = new Path(server.uri(freshKey("put") + "/_delta_log/00000000000000000000.json"))
    store.putIfAbsent(path, Seq("""{"mine":1}"""))
    val e = intercept[FileAlreadyExistsException](store.putIfAbsent(path, Seq("""{"theirs":2}""")))
    assert(e.getMessage.contains("already exists"))
    assert(e.getCause.getClass.getSimpleName == "RemoteFileChangedException" && e.getCause.getMessage.contains("412"),
      s"the server refused the conditional PUT (412), no HEAD decided it: ${e.getCause}")
    assert(store.read(path) == Seq("""{"mine":1}"""), "the first content stays")
    // The same bytes again is what a PUT whose response was lost looks like when retried: the put landed.
    store.putIfAbsent(path, Seq("""{"mine":1}"""))
    assert(store.read(path) == Seq("""{"mine":1}"""))
  }

  test("a commit's stamp: a listing and a HEAD agree (ETag); a log put back at the held version is another history") {
    val key = freshKey("stamp")
    val log = logOf(key)
    create(log)
    log.startTransaction().commit(Seq(add("a.parquet")), Operation("WRITE")) // version 1
    val commit = FileNames.deltaFile(log.logPath, 1L)
    val listed = log.store.list(log.logPath).find(_.getPath.getName == commit.getName).map(FileStamp.of).get
    val probed = log.commitStamp(1L).get
    assert(listed.etag.isDefined && probed.etag.isDefined && listed.sameFile(probed), s"$listed vs $probed")
    // Consecutive commits from the held snapshot pass the check before each put.
    log.startTransaction().commit(Seq(add("b.parquet")), Operation("WRITE")) // version 2
    val txn = log.startTransaction() // reads version 2
    // Version 2 replaced by another history of the same length (S3 keeps seconds: within one, only the ETag differs).
    val v2 = FileNames.deltaFile(log.logPath, 2L)
    val lines = log.store.read(v2)
    log.store.fs.delete(v2, false)
    log.store.putIfAbsent(v2, lines.map(_.replace("b.parquet", "c.parquet")))
    val e = intercept[LogReplacedException](txn.commit(Seq(add("mine.parquet")), Operation("WRITE")))
    assert(e.winningVersion == 2L, e.getMessage)
    assert(!logObjects(key).contains(f"${3}%020d.json"), "nothing committed")
    assert(log.snapshot().files.map(_.path).toSet == Set("a.parquet", "c.parquet"))
  }

  test("8 threads racing to create each of 15 versions: exactly one wins each, the others lose the race") {
    val key = freshKey("race")
    val store = logOf(key).store
    val (threads, versions) = (8, 15)
    val wins = new ConcurrentLinkedQueue[(Int, Int)]()
    val losses = new ConcurrentLinkedQueue[(Int, Int)]()
    val race = ThreadRace(threads) { t =>
      () => (0 until versions).foreach { v =>
        val path = FileNames.deltaFile(new Path(server.uri(s"$key/_delta_log")), v.toLong)
        try { store.putIfAbsent(path, Seq(s"""{"writer":$t}""")); wins.add((v, t)) }
        catch { case _: FileAlreadyExistsException => losses.add((v, t)) }
      }
    }
    assert(race.finished)
    assert(race.errors.isEmpty, race.errors.mkString("; "))
    val winners = wins.asScala.toSeq.groupBy(_._1)
    assert(winners.keySet == (0 until versions).toSet)
    winners.foreach { case (v, ws) =>
      assert(ws.size == 1, s"version $v has ${ws.size} winners: $ws")
      val content = objectText(f"$key/_delta_log/$v%020d.json")
      assert(content == s"""{"writer":${ws.head._2}}""" + "\n", s"version $v holds its winner's content")
    }
    assert(losses.size == versions * (threads - 1))
  }

  test("conditional writes disabled in S3A: commits are refused with the setting named, nothing is written") {
    val key = freshKey("disabled")
    val log = logOf(key, S3LogStore.ConditionalCreateEnabledKey -> "false")
    val e = intercept[UnsafeLogStoreException](create(log))
    assert(e.getMessage.contains(S3LogStore.ConditionalCreateEnabledKey + "=true"), e.getMessage)
    assert(e.getMessage.contains("conditional PUT"))
    assert(logObjects(key).isEmpty, s"nothing committed: ${logObjects(key)}")
    assert(log.snapshotOption().isEmpty)
    // Reading is not refused: the same table, once created by a capable writer, reads through that client.
    create(logOf(key))
    assert(log.snapshot().version == 0L)
  }

  test("single writer: commits, checkpoints written whole (no temporary objects), time travel") {
    val key = freshKey("checkpoint")
    val log = logOf(key)
    create(log, Map(TableLog.CheckpointIntervalKey -> "3"))
    (1 to 7).foreach(i => assert(log.startTransaction().commit(Seq(add(s"f$i.parquet")), Operation("WRITE")).version == i))
    val objects = logObjects(key)
    assert(objects.contains("00000000000000000003.checkpoint.parquet"), objects)
    assert(objects.contains("00000000000000000006.checkpoint.parquet"), objects)
    assert(objects.contains("_last_checkpoint"))
    assert(!objects.exists(o => o.endsWith(".tmp") || o.startsWith(".")), s"no temporary objects: $objects")
    val hint = objectText(s"$key/_delta_log/_last_checkpoint")
    assert(hint.contains("\"version\":6"), hint)

    val fresh = logOf(key)
    val latest = fresh.snapshot()
    assert(latest.version == 7L)
    assert(latest.segment.checkpointVersion.contains(6L))
    assert(latest.files.map(_.path).toSet == (1 to 7).map(i => s"f$i.parquet").toSet)
    val at4 = fresh.snapshotAt(4L)
    assert(at4.segment.checkpointVersion.contains(3L))
    assert(at4.files.map(_.path).toSet == (1 to 4).map(i => s"f$i.parquet").toSet)
  }

  test("3 JVM processes racing to create each of 8 versions, released together per version: one wins each") {
    val key = freshKey("process-race")
    val (processes, versions) = (3, 8)
    val barrier = Files.createTempDirectory("s3-version-race")
    try {
      val props = server.hadoopSettings.map { case (k, v) => s"-D${ConcurrentAppender.HadoopPrefix}$k=$v" }.toSeq
      val outs = (1 to processes).map(i => barrier.resolve(s"out-$i.txt"))
      val procs = (1 to processes).map(i => io.strata.ChildJvm.startWith(props ++ Seq("-Xmx384m", "-XX:TieredStopAtLevel=1"),
        outs(i - 1).toFile, "io.strata.s3.VersionRacer", server.uri(key), i.toString,
        processes.toString, versions.toString, barrier.toString))
      def out(i: Int): Seq[String] = Files.readAllLines(outs(i - 1)).asScala.toSeq
      try procs.zipWithIndex.foreach { case (p, i) =>
        assert(p.waitFor(180, java.util.concurrent.TimeUnit.SECONDS), s"process ${i + 1} did not finish")
        assert(p.exitValue == 0, s"process ${i + 1} failed:\n${out(i + 1).mkString("\n")}")
      } finally procs.foreach(p => if (p.isAlive) p.destroyForcibly())
      val outcomes = (1 to processes).flatMap(i => out(i).filter(l => l.startsWith("WON ") || l.startsWith("LOST "))
        .map(l => (l.split(" ")(1).toInt, i, l)))
      (0 until versions).foreach { v =>
        val of = outcomes.filter(_._1 == v)
        val winners = of.filter(_._3.startsWith("WON "))
        assert(of.size == processes, s"every process reported version $v: $of")
        assert(winners.size == 1, s"version $v: exactly one winner: $of")
        assert(of.filter(_._3.startsWith("LOST ")).forall(_._3.contains("412")), s"the server refused the losers: $of")
        assert(objectText(f"$key/_delta_log/$v%020d.json") == s"""{"writer":${winners.head._2},"version":$v}""" + "\n")
      }
      info("wins per process: " + (1 to processes).map(i => outcomes.count(o => o._2 == i && o._3.startsWith("WON "))).mkString(", "))
    } finally LogTestSupport.deleteRecursively(barrier)
  }

  test("4 JVM processes x 25 appends to one S3 table: 100 versions, every commit once") {
    val key = freshKey("jvms")
    create(logOf(key))
    val barrier = Files.createTempDirectory("s3-race-barrier")
    try {
    val (processes, perProcess) = (4, 25)
    val total = processes * perProcess
    val (committed, conflicts) = ConcurrentAppender.runWriters(server.uri(key), barrier, processes, perProcess,
      "append", server.hadoopSettings)
    info(s"$total commits by $processes JVMs, max attempts ${committed.map(_._3).max}")
    assert(conflicts.isEmpty)
    assert(committed.size == total)
    assert(committed.map(_._1).sorted == (1L to total.toLong), "each commit got its own version, 1..100, no gaps")
    assert(committed.exists(_._3 > 1), "the writers really raced for versions")
    val byVersion = committed.map(c => c._1 -> c._2).toMap
    val log = logOf(key)
    (1L to total.toLong).foreach { v =>
      val adds = log.store.read(FileNames.deltaFile(log.logPath, v)).map(ActionCodec.parse).collect { case a: AddFile => a.path }
      assert(adds == Seq(byVersion(v)), s"commit $v holds $adds, its writer reported ${byVersion(v)}")
    }
    val expected = for (w <- 1 to processes; i <- 1 to perProcess) yield s"w$w-$i.parquet"
    assert(log.snapshot().files.map(_.path).sorted == expected.sorted)
    assert(!logObjects(key).exists(_.endsWith(".tmp")))
    } finally LogTestSupport.deleteRecursively(barrier)
  }
}
