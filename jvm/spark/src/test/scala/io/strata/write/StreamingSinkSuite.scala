package io.strata.write

import java.nio.file.{Files, Paths}

import io.strata.SparkTestSession
import io.strata.log.{AddFile, CommitInfo, LogStore, RecordingLogStore, SetTransaction, TableLog}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{Encoders, SparkSession}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.streaming.StreamingQuery
import org.scalatest.funsuite.AnyFunSuite

import scala.jdk.CollectionConverters._

/**
 * The streaming sink: path tables (V1 sink) and catalog tables (V2 streaming write), append and complete mode,
 * exactly-once commits (one `txn` per micro-batch, replays skipped inside the commit), txnAppId across checkpoints.
 */
class StreamingSinkSuite extends AnyFunSuite with SparkTestSession {
  private def logOf(path: String) = TableLog.forPath(new Path(path), new Configuration())

  /** Per version from `from`: its txn actions and commitInfo. */
  private def commits(path: String, from: Long = 0L): Seq[(Long, Seq[SetTransaction], CommitInfo)] = {
    val log = logOf(path)
    (from to log.snapshot().version).map { v =>
      val actions = log.readCommit(v)
      (v, actions.collect { case t: SetTransaction => t }, actions.collectFirst { case c: CommitInfo => c }.get)
    }
  }

  /** Makes Spark run the query's last micro-batch again on restart: as if the driver died before recording it. */
  private def forgetLastBatch(checkpoint: String): Long = {
    val commitsDir = Paths.get(checkpoint, "commits")
    val last = Files.list(commitsDir).iterator().asScala.map(_.getFileName.toString).filter(_.forall(_.isDigit))
      .map(_.toLong).max
    Files.delete(commitsDir.resolve(last.toString))
    Files.deleteIfExists(commitsDir.resolve(s".$last.crc"))
    last
  }

  private def run(query: StreamingQuery)(batches: (() => Unit)*): Unit =
    batches.foreach { add => add(); query.processAllAvailable() }

  test("path sink, append, partitioned: one commit + txn per micro-batch; a replayed batch is a no-op; " +
    "the snapshot cache serves every batch and checkpoints follow the interval") {
    // A session of its own: it records every log read, and new tables get a checkpoint every 3 commits.
    val session = spark.newSession()
    session.conf.set(LogStore.implKey("file"), classOf[RecordingLogStore].getName)
    session.conf.set("spark.strata.properties.defaults.checkpointInterval", "3")
    val dir = tempDir("stream-path")
    val (path, checkpoint) = (dir.resolve("t").toString, dir.resolve("cp").toString)
    val input = MemoryStream[(Long, String)](Encoders.product[(Long, String)], session)
    def start() = input.toDF().toDF("id", "p").writeStream.format("strata").partitionBy("p")
      .option("checkpointLocation", checkpoint).start(path)
    def rows(from: Int) = (from until from + 10).map(i => (i.toLong, s"p${i % 2}"))
    val q1 = start()
    run(q1)(() => input.addData(rows(0)), () => input.addData(rows(10)))
    RecordingLogStore.clear()
    run(q1)(() => input.addData(rows(20)), () => input.addData(rows(30)))
    // Batches 2 and 3 (whose commit writes the checkpoint) start from the cached snapshot: no commit or checkpoint is
    // read (the log cleanup after the checkpoint reads the _last_checkpoint hint).
    assert(RecordingLogStore.readNames.forall(_ == "_last_checkpoint"), s"micro-batches read ${RecordingLogStore.readNames}")
    val metrics = q1.lastProgress.sink.metrics.asScala
    assert(metrics("tableVersion") == "3" && metrics("numOutputRows") == "10" && metrics("skipped") == "false")
    assert(metrics("numFiles").toInt >= 2)
    q1.stop()
    val queryId = q1.id.toString

    val before = commits(path)
    assert(before.map(_._1) == (0L to 3L))
    before.foreach { case (v, txns, info) =>
      assert(txns == Seq(SetTransaction(queryId, v, txns.head.lastUpdated)), s"version $v")
      assert(info.operation.contains("STREAMING UPDATE"))
      assert(info.json.get("operationParameters").get("epochId").asText == v.toString)
    }
    assert(logOf(path).snapshot().partitionColumns == Seq("p"))
    assert(Files.exists(Paths.get(path, "_delta_log", f"${3}%020d.checkpoint.parquet")))

    // The driver "died" after committing batch 3 but before Spark recorded it: the restart runs batch 3 again.
    assert(forgetLastBatch(checkpoint) == 3L)
    val filesBefore = filesUnder(Paths.get(path))
    val q2 = start()
    q2.processAllAvailable()
    assert(q2.id.toString == queryId)
    assert(logOf(path).snapshot().version == 3L, "the replayed batch committed again")
    assert(filesUnder(Paths.get(path)) == filesBefore, "the replayed batch left files")
    assert(q2.lastProgress.sink.metrics.get("skipped") == "true")
    run(q2)(() => input.addData(rows(40)))
    q2.stop()
    val df = spark.read.format("strata").load(path)
    assert(df.count() == 50 && df.select("id").distinct().count() == 50)
    assert(commits(path, 4L).map(c => c._2.map(_.version)) == Seq(Seq(4L)))
  }

  test("txnAppId: a query restarted with a new checkpoint skips the batches the table already holds") {
    val dir = tempDir("stream-app")
    val path = dir.resolve("t").toString
    def runQuery(checkpoint: String, batches: Seq[Seq[Long]]): Unit = {
      val input = MemoryStream[Long](Encoders.scalaLong, spark)
      val q = input.toDF().toDF("id").writeStream.format("strata").option("txnAppId", "ingest")
        .option("checkpointLocation", dir.resolve(checkpoint).toString).start(path)
      try batches.foreach { b => input.addData(b); q.processAllAvailable() } finally q.stop()
    }
    runQuery("cp1", Seq(0L until 5L, 5L until 10L))
    // The same source replayed from the start under a new checkpoint: batches 0 and 1 again, then a new one.
    runQuery("cp2", Seq(0L until 5L, 5L until 10L, 10L until 15L))
    val df = spark.read.format("strata").load(path)
    assert(df.count() == 15 && df.distinct().count() == 15)
    assert(commits(path).map(c => c._2.map(t => (t.appId, t.version))) ==
      Seq(Seq(("ingest", 0L)), Seq(("ingest", 1L)), Seq(("ingest", 2L))))
    val e = intercept[Exception] {
      spark.readStream.format("rate").load().writeStream.format("strata").option("txnVersion", "3")
        .option("checkpointLocation", dir.resolve("cp3").toString).start(dir.resolve("t2").toString)
    }
    assert(e.getMessage.contains("txnVersion does not apply to streaming writes"))
  }

  test("catalog table (strata catalog), complete mode over a running aggregate: each version is the aggregate; " +
    "a replayed epoch commits nothing; update mode and continuous processing are refused") {
    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.stream")
    val table = "strata.stream.counts"
    val checkpoint = tempDir("stream-complete").resolve("cp").toString
    val input = MemoryStream[(Long, String)](Encoders.product[(Long, String)], spark)
    def start() = input.toDF().toDF("id", "k").groupBy("k").count().writeStream.format("strata")
      .outputMode("complete").option("checkpointLocation", checkpoint).toTable(table)
    val q1 = start()
    val seen = scala.collection.mutable.ArrayBuffer.empty[(Long, String)]
    Seq(Seq(1L -> "a", 2L -> "b"), Seq(3L -> "a", 4L -> "c"), Seq(5L -> "a")).foreach { batch =>
      input.addData(batch); q1.processAllAvailable(); seen ++= batch
      val expected = seen.groupBy(_._2).map { case (k, v) => (k, v.size.toLong) }.toSet
      assert(spark.table(table).collect().map(r => (r.getString(0), r.getLong(1))).toSet == expected)
    }
    q1.stop()
    val path = location(table)
    val versions = commits(path)
    // Version 0 is the CREATE TABLE of toTable; then one commit per epoch, each replacing all rows.
    assert(versions.tail.map(c => c._2.map(t => (t.appId, t.version))) ==
      (0L to 2L).map(e => Seq((q1.id.toString, e))))
    assert(versions.tail.forall(_._3.json.get("operationParameters").get("outputMode").asText == "Complete"))
    val snapshot = logOf(path).snapshot()
    assert(snapshot.files.size <= 2, "complete mode keeps only the last epoch's files")

    forgetLastBatch(checkpoint)
    val q2 = start()
    q2.processAllAvailable()
    assert(logOf(path).snapshot().version == snapshot.version)
    assert(q2.lastProgress.sink.metrics.get("skipped") == "true")
    q2.stop()
    assert(spark.table(table).collect().map(r => (r.getString(0), r.getLong(1))).toSet ==
      Set(("a", 3L), ("b", 1L), ("c", 1L)))

    // Update mode: refused when the path sink starts, naming the modes that work; Spark refuses it for catalog tables.
    val e1 = intercept[Exception] {
      input.toDF().toDF("id", "k").groupBy("k").count().writeStream.format("strata").outputMode("update")
        .option("checkpointLocation", checkpoint + "-u1").start(tempDir().resolve("u").toString)
    }
    assert(e1.getMessage.contains("supports the output modes 'append'") && e1.getMessage.contains("'complete'"))
    val q3 = input.toDF().toDF("id", "k").groupBy("k").count().writeStream.format("strata").outputMode("update")
      .option("checkpointLocation", checkpoint + "-u2").toTable(table)
    input.addData(6L -> "d")
    val e2 = intercept[Exception](q3.processAllAvailable())
    assert(e2.getMessage.contains("does not support Update mode"))
    assert(logOf(path).snapshot().version == snapshot.version)
    // Continuous processing: refused when the query starts.
    val e3 = intercept[Exception] {
      spark.readStream.format("rate").load().selectExpr("cast(value as string) as k", "value as count")
        .writeStream.format("strata").trigger(org.apache.spark.sql.streaming.Trigger.Continuous("1 second"))
        .option("checkpointLocation", checkpoint + "-c").toTable(table)
    }
    assert(e3.getMessage.contains("continuous processing is not supported"), e3.getMessage)
  }

  test("session-catalog table, append: rows aligned to the table by name, widened; CHECK violations fail the " +
    "micro-batch and commit nothing") {
    spark.sql("CREATE TABLE stream_events (id BIGINT, name STRING, p STRING, CONSTRAINT pos CHECK (id > 0)) " +
      "USING strata PARTITIONED BY (p)")
    try {
      val checkpoint = tempDir("stream-session").resolve("cp").toString
      val input = MemoryStream[(String, Int, String)](Encoders.product[(String, Int, String)], spark)
      // Columns in another order than the table's, and id as INT (widened to BIGINT).
      val q = input.toDF().toDF("p", "id", "name").writeStream.format("strata")
        .option("checkpointLocation", checkpoint).toTable("default.stream_events")
      input.addData(("x", 1, "a"), ("y", 2, "b"))
      q.processAllAvailable()
      input.addData(("x", 3, "c"))
      q.processAllAvailable()
      assert(spark.table("stream_events").orderBy("id").collect().map(r => (r.getLong(0), r.getString(1), r.getString(2)))
        .toSeq == Seq((1L, "a", "x"), (2L, "b", "y"), (3L, "c", "x")))
      val path = location("stream_events")
      val dir = Paths.get(new java.net.URI(path))
      val version = logOf(path).snapshot().version
      assert(commits(path, version - 1).map(_._2.map(_.version)) == Seq(Seq(0L), Seq(1L)))
      assert(logOf(path).snapshot().files.forall(f => f.partitionValues("p").exists(Set("x", "y"))))
      input.addData(("x", -4, "bad"))
      val e = intercept[Exception](q.processAllAvailable())
      assert(e.getMessage.contains("CHECK constraint pos"), e.getMessage)
      assert(logOf(path).snapshot().version == version)
      val live = logOf(path).snapshot().files.map((f: AddFile) => f.path).toSet
      assert(filesUnder(dir).filterNot(_.startsWith("_delta_log")) == live, "the failed batch left files")
    } finally spark.sql("DROP TABLE IF EXISTS stream_events")
  }

  test("a stream lacking a nullable table column writes it as nulls, to a path sink and to a catalog table") {
    val path = tempDir("stream-missing").resolve("t").toString
    spark.range(2).selectExpr("id", "'a' AS p", "id * 1.5 AS v").write.format("strata").partitionBy("p").save(path)
    spark.sql(s"CREATE TABLE stream_missing (id BIGINT, name STRING, v DOUBLE) USING strata")
    try {
      val input = MemoryStream[Long](Encoders.scalaLong, spark)
      val checkpoint = tempDir("stream-missing-cp")
      val toPath = input.toDF().toDF("id").writeStream.format("strata")
        .option("checkpointLocation", checkpoint.resolve("path").toString).start(path)
      val toTable = input.toDF().selectExpr("CAST(value * 10 AS DOUBLE) AS v", "value AS id").writeStream.format("strata")
        .option("checkpointLocation", checkpoint.resolve("table").toString).toTable("default.stream_missing")
      input.addData(7L, 8L)
      toPath.processAllAvailable()
      toTable.processAllAvailable()
      toPath.stop()
      toTable.stop()
      assert(spark.read.format("strata").load(path).selectExpr("id", "p", "v").orderBy("id").collect()
        .map(_.toString).toSeq == Seq("[0,a,0.0]", "[1,a,1.5]", "[7,null,null]", "[8,null,null]"))
      assert(spark.table("stream_missing").orderBy("id").collect().map(_.toString).toSeq ==
        Seq("[7,null,70.0]", "[8,null,80.0]"))
    } finally spark.sql("DROP TABLE IF EXISTS stream_missing")
  }
}
