package io.strata.write

import java.nio.file.{Files, Paths}

import io.strata.SparkTestSession
import io.strata.config.ReadConf
import io.strata.log._
import io.strata.state.DistributedCheckpoint
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{Encoders, Row}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.scalatest.funsuite.AnyFunSuite

/**
 * Blind appends above the distributed-state threshold (forced to 0 here) commit over the version's [[SnapshotHead]]:
 * no file state is built on the driver ([[Snapshot.fileStatesBuilt]]), the commit holds only its own actions, a
 * rival commit between the read and the commit is judged as on the driver path (metadata change: typed conflict;
 * append: both kept), and the checkpoint a due version gets is written by Spark jobs ([[DistributedCheckpoint]]),
 * holding exactly what the driver's checkpoint of that version holds.
 */
class DistributedAppendSuite extends AnyFunSuite with SparkTestSession {
  import spark.implicits._

  private def withConf[T](settings: (String, Option[String])*)(body: => T): T = {
    val before = settings.map { case (k, _) => k -> spark.conf.getOption(k) }
    settings.foreach { case (k, v) => v.fold(spark.conf.unset(k))(spark.conf.set(k, _)) }
    try body finally before.foreach { case (k, v) => v.fold(spark.conf.unset(k))(spark.conf.set(k, _)) }
  }
  private def aboveThreshold[T](body: => T): T = withConf(ReadConf.DistributedFilesKey -> Some("0"))(body)

  private def log(path: String) = TableLog.forPath(new Path(path), sessionHadoopConf())
  private def append(path: String, rows: (Long, String)*): Unit =
    rows.toDF("id", "p").write.format("strata").mode("append").save(path)
  private def table(path: String): Seq[Row] =
    spark.read.format("strata").load(path).select("id", "p").collect().toSeq.sortBy(_.toString)

  /**
   * A partitioned table with a 3-part checkpoint (3 actions a part) at version 3 and commits after it: appends, and a
   * replaceWhere that removes a file (a tombstone in the commits). Built on the driver path.
   */
  private def tableWithCheckpoint(): String = {
    val path = tempDir().resolve("t").toString
    withConf("spark.strata.properties.defaults.checkpointInterval" -> Some("3")) {
      Seq(1L -> "a", 2L -> "b").toDF("id", "p").write.format("strata").partitionBy("p").save(path)
    }
    withConf("spark.databricks.delta.checkpoint.partSize" -> Some("3")) {
      append(path, 3L -> "a"); append(path, 4L -> "c"); append(path, 5L -> "b")
    }
    Seq(6L -> "c").toDF("id", "p").write.format("strata").mode("overwrite").option("replaceWhere", "p = 'c'").save(path)
    CheckpointHook.awaitBackground()
    assert(log(path).lastCheckpointVersion().contains(3L))
    path
  }

  test("a blind append over the head: no file state built, a commit of its own actions, rows as on the driver") {
    val path = tableWithCheckpoint()
    val twin = tableWithCheckpoint()
    val built = Snapshot.fileStatesBuilt
    aboveThreshold(append(path, 7L -> "a", 8L -> "d"))
    assert(Snapshot.fileStatesBuilt == built, "the append built a file state on the driver")
    append(twin, 7L -> "a", 8L -> "d") // the driver path
    val actions = log(path).readCommit(5L)
    assert(actions.forall { case _: CommitInfo | _: AddFile => true; case _ => false }, actions)
    assert(actions.count(_.isInstanceOf[AddFile]) == 2)
    val info = actions.collectFirst { case c: CommitInfo => c.json }.get
    assert(info.get("readVersion").asLong == 4L && info.get("isBlindAppend").asBoolean)
    assert(table(path) == table(twin))
    assert(aboveThreshold(table(path)) == table(twin))
    // The V2 catalog's appends (INSERT INTO, writeTo().append()) commit over the head too.
    val built2 = Snapshot.fileStatesBuilt
    aboveThreshold {
      spark.sql(s"INSERT INTO strata.`$path` VALUES (12, 'b')")
      Seq(13L -> "c").toDF("id", "p").writeTo(s"strata.`$path`").append()
    }
    assert(Snapshot.fileStatesBuilt == built2, "a V2 append built a file state on the driver")
    assert(log(path).readCommit(7L).forall { case _: CommitInfo | _: AddFile => true; case _ => false })
    assert(table(path).map(_.getLong(0)).filter(_ >= 12).toSet == Set(12L, 13L))
    // Idempotent writes: the head's application versions say a version is already committed.
    def appAppend(v: Long): Unit = Seq(9L -> "e").toDF("id", "p").write.format("strata").mode("append")
      .option("txnAppId", "app").option("txnVersion", v.toString).save(path)
    aboveThreshold { appAppend(1); appAppend(1); appAppend(0) }
    assert(table(path).count(_.getLong(0) == 9L) == 1)
    // The next append reads only the commits since the head this JVM holds: with the checkpoint's parts unreadable
    // and the commits before it gone (no full load could rebuild the version), appends to `twin` still commit.
    aboveThreshold(append(twin, 50L -> "a")) // version 6, its head kept
    val twinLog = Paths.get(twin).resolve("_delta_log")
    Files.list(twinLog).toArray.map(_.asInstanceOf[java.nio.file.Path]).foreach { f =>
      val name = f.getFileName.toString
      if (name.contains(".checkpoint.")) Files.write(f, Array[Byte](1, 2, 3))
      if (name.endsWith(".json") && name.take(20).toLong <= 5) Files.delete(f)
    }
    aboveThreshold { append(twin, 51L -> "a"); append(twin, 52L -> "b") }
    assert(log(twin).readCommit(8L).count(_.isInstanceOf[AddFile]) == 1)
    // A transaction over a head has no files to give: a typed error, not an empty answer.
    val e = intercept[InvalidTableOperationException](log(path).startTransaction(log(path).headOption().get)
      .readSnapshot)
    assert(e.condition == "STRATA_NO_FILE_STATE")
  }

  test("INSERT INTO a table this JVM never loaded, above the threshold: its analysis builds no file state") {
    val source = tempDir().resolve("t")
    Seq(1L -> "a").toDF("id", "p").write.format("strata").partitionBy("p").save(source.toString)
    val copy = tempDir().resolve("copy")
    LogTestSupport.copyRecursively(source, copy)
    val built = Snapshot.fileStatesBuilt
    aboveThreshold(spark.sql(s"INSERT INTO strata.`$copy` VALUES (20, 'a')"))
    assert(Snapshot.fileStatesBuilt == built, "the INSERT built a file state on the driver")
    assert(table(copy.toString).map(_.getLong(0)).contains(20L))
  }

  test("a rival commit between the head read and the commit: appends both kept, a metadata change conflicts") {
    val path = tableWithCheckpoint()
    aboveThreshold(withRivalBeforeCommit(append(path, 20L -> "a"))(append(path, 21L -> "b")))
    assert(table(path).map(_.getLong(0)).filter(_ >= 20) == Seq(20L, 21L))
    val versions = log(path).history().map(_.version)
    assert(versions.head == 6L)
    def changeMetadata(): Unit = {
      val txn = log(path).startTransaction()
      val m = txn.metadata.get
      txn.updateMetadata(m.copy(configuration = m.configuration + ("rival.changed" -> "true")))
      txn.commit(Nil, Operation("SET TBLPROPERTIES"))
    }
    val before = table(path)
    val headPath = intercept[MetadataChangedException](aboveThreshold(
      withRivalBeforeCommit(changeMetadata())(append(path, 30L -> "a"))))
    val driverPath = intercept[MetadataChangedException](
      withRivalBeforeCommit(changeMetadata())(append(path, 31L -> "a")))
    assert(headPath.winningVersion == 7L && driverPath.winningVersion == 8L)
    assert(headPath.condition == driverPath.condition)
    assert(table(path) == before)
    // The streaming sink's append batches commit over the head too, each with its application transaction.
    val input = MemoryStream[(Long, String)](Encoders.product[(Long, String)], spark)
    val built = Snapshot.fileStatesBuilt
    aboveThreshold {
      val q = input.toDF().toDF("id", "p").writeStream.format("strata").partitionBy("p")
        .option("checkpointLocation", tempDir("cp").toString).start(path)
      try Seq(60L, 61L).foreach { id => input.addData((id, "s")); q.processAllAvailable() } finally q.stop()
    }
    assert(Snapshot.fileStatesBuilt == built, "a micro-batch built a file state on the driver")
    val batches = (9L to 10L).map(log(path).readCommit)
    assert(batches.forall(_.forall { case _: CommitInfo | _: AddFile | _: SetTransaction => true; case _ => false }))
    assert(batches.map(_.collectFirst { case t: SetTransaction => t.version }) == Seq(Some(0L), Some(1L)))
    assert(table(path).filter(_.getString(1) == "s").map(_.getLong(0)) == Seq(60L, 61L))
  }

  test("a due version's checkpoint is written by Spark jobs, equal to the driver's checkpoint of that version") {
    val path = tableWithCheckpoint() // versions 0-4, checkpoint at 3
    withConf("spark.databricks.delta.checkpoint.partSize" -> Some("4")) {
      aboveThreshold(append(path, 10L -> "a")) // version 5
      val built = Snapshot.fileStatesBuilt
      aboveThreshold(append(path, 11L -> "d")) // version 6: due (interval 3)
      DistributedCheckpoint.awaitBackground()
      assert(Snapshot.fileStatesBuilt == built, "the checkpoint built a file state on the driver")
    }
    val l = log(path)
    assert(l.lastCheckpointVersion().contains(6L))
    val logDir = Paths.get(path).resolve("_delta_log")
    val parts = Files.list(logDir).toArray.map(_.toString)
      .filter(p => Paths.get(p).getFileName.toString.matches("""00000000000000000006\.checkpoint\..*\.parquet"""))
      .sorted.toSeq
    // Protocol, metadata, the live files and a tombstone, 4 actions a part: classic multi-part names.
    assert(parts.size >= 2)
    assert(parts.map(p => Paths.get(p).getFileName.toString) == (1 to parts.size).map(k =>
      f"00000000000000000006.checkpoint.$k%010d.${parts.size}%010d.parquet"))
    val distributed = parts.flatMap(p => Checkpoints.read(new Path(p), l.conf).toSeq)
    // The driver's checkpoint of the same version, written into a copy of the log.
    val copy = tempDir().resolve("copy")
    Files.createDirectories(copy.resolve("_delta_log"))
    Files.list(logDir).toArray.map(_.asInstanceOf[java.nio.file.Path])
      .filterNot(_.getFileName.toString.contains(".checkpoint.")).filterNot(_.getFileName.toString.startsWith("."))
      .foreach(f => Files.copy(f, copy.resolve("_delta_log").resolve(f.getFileName)))
    val copyLog = TableLog.forPath(new Path(copy.toUri), l.conf)
    val driver = copyLog.writeCheckpoint(copyLog.snapshotAt(6L)).files
      .flatMap(p => Checkpoints.read(p, l.conf).toSeq)
    def adds(as: Seq[Action]) = as.collect { case a: AddFile => a }.toSet
    def removes(as: Seq[Action]) = as.collect { case r: RemoveFile => r }.toSet
    def others(as: Seq[Action]) =
      as.filter { case _: AddFile | _: RemoveFile => false; case _ => true }.map(ActionCodec.serialize).toSet
    assert(adds(distributed).size == l.snapshotAt(6L).numFiles && adds(distributed) == adds(driver))
    assert(removes(distributed).size == 1 && removes(distributed) == removes(driver))
    assert(others(distributed) == others(driver))
    // Strata reads the table from the new checkpoint (the log segment starts there) with the same rows.
    assert(l.snapshot().segment.checkpointVersion.contains(6L))
    assert(table(path).map(_.getLong(0)).toSet == Set(1L, 2L, 3L, 5L, 6L, 10L, 11L))
  }

  test("after a checkpoint written by Spark jobs, expired log files go as after the driver's, unless turned off") {
    val path = tempDir().resolve("clean").toString
    val t = s"strata.`$path`"
    spark.sql(s"CREATE TABLE $t (id long, p string) USING strata TBLPROPERTIES ('delta.checkpointInterval' = '2', " +
      "'delta.logRetentionDuration' = 'interval 1 days', 'delta.enableExpiredLogCleanup' = 'false')") // v0
    val l = log(path)
    val fs = l.store.fs
    def commits = l.store.list(l.logPath).flatMap(st => FileNames.classify(st.getPath.getName))
      .collect { case FileNames.DeltaFile(v) => v }.sorted
    def checkpointed(v: Long) = fs.exists(FileNames.checkpointFile(l.logPath, v))
    /** Commits `versions` committed two days ago, one second apart. */
    def age(versions: Range): Unit = versions.foreach(v => fs.setTimes(FileNames.deltaFile(l.logPath, v),
      System.currentTimeMillis() - 2L * 24 * 3600 * 1000 + v * 1000L, -1))
    val built = Snapshot.fileStatesBuilt
    aboveThreshold { append(path, 1L -> "a"); append(path, 2L -> "b") } // v2: checkpointed by Spark jobs
    DistributedCheckpoint.awaitBackground()
    age(0 to 2)
    aboveThreshold { append(path, 3L -> "a"); append(path, 4L -> "b") } // v4: checkpoint, cleanup turned off
    DistributedCheckpoint.awaitBackground()
    assert(Snapshot.fileStatesBuilt == built, "the appends and their checkpoints built a file state on the driver")
    assert(checkpointed(2) && checkpointed(4) && commits == (0L to 4L))
    spark.sql(s"ALTER TABLE $t SET TBLPROPERTIES ('delta.enableExpiredLogCleanup' = 'true')") // v5
    age(0 to 4)
    aboveThreshold(append(path, 5L -> "c")) // v6: checkpoint, then everything below checkpoint 4 (2 days old) goes
    DistributedCheckpoint.awaitBackground()
    assert(checkpointed(6) && checkpointed(4) && !checkpointed(2) && commits == (4L to 6L))
    assert(table(path).map(_.getLong(0)) == (1L to 5L))
    assert(spark.read.format("strata").option("versionAsOf", 4L).load(path).count() == 4L)
    val gone = intercept[InvalidTableOperationException](l.snapshotAt(3L))
    assert(gone.getMessage.contains("no longer available") && gone.getMessage.contains("is 4"), gone.getMessage)
    // checkpointProtection: history before version 7 goes only all at once, so checkpoint 6 (expired) frees nothing
    spark.sql(s"ALTER TABLE $t SET TBLPROPERTIES ('delta.feature.checkpointProtection' = 'supported', " +
      "'delta.requireCheckpointProtectionBeforeVersion' = '7')") // v7
    age(4 to 7)
    aboveThreshold(append(path, 6L -> "c")) // v8: checkpoint; cleanup below 6 would cut into the protected history
    DistributedCheckpoint.awaitBackground()
    assert(checkpointed(8) && checkpointed(4) && commits == (4L to 8L))
  }

  test("a table with V2 checkpoints keeps the driver path above the threshold: its due checkpoint is a V2 one") {
    val path = tempDir().resolve("v2").toString
    spark.sql(s"CREATE TABLE strata.`$path` (id long, p string) USING strata TBLPROPERTIES (" +
      "'delta.checkpointInterval' = '2', 'delta.checkpointPolicy' = 'v2')")
    val built = Snapshot.fileStatesBuilt
    aboveThreshold { append(path, 1L -> "a"); append(path, 2L -> "b") } // v2: due
    CheckpointHook.awaitBackground()
    DistributedCheckpoint.awaitBackground()
    assert(Snapshot.fileStatesBuilt > built, "a V2-checkpoint table's append went without the file state")
    val l = log(path)
    val checkpoints = l.store.list(l.logPath).flatMap(st => FileNames.classify(st.getPath.getName))
      .collect { case c @ (_: FileNames.V2Checkpoint | _: FileNames.CheckpointPart) => c }
    assert(checkpoints == Seq(FileNames.V2Checkpoint(2L)), checkpoints)
    assert(table(path).map(_.getLong(0)) == Seq(1L, 2L))
  }
}
