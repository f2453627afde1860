package io.strata.read

import io.strata.SparkTestSession
import io.strata.config.StreamReadOptions
import io.strata.log.{InvalidTableOperationException, StreamSourceChangeException, TableLog}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.streaming.{StreamingQueryException, StreamingQueryProgress, Trigger}
import org.scalatest.funsuite.AnyFunSuite

import java.nio.file.{Files, Paths}
import scala.collection.mutable
import scala.jdk.CollectionConverters._

/**
 * The streaming source: appended rows in commit order, read limits, where a stream starts, commits it skips
 * (dataChange=false) or stops at (rows removed or rewritten), restarts from a checkpoint, rival commits landing while
 * a micro-batch runs, schema changes, catalog tables and column order.
 */
/** One run of a stream: each micro-batch's ids in read order, and the query's progress. */
private final case class Run(batches: Seq[(Long, Seq[Long])], progress: Seq[StreamingQueryProgress]) {
  def ids: Seq[Long] = batches.flatMap(_._2)
  def sourceMetrics: Seq[Map[String, String]] = progress.map(_.sources.head.metrics.asScala.toMap)
}

class StreamingSourceSuite extends AnyFunSuite with SparkTestSession {
  private def logOf(path: String) = TableLog.forPath(new Path(path), new Configuration())

  /** Appends ids [from, until) as `files` files (one commit). */
  private def append(path: String, from: Long, until: Long, files: Int = 1): Unit =
    spark.range(from, until, 1, files).selectExpr("id", "cast(id % 2 as string) as p")
      .write.format("strata").mode("append").save(path)


  /**
   * Streams `path` with `options` (Trigger.AvailableNow) into foreachBatch, each batch's ids in read order. `during`
   * runs inside the first micro-batch, after its rows were read: a rival commit at a chosen point of the stream.
   */
  private def drain(path: String, checkpoint: String, options: Map[String, String] = Map.empty,
                    during: () => Unit = () => (), read: Option[() => DataFrame] = None): Run = {
    val batches = mutable.ArrayBuffer.empty[(Long, Seq[Long])]
    var fired = false
    val df = read.map(_()).getOrElse(spark.readStream.format("strata").options(options).load(path))
    val q = df.writeStream.option("checkpointLocation", checkpoint).trigger(Trigger.AvailableNow())
      .foreachBatch { (batch: DataFrame, id: Long) =>
        batches += id -> batch.select("id").collect().map(_.getLong(0)).toSeq
        if (!fired) { fired = true; during() }
      }.start()
    q.awaitTermination()
    Run(batches.toSeq, q.recentProgress.toSeq)
  }

  /**
   * A running query on `path` (the default trigger: a micro-batch whenever something new is committed) into
   * foreachBatch. `afterRead(batchId)` runs in each micro-batch once its ids were read, before they are recorded: it
   * may commit a rival, or throw to fail the batch as a driver dying there would (offsets logged, batch not done).
   */
  private final class RunningStream(path: String, checkpoint: String, options: Map[String, String],
                                    afterRead: Long => Unit = _ => ()) {
    val batches = mutable.ArrayBuffer.empty[(Long, Seq[Long])]
    val query = spark.readStream.format("strata").options(options).load(path).writeStream
      .option("checkpointLocation", checkpoint)
      .foreachBatch { (batch: DataFrame, id: Long) =>
        val ids = batch.select("id").collect().map(_.getLong(0)).toSeq.sorted
        afterRead(id)
        batches += id -> ids; ()
      }.start()
    /** Returns once every commit made before the call was read (or the query failed: then it throws). */
    def step(): Unit = query.processAllAvailable()
    def ids: Seq[Long] = batches.flatMap(_._2).toSeq
    def stop(): Unit = query.stop()
  }

  private def failure(body: => Any): Throwable = {
    val e = intercept[StreamingQueryException](body)
    Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).find(c =>
      c.isInstanceOf[StreamSourceChangeException] || c.isInstanceOf[InvalidTableOperationException]).getOrElse(e)
  }

  test("batches take files in commit order within maxFilesPerTrigger / maxBytesPerTrigger; every row once") {
    val dir = tempDir("src-limits")
    val path = dir.resolve("t").toString
    append(path, 0, 20, files = 2) // v0: 2 files
    append(path, 20, 50, files = 3) // v1: 3 files
    append(path, 50, 60, files = 1) // v2: 1 file
    val byFiles = drain(path, dir.resolve("cp1").toString, Map("maxFilesPerTrigger" -> "2", "startingVersion" -> "0"))
    assert(byFiles.batches.map(_._2.size) == Seq(20, 20, 20), byFiles.batches) // 2 files of v0 | 2 of v1 | 1 of v1 + v2
    assert(byFiles.sourceMetrics.map(_("numFiles")) == Seq("2", "2", "2"))
    assert(byFiles.ids.sorted == (0L until 60L))
    // Commit order: every id of a batch comes from a version no later than any id of the next batch.
    def versionOf(id: Long) = if (id < 20) 0 else if (id < 50) 1 else 2
    byFiles.batches.map(_._2.map(versionOf)).sliding(2).foreach { case Seq(a, b) => assert(a.max <= b.min) }
    val m = byFiles.sourceMetrics.last
    assert(m("tableVersion") == "2" && m("latestTableVersion") == "2" && m("numChangeCommitsSkipped") == "0")

    // One byte: one file per batch (a batch always takes at least one file).
    val byBytes = drain(path, dir.resolve("cp2").toString, Map("maxBytesPerTrigger" -> "1", "startingVersion" -> "1"))
    assert(byBytes.batches.size == 4 && byBytes.ids.sorted == (20L until 60L))
    // Unlimited by size: the default 1,000-file limit takes everything in one batch.
    val all = drain(path, dir.resolve("cp3").toString, Map("maxBytesPerTrigger" -> "1g"))
    assert(all.batches.size == 1 && all.ids.sorted == (0L until 60L))
  }

  test("a restarted query continues from its checkpoint; Trigger.AvailableNow stops at the version latest when " +
    "it started, a commit landing during its batch comes in the next run") {
    val dir = tempDir("src-restart")
    val (path, cp) = (dir.resolve("t").toString, dir.resolve("cp").toString)
    append(path, 0, 10)
    // The rival append commits while batch 0 runs: after the trigger fixed its last version, so not in this run.
    val first = drain(path, cp, during = () => append(path, 10, 15))
    assert(first.batches.map(_._2.sorted) == Seq(0L until 10L))
    append(path, 15, 20, files = 2)
    val second = drain(path, cp)
    assert(second.ids.sorted == (10L until 20L), "only the commits after the checkpoint's offset")
    assert(second.batches.size == 1)
    assert(drain(path, cp).batches.isEmpty, "nothing new: no batch")
  }

  test("Strata source to Strata sink: a batch replayed after the driver died before Spark recorded it is skipped " +
    "(its txn is in B) and commits nothing; every row of A reaches B once") {
    val dir = tempDir("src-replay")
    val (a, b, cp) = (dir.resolve("a").toString, dir.resolve("b").toString, dir.resolve("cp").toString)
    append(a, 0, 10, files = 2)
    append(a, 10, 20, files = 2)
    def run(): Seq[StreamingQueryProgress] = {
      val q = spark.readStream.format("strata").option("maxFilesPerTrigger", "1").load(a).writeStream
        .format("strata").option("checkpointLocation", cp).trigger(Trigger.AvailableNow()).start(b)
      q.awaitTermination()
      q.recentProgress.toSeq
    }
    def idsOf(path: String) = spark.read.format("strata").load(path).select("id").collect().map(_.getLong(0)).sorted
      .toSeq
    run()
    val versions = logOf(b).snapshot().version
    assert(versions == 3 && idsOf(b) == (0L until 20L), "4 files, one per batch")
    // As if the driver died after batch 3's commit to B but before Spark wrote commits/3: the restart runs batch 3
    // again with the offsets in offsets/3; the sink finds its txn in B and skips it before reading any row.
    val commitsDir = Paths.get(cp, "commits")
    Files.delete(commitsDir.resolve("3"))
    Files.deleteIfExists(commitsDir.resolve(".3.crc"))
    val replay = run()
    assert(replay.map(p => (p.batchId, p.numInputRows, p.sink.metrics.get("skipped"))) == Seq((3L, 0L, "true")),
      "batch 3 ran again and was skipped without reading its rows")
    assert(logOf(b).snapshot().version == versions && idsOf(b) == (0L until 20L), "the replay committed nothing")
    append(a, 20, 25)
    run()
    assert(idsOf(b) == (0L until 25L))
    val txns = (0L to logOf(b).snapshot().version).map(v => logOf(b).readCommit(v).collect {
      case t: io.strata.log.SetTransaction => t.version })
    assert(txns == (0L to 4L).map(Seq(_)), "one txn per batch, version = batch id")
  }

  test("optimize (dataChange=false) streams nothing; a DELETE stops the stream after the rows before it, " +
    "skipChangeCommits skips it") {
    val dir = tempDir("src-changes")
    val (path, cp) = (dir.resolve("t").toString, dir.resolve("cp").toString)
    append(path, 0, 10, files = 3)
    append(path, 10, 20, files = 3)
    spark.sql(s"CALL strata.system.optimize(table => '$path')")
    append(path, 20, 25)
    assert(drain(path, cp).ids.sorted == (0L until 25L), "compacted rows are not streamed twice")

    append(path, 25, 30)
    spark.sql(s"DELETE FROM strata.`$path` WHERE id = 3")
    append(path, 30, 35)
    val e = failure(drain(path, cp))
    val deleteVersion = logOf(path).snapshot().version - 1
    assert(e.isInstanceOf[StreamSourceChangeException], e)
    assert(e.getMessage.contains(s"Version $deleteVersion of") && e.getMessage.contains("(DELETE)") &&
      e.getMessage.contains("skipChangeCommits=true"), e.getMessage)
    // The rows appended before the DELETE were delivered before the stream stopped: a restart starts at the DELETE.
    val skipping = drain(path, cp, Map("skipChangeCommits" -> "true"))
    assert(skipping.ids.sorted == (30L until 35L))
    assert(skipping.sourceMetrics.last("numChangeCommitsSkipped") == "1")
  }

  test("start: current rows (a deleted row is not streamed; deletion vectors apply), startingVersion latest, " +
    "startingTimestamp in a non-UTC session; bad options name the fix") {
    val dir = tempDir("src-start")
    val path = dir.resolve("t").toString
    append(path, 0, 10)
    spark.sql(s"ALTER TABLE strata.`$path` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    spark.sql(s"DELETE FROM strata.`$path` WHERE id IN (2, 7)") // a deletion vector
    assert(logOf(path).snapshot().files.exists(_.deletionVector.isDefined))
    append(path, 10, 12)
    val current = drain(path, dir.resolve("cp1").toString)
    assert(current.ids.sorted == (0L until 12L).filterNot(Set(2L, 7L)))
    val latest = drain(path, dir.resolve("cp2").toString, Map("startingVersion" -> "latest"))
    assert(latest.batches.isEmpty)

    // Commit times set to known instants (local file system: a commit's time is its file's modification time).
    val log = Paths.get(path, "_delta_log")
    val v = logOf(path).snapshot().version
    (0L to v).foreach(i => log.resolve(f"$i%020d.json").toFile.setLastModified(1000000L * (i + 1)))
    val zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try {
      // Version 3 (the append of 10, 11) was committed at 4,000 s after the epoch: 1969-12-31 17:06:40 in Los Angeles.
      val fromTs = drain(path, dir.resolve("cp3").toString, Map("startingTimestamp" -> "1969-12-31 17:00:00"))
      assert(fromTs.ids.sorted == Seq(10L, 11L))
    } finally spark.conf.set("spark.sql.session.timeZone", zone)

    val unknown = failure(drain(path, dir.resolve("cp4").toString, Map("maxFilesPerTriger" -> "1")))
    assert(unknown.getMessage.contains("Unknown option 'maxFilesPerTriger'. Did you mean 'maxFilesPerTrigger'?"))
    val beyond = failure(drain(path, dir.resolve("cp5").toString, Map("startingVersion" -> "99")))
    assert(beyond.getMessage.contains(s"the latest version of strata.`$path` is $v"), beyond.getMessage)
  }

  test("startingVersion latest on a running query: the commits after its start arrive once, the rows before it " +
    "never; a restart goes on from the checkpoint") {
    val dir = tempDir("src-latest-running")
    val (path, cp) = (dir.resolve("t").toString, dir.resolve("cp").toString)
    append(path, 0, 10)
    val latest = Map("startingVersion" -> "latest")
    val run = new RunningStream(path, cp, latest)
    try {
      run.step()
      assert(run.batches.isEmpty)
      append(path, 10, 13)
      run.step()
      append(path, 13, 15, files = 2)
      run.step()
      assert(run.ids == (10L until 15L), run.batches)
    } finally run.stop()
    append(path, 15, 17)
    val restarted = new RunningStream(path, cp, latest)
    try {
      restarted.step()
      assert(restarted.batches.map(_._1) == Seq(2L) && restarted.ids == Seq(15L, 16L), restarted.batches)
    } finally restarted.stop()
  }

  test("the start is fixed once the first micro-batch is planned: batch 0 failed and run again after a restart " +
    "reads what it first planned (startingVersion latest, current rows); a restart before any batch starts anew, " +
    "as delta-spark") {
    val dir = tempDir("src-start-restart")
    val path = dir.resolve("t").toString
    append(path, 0, 10)
    // Batch 0 fails after a rival commit landed: Spark logged its end offset but re-runs it from initialOffset().
    def failFirst(rival: () => Unit): Long => Unit = {
      var failed = false
      id => if (id == 0 && !failed) { failed = true; rival(); throw new IllegalStateException("batch 0 fails") }
    }
    val cp1 = dir.resolve("cp1").toString
    val latest = Map("startingVersion" -> "latest")
    val first = new RunningStream(path, cp1, latest, failFirst(() => append(path, 20, 22)))
    try {
      first.step()
      append(path, 10, 12)
      intercept[StreamingQueryException](first.step())
    } finally first.stop()
    val again = new RunningStream(path, cp1, latest)
    try {
      again.step()
      assert(again.batches == Seq(0L -> Seq(10L, 11L), 1L -> Seq(20L, 21L)), "batch 0 as planned, then the rival")
    } finally again.stop()

    // No start option: batch 0 is the current rows (versions 0 to 2); the rival must come once, after them.
    val cp2 = dir.resolve("cp2").toString
    val current = new RunningStream(path, cp2, Map.empty, failFirst(() => append(path, 30, 32)))
    try intercept[StreamingQueryException](current.step()) finally current.stop()
    val currentAgain = new RunningStream(path, cp2, Map.empty)
    try {
      currentAgain.step()
      assert(currentAgain.batches == Seq(0L -> ((0L until 12L) ++ (20L until 22L)), 1L -> Seq(30L, 31L)))
    } finally currentAgain.stop()

    // A query stopped before its first batch was planned kept no start: restarted, 'latest' is resolved again, so a
    // commit made while it was stopped is not streamed (delta-spark 4.4.0 does the same); later ones are.
    val cp3 = dir.resolve("cp3").toString
    val idle = new RunningStream(path, cp3, latest)
    try idle.step() finally idle.stop()
    append(path, 40, 42)
    val resumed = new RunningStream(path, cp3, latest)
    try {
      resumed.step()
      assert(resumed.batches.isEmpty)
      append(path, 42, 44)
      resumed.step()
      assert(resumed.batches == Seq(0L -> Seq(42L, 43L)))
    } finally resumed.stop()
  }

  test("startingTimestamp after the latest commit is refused before any batch, naming both times in the session " +
    "time zone; at the latest commit's time exactly it starts there") {
    val dir = tempDir("src-ts-after")
    val path = dir.resolve("t").toString
    append(path, 0, 3)
    append(path, 3, 5)
    val log = Paths.get(path, "_delta_log")
    (0L to 1L).foreach(i => log.resolve(f"$i%020d.json").toFile.setLastModified(1000000L * (i + 1)))
    val zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try {
      // Version 1 was committed at 2,000 s after the epoch: 1969-12-31 16:33:20 in Los Angeles.
      val cp = dir.resolve("cp1")
      val e = failure(drain(path, cp.toString, Map("startingTimestamp" -> "1969-12-31 16:33:20.001")))
      assert(e.isInstanceOf[InvalidTableOperationException], e)
      assert(e.asInstanceOf[InvalidTableOperationException].messageText == "Option startingTimestamp is 1969-12-31 16:33:20.001 America/Los_Angeles but the " +
        s"latest commit of strata.`$path` (version 1) was at 1969-12-31 16:33:20.000 America/Los_Angeles. Use a " +
        "timestamp at or before that one, or startingVersion=latest to stream only the commits after the latest.")
      assert(!Files.exists(cp.resolve("offsets").resolve("0")), "no micro-batch was planned")
      val atLatest = drain(path, dir.resolve("cp2").toString, Map("startingTimestamp" -> "1969-12-31 16:33:20"))
      assert(atLatest.ids.sorted == Seq(3L, 4L))
    } finally spark.conf.set("spark.sql.session.timeZone", zone)
  }

  test("catalog tables (strata and spark_catalog), a partition column in the middle, a schema change") {
    val dir = tempDir("src-catalog")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.srcdb")
    spark.sql("CREATE TABLE strata.srcdb.events (id BIGINT, day DATE, v STRING) USING strata PARTITIONED BY (day)")
    spark.sql("INSERT INTO strata.srcdb.events VALUES (1, DATE'2026-01-01', 'a'), (2, DATE'2026-01-02', 'b')")
    val rows = mutable.ArrayBuffer.empty[Row]
    // A running query (no AvailableNow cap): it meets the schema change the moment it is committed.
    val running = spark.readStream.table("strata.srcdb.events").writeStream
      .option("checkpointLocation", dir.resolve("cp").toString)
      .foreachBatch { (b: DataFrame, _: Long) =>
        assert(b.columns.toSeq == Seq("id", "day", "v"))
        rows ++= b.collect(); ()
      }.start()
    running.processAllAvailable()
    assert(rows.map(_.toString).sorted == spark.table("strata.srcdb.events").collect().map(_.toString).sorted.toSeq)

    spark.sql("ALTER TABLE strata.srcdb.events ADD COLUMN extra INT")
    spark.sql("INSERT INTO strata.srcdb.events VALUES (3, DATE'2026-01-03', 'c', 30)")
    val changed = failure(running.processAllAvailable())
    assert(changed.getMessage.contains("changed at version 2") && changed.getMessage.contains("extra int"),
      changed.getMessage)
    rows.clear()
    val q = spark.readStream.table("strata.srcdb.events").writeStream
      .option("checkpointLocation", dir.resolve("cp").toString).trigger(Trigger.AvailableNow())
      .foreachBatch { (b: DataFrame, _: Long) => rows ++= b.collect(); () }.start()
    q.awaitTermination()
    assert(rows.map(_.toString) == Seq("[3,2026-01-03,c,30]"), "the restarted query reads the new schema")

    spark.sql("CREATE TABLE spark_catalog.default.src_session (id BIGINT, s STRING) USING strata")
    spark.sql("INSERT INTO spark_catalog.default.src_session VALUES (7, 'x')")
    val session = drain("", dir.resolve("cp2").toString, read = Some(() => spark.readStream.table("src_session")))
    assert(session.ids == Seq(7L))
  }

  test("a table recreated at the same path is refused; options parse strictly") {
    val dir = tempDir("src-replaced")
    val (path, cp) = (dir.resolve("t").toString, dir.resolve("cp").toString)
    append(path, 0, 3)
    assert(drain(path, cp).ids.size == 3)
    org.apache.commons.io.FileUtils.deleteDirectory(new java.io.File(path))
    append(path, 0, 3)
    val e = failure(drain(path, cp))
    assert(e.getMessage.contains("was replaced"), e.getMessage)

    def parseError(o: Map[String, String]) = intercept[InvalidTableOperationException](StreamReadOptions.parse(o))
      .getMessage
    assert(parseError(Map("startingVersion" -> "1", "startingTimestamp" -> "2026-01-01")).contains("pick one"))
    assert(parseError(Map("ignoreDeletes" -> "true")).contains("skipChangeCommits=true"))
    assert(parseError(Map("maxBytesPerTrigger" -> "lots")).contains("64m"))
    assert(StreamReadOptions.parse(Map("maxBytesPerTrigger" -> "64m")).maxBytesPerTrigger.contains(64L << 20))
    assert(StreamReadOptions.parse(Map("STARTINGVERSION" -> "Latest")).startingVersion.isDefined)
  }
}
