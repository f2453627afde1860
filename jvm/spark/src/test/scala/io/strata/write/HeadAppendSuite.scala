package io.strata.write

import java.nio.file.{Files, Paths}

import io.strata.SparkTestSession
import io.strata.log._
import io.strata.state.DistributedCheckpoint
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{Encoders, Row}
import org.apache.spark.sql.streaming.{DataStreamWriter, StreamingQuery}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.scalatest.funsuite.AnyFunSuite

/**
 * Blind appends below the distributed-state threshold (its default here): an append by a JVM that does not hold the
 * table's snapshot commits over the version's [[SnapshotHead]] and builds no file state ([[Snapshot.fileStatesBuilt]]),
 * whatever the entry point (path save, INSERT, writeTo, the streaming sink); one by a JVM that holds it starts from
 * that snapshot brought up to date (the commits since only) and leaves the next one held. A due checkpoint over a
 * head is written on the driver for a small table and by Spark jobs for a big one ([[DistributedCheckpoint.onDriver]]).
 */
class HeadAppendSuite extends AnyFunSuite with SparkTestSession {
  import spark.implicits._

  private def withConf[T](settings: (String, String)*)(body: => T): T = {
    val before = settings.map { case (k, _) => k -> spark.conf.getOption(k) }
    settings.foreach { case (k, v) => spark.conf.set(k, v) }
    try body finally before.foreach { case (k, v) => v.fold(spark.conf.unset(k))(spark.conf.set(k, _)) }
  }
  private def log(path: String) = TableLog.forPath(new Path(path), sessionHadoopConf())
  private def append(path: String, rows: (Long, String)*): Unit =
    rows.toDF("id", "p").write.format("strata").mode("append").save(path)
  private def ids(path: String): Seq[Long] =
    spark.read.format("strata").load(path).select("id").as[Long].collect().toSeq.sorted
  private def fileKeys(s: Snapshot) = s.files.map(f => (f.path, f.size, f.partitionValues, f.stats)).toSet

  /**
   * A partitioned table of versions 0-2 (4 files, no checkpoint yet; `delta.checkpointInterval` = `interval`),
   * copied to a fresh path: a table this JVM never loaded (no snapshot, no head held), as in an application whose
   * first operation is the append.
   */
  private def unheldTable(interval: Int = 3, properties: String = ""): String = {
    val source = tempDir().resolve("t").toString
    spark.sql(s"CREATE TABLE strata.`$source` (id long, p string) USING strata PARTITIONED BY (p) TBLPROPERTIES (" +
      s"'delta.checkpointInterval' = '$interval'$properties)")
    append(source, 1L -> "a", 2L -> "b")
    append(source, 3L -> "a")
    val copy = tempDir().resolve("copy")
    LogTestSupport.copyRecursively(Paths.get(source), copy)
    copy.toString
  }

  test("a first-operation append builds no file state; the due checkpoint is the driver's, equal to the replay") {
    val path = unheldTable() // versions 0-2
    val l = log(path)
    val built = Snapshot.fileStatesBuilt
    append(path, 4L -> "c") // version 3: due a checkpoint
    // Written on the driver, in the committing thread (a 4-file table): there when the append returns.
    assert(l.lastCheckpointVersion().contains(3L))
    assert(Snapshot.fileStatesBuilt == built + 1, "only the checkpoint builds a file state")
    val commit = l.readCommit(3L)
    assert(commit.forall { case _: CommitInfo | _: AddFile => true; case _ => false }, commit)
    assert(commit.collectFirst { case c: CommitInfo => c.json.get("readVersion").asLong }.contains(2L))
    // A fresh load (from the checkpoint) holds what the commits replay to (a copy of the log without it).
    val replayed = tempDir().resolve("replay")
    Files.createDirectories(replayed.resolve("_delta_log"))
    Files.list(Paths.get(path).resolve("_delta_log")).toArray.map(_.asInstanceOf[java.nio.file.Path])
      .filter(_.getFileName.toString.matches("""\d{20}\.json"""))
      .foreach(f => Files.copy(f, replayed.resolve("_delta_log").resolve(f.getFileName)))
    val fresh = TableLog.forPath(new Path(path), l.conf)
    val fromCheckpoint = fresh.snapshotAt(3L)
    assert(fromCheckpoint.segment.checkpointVersion.contains(3L))
    val fromCommits = TableLog.forPath(new Path(replayed.toUri), l.conf).snapshotAt(3L)
    assert(fromCommits.segment.checkpointVersion.isEmpty)
    assert(fileKeys(fromCheckpoint) == fileKeys(fromCommits) && fromCheckpoint.numFiles == 4)
    assert(fromCheckpoint.metadata == fromCommits.metadata && fromCheckpoint.protocol == fromCommits.protocol)
    // The checkpointed snapshot stays held: the next append starts from it and leaves the version after it held.
    val built2 = Snapshot.fileStatesBuilt
    append(path, 5L -> "a") // version 4
    assert(Snapshot.fileStatesBuilt == built2 + 1, "the append replayed more than its own commit onto the snapshot")
    assert(l.heldSnapshot(4L).exists(_.numFiles == 5))
    assert(ids(path) == Seq(1L, 2L, 3L, 4L, 5L))
  }

  test("an append by a JVM holding an older snapshot reads only the commits since, and leaves the next one held") {
    val source = unheldTable() // versions 0-2
    val path = unheldTable()
    assert(ids(path) == Seq(1L, 2L, 3L)) // this JVM now holds version 2 of `path`
    // Another writer's version 3 of `path` (its commit and data file copied from `source`).
    append(source, 10L -> "d")
    val add = log(source).readCommit(3L).collectFirst { case a: AddFile => a }.get
    val data = Paths.get(source).resolve(add.path)
    Files.createDirectories(Paths.get(path).resolve(add.path).getParent)
    Files.copy(data, Paths.get(path).resolve(add.path))
    Files.copy(Paths.get(source).resolve("_delta_log").resolve(f"${3}%020d.json"),
      Paths.get(path).resolve("_delta_log").resolve(f"${3}%020d.json"))
    // Neither a full load nor a head could be read now: versions 0-1 are gone (no checkpoint yet).
    (0 to 1).foreach(v => Files.delete(Paths.get(path).resolve("_delta_log").resolve(f"$v%020d.json")))
    val built = Snapshot.fileStatesBuilt
    append(path, 11L -> "a") // version 4, over the held snapshot brought up to version 3
    assert(Snapshot.fileStatesBuilt == built + 2) // the update to version 3, the one after the commit
    assert(log(path).heldSnapshot(4L).exists(_.numFiles == 5))
    assert(ids(path) == Seq(1L, 2L, 3L, 10L, 11L))
  }

  test("over a head: a rival append is kept, a rival metadata change conflicts, as on the snapshot") {
    val path = unheldTable(interval = 10) // no checkpoint due (it would build the state)
    val built = Snapshot.fileStatesBuilt
    withRivalBeforeCommit(append(path, 20L -> "a"))(append(path, 21L -> "b"))
    assert(Snapshot.fileStatesBuilt == built, "an append over a head built a file state")
    assert(log(path).readCommit(4L).collectFirst { case c: CommitInfo => c.json.get("readVersion").asLong }
      .contains(2L))
    val other = unheldTable()
    def changeMetadata(): Unit = {
      val txn = log(other).startTransaction()
      val m = txn.metadata.get
      txn.updateMetadata(m.copy(configuration = m.configuration + ("rival.changed" -> "true")))
      txn.commit(Nil, Operation("SET TBLPROPERTIES"))
    }
    val e = intercept[MetadataChangedException](withRivalBeforeCommit(changeMetadata())(append(other, 30L -> "a")))
    assert(e.winningVersion == 3L)
    assert(ids(path) == Seq(1L, 2L, 3L, 20L, 21L) && ids(other) == Seq(1L, 2L, 3L))
  }

  test("INSERT, writeTo and both streaming sinks append over the head; a big table's checkpoints are Spark jobs") {
    val path = unheldTable()
    val built = Snapshot.fileStatesBuilt
    def stream(sink: DataStreamWriter[Row] => StreamingQuery, ids: Long*): Unit = {
      val input = MemoryStream[(Long, String)](Encoders.product[(Long, String)], spark)
      val q = sink(input.toDF().toDF("id", "p").writeStream.format("strata")
        .option("checkpointLocation", tempDir("cp").toString))
      try ids.foreach { id => input.addData((id, "s")); q.processAllAvailable() } finally q.stop()
    }
    withConf("strata.checkpoint.backgroundMinFiles" -> "3") { // a 3-file table counts as big
      spark.sql(s"INSERT INTO strata.`$path` VALUES (40, 'a')") // version 3: due, by Spark jobs
      DistributedCheckpoint.awaitBackground()
      assert(Snapshot.fileStatesBuilt == built, "the INSERT or its checkpoint built a file state on the driver")
      Seq(41L -> "b").toDF("id", "p").writeTo(s"strata.`$path`").append() // version 4
      assert(Snapshot.fileStatesBuilt == built, "writeTo().append() built a file state on the driver")
      stream(_.partitionBy("p").start(path), 42L, 43L) // versions 5, 6 (due)
      stream(_.toTable(s"strata.`$path`"), 44L) // version 7
      DistributedCheckpoint.awaitBackground()
    }
    assert(Snapshot.fileStatesBuilt == built, "a micro-batch or a checkpoint built a file state on the driver")
    val l = log(path)
    assert(l.lastCheckpointVersion().contains(6L))
    assert(l.snapshotAt(6L).segment.checkpointVersion.contains(6L) && l.snapshotAt(6L).numFiles == 7)
    assert((3L to 7L).map(l.readCommit).forall(_.forall {
      case _: CommitInfo | _: AddFile | _: SetTransaction => true; case _ => false }))
    // A catalog read of a table loaded by its head below the threshold reads the snapshot (aggregates from the log).
    assert(spark.sql(s"SELECT id FROM strata.`$path`").as[Long].collect().sorted.toSeq ==
      Seq(1L, 2L, 3L, 40L, 41L, 42L, 43L, 44L))
    assert(spark.sql(s"SELECT count(*) FROM strata.`$path` WHERE p = 's'").head() == Row(3L))
  }

  test("auto-compaction after an append over the head of a table below the threshold still runs") {
    val path = unheldTable(properties =
      ", 'delta.autoOptimize.autoCompact' = 'true', 'strata.autoCompact.minNumFiles' = '3'")
    append(path, 50L -> "a") // version 3 (a checkpoint on the driver): partition a has 3 small files
    val l = log(path)
    val ops = l.history().map(r => r.version -> r.commitInfo.flatMap(c => Option(c.json.get("operation")))
      .map(_.asText)).toMap
    assert(ops.get(4L).flatten.contains("OPTIMIZE"), ops)
    assert(l.snapshot().files.count(_.partitionValues.get("p").contains(Some("a"))) == 1)
    assert(ids(path) == Seq(1L, 2L, 3L, 50L))
  }
}
