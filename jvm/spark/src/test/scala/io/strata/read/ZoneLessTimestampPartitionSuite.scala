package io.strata.read

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path => JPath}
import java.sql.Timestamp
import java.time.{Instant, ZoneId}
import java.time.format.DateTimeFormatter

import io.strata.SparkTestSession
import io.strata.log.{ActionCodec, AddFile, TableLog}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

import scala.collection.mutable
import scala.jdk.CollectionConverters._

/**
 * Defect 8: zone-less TIMESTAMP partition values (`2024-03-10 01:30:00`, as older delta-spark and delta-spark with
 * `spark.databricks.delta.write.utcTimestampPartitionValues=false` write them: the value rendered in the writer's
 * session zone) are local times in the reading session's zone, as delta-spark reads them. The log here is the one
 * such a writer in Los Angeles leaves (written by hand over Strata's data files, so no peer is needed); every read
 * path and the writes that match partitions by value must agree with that reading.
 */
class ZoneLessTimestampPartitionSuite extends AnyFunSuite with SparkTestSession {
  private val LA = "America/Los_Angeles"
  private val laText = DateTimeFormatter.ofPattern("uuuu-MM-dd HH:mm:ss").withZone(ZoneId.of(LA))
  private def micros(iso: String): Long = Instant.parse(iso).getEpochSecond * 1000000L + Instant.parse(iso).getNano / 1000

  /** id -> the instant its row was written with. */
  private val written = Map(
    1L -> "2024-03-10T09:30:00Z", // 01:30 PST, just before spring-forward
    2L -> "2024-03-10T10:30:00Z", // 03:30 PDT, just after
    3L -> "2024-11-03T08:30:00Z", // 01:30 PDT, the first pass of the repeated hour
    4L -> "2024-11-03T09:30:00Z", // 01:30 PST, the second: the zone-less text cannot tell it from id 3
    5L -> "2024-03-10T12:00:00Z", // its log value is set by hand to 02:30, a local time Los Angeles skips
    6L -> "2024-03-10T09:30:00Z") // keeps Strata's own spelling (ISO-8601 UTC)

  /** The log value of each id's file: what the legacy writer in Los Angeles renders, except ids 5 and 6. */
  private def logValue(id: Long): String = id match {
    case 5L => "2024-03-10 02:30:00"
    case 6L => "2024-03-10T09:30:00.000000Z"
    case _ => laText.format(Instant.parse(written(id)))
  }

  /** id -> the instant delta-spark reads for it in a Los Angeles session (Spark's cast in that zone). */
  private val readInLosAngeles = Map(1L -> "2024-03-10T09:30:00Z", 2L -> "2024-03-10T10:30:00Z",
    3L -> "2024-11-03T08:30:00Z", 4L -> "2024-11-03T08:30:00Z", // the repeated hour: the earlier offset
    5L -> "2024-03-10T10:30:00Z", // the gap: 02:30 moves forward by an hour
    6L -> "2024-03-10T09:30:00Z").map { case (id, i) => id -> micros(i) }

  private def inZone[T](zone: String)(body: => T): T = {
    val before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try body finally spark.conf.set("spark.sql.session.timeZone", before)
  }

  /** A table whose add actions carry the zone-less values of [[logValue]], over data files Strata wrote. */
  private def zoneLessTable(): String = {
    import spark.implicits._
    val source = tempDir("zoneless-src").resolve("t")
    // Id 6 shares id 1's instant: a commit of its own gives it a file of its own.
    Seq(written.keySet.filter(_ != 6L), Set(6L)).foreach { batch =>
      batch.toSeq.map(id => (id, Timestamp.from(Instant.parse(written(id))))).toDF("id", "ts")
        .write.format("strata").mode("append").partitionBy("ts").save(source.toString)
    }
    val log = TableLog.forPath(new Path(source.toString), new Configuration())
    val idOfFile = log.snapshot().files.map { f =>
      val ids = spark.read.parquet(source.resolve(pathOnDisk(f)).toString).collect().map(_.getLong(0)).toSeq
      assert(ids.size == 1, f.path)
      f.path -> ids.head
    }.toMap
    val target = tempDir("zoneless").resolve("t")
    copyDataFiles(source, target)
    Files.createDirectories(target.resolve("_delta_log"))
    (0L to log.snapshot().version).foreach { v =>
      val actions = log.readCommit(v).map {
        case a: AddFile => a.copy(partitionValues = Map("ts" -> Some(logValue(idOfFile(a.path)))))
        case other => other
      }
      Files.write(target.resolve("_delta_log").resolve(f"$v%020d.json"),
        actions.map(ActionCodec.serialize).mkString("", "\n", "\n").getBytes(UTF_8))
    }
    target.toString
  }

  private def pathOnDisk(f: AddFile): String = new java.net.URI(f.path).getPath

  private def copyDataFiles(from: JPath, to: JPath): Unit = {
    val all = Files.walk(from)
    try all.iterator.asScala.filter(Files.isRegularFile(_)).filterNot(p => from.relativize(p).startsWith("_delta_log"))
      .foreach { p =>
        val dest = to.resolve(from.relativize(p).toString)
        Files.createDirectories(dest.getParent)
        Files.copy(p, dest)
      }
    finally all.close()
  }

  private def idsToMicros(df: DataFrame): Map[Long, Long] =
    df.selectExpr("id", "unix_micros(ts)").collect().map(r => r.getLong(0) -> r.getLong(1)).toMap

  private def ids(df: DataFrame): Set[Long] = df.select("id").collect().map(_.getLong(0)).toSet

  test("a Los Angeles session reads zone-less values as Los Angeles times: scans, filters, pruning, catalog, stream") {
    val path = zoneLessTable()
    assert(TableLog.forPath(new Path(path), new Configuration()).snapshot().files
      .map(_.partitionValues("ts").get).toSet == written.keySet.map(logValue))
    inZone(LA) {
      val df = spark.read.format("strata").load(path)
      assert(idsToMicros(df) == readInLosAngeles)
      assert(df.selectExpr("id", "cast(ts as string)").collect().map(r => r.getLong(0) -> r.getString(1)).toMap ==
        Map(1L -> "2024-03-10 01:30:00", 2L -> "2024-03-10 03:30:00", 3L -> "2024-11-03 01:30:00",
          4L -> "2024-11-03 01:30:00", 5L -> "2024-03-10 03:30:00", 6L -> "2024-03-10 01:30:00"))
      // Filters on the partition column select by the same reading. Spark applies them by pruning the file index
      // alone (not again on the rows read), so these ids are the files pruning kept.
      assert(ids(df.where("ts = TIMESTAMP'2024-03-10 01:30:00'")) == Set(1L, 6L))
      assert(ids(df.where("ts = TIMESTAMP'2024-11-03 01:30:00'")) == Set(3L, 4L))
      assert(ids(df.where("ts >= TIMESTAMP'2024-03-10 03:00:00' AND ts < TIMESTAMP'2024-03-10 04:00:00'")) ==
        Set(2L, 5L))
      assert(ids(df.where("ts = TIMESTAMP'2024-03-10 09:30:00Z'")) == Set(1L, 6L))
      // A catalog table (V2 scan) and the streaming source read the same instants.
      val byName = spark.table(s"strata.`$path`")
      assert(idsToMicros(byName) == readInLosAngeles)
      assert(ids(spark.sql(s"SELECT id FROM strata.`$path` WHERE ts = TIMESTAMP'2024-03-10 01:30:00'")) == Set(1L, 6L))
      assert(streamed(path) == readInLosAngeles)
    }
    // The text is a local time of the reading session: in UTC, 01:30 is 01:30 UTC (delta-spark reads it so too).
    inZone("UTC") {
      val utc = idsToMicros(spark.read.format("strata").load(path))
      assert(utc(1L) == micros("2024-03-10T01:30:00Z") && utc(6L) == micros("2024-03-10T09:30:00Z"))
    }
  }

  test("writes match zone-less partitions as the session reads them: DELETE by partition, dynamic overwrite") {
    val path = zoneLessTable()
    inZone(LA) {
      spark.sql(s"DELETE FROM strata.`$path` WHERE ts = TIMESTAMP'2024-03-10 01:30:00'")
      assert(ids(spark.read.format("strata").load(path)) == Set(2L, 3L, 4L, 5L))
      // 08:30 UTC is the zone-less 2024-11-03 01:30:00 of ids 3 and 4 in this session: their partition is replaced.
      import spark.implicits._
      Seq((7L, Timestamp.from(Instant.parse("2024-11-03T08:30:00Z")))).toDF("id", "ts").write.format("strata")
        .mode("overwrite").option("partitionOverwriteMode", "dynamic").save(path)
      assert(idsToMicros(spark.read.format("strata").load(path)) ==
        Map(2L -> micros("2024-03-10T10:30:00Z"), 5L -> micros("2024-03-10T10:30:00Z"), 7L -> micros("2024-11-03T08:30:00Z")))
    }
  }

  /** id -> instant of every row a streaming read (Trigger.AvailableNow) of the table delivers. */
  private def streamed(path: String): Map[Long, Long] = {
    val rows = mutable.ArrayBuffer.empty[(Long, Long)]
    val q = spark.readStream.format("strata").load(path).writeStream
      .option("checkpointLocation", tempDir("zoneless-cp").toString).trigger(Trigger.AvailableNow())
      .foreachBatch { (b: DataFrame, _: Long) => rows ++= idsToMicros(b); () }.start()
    q.awaitTermination()
    rows.toMap
  }
}
