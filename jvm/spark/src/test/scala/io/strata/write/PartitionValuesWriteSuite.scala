package io.strata.write

import java.sql.Timestamp
import java.time.Instant

import io.strata.SparkTestSession
import io.strata.log.{AddFile, Operation, TableLog}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.functions._
import org.scalatest.funsuite.AnyFunSuite

/** Exact partition values through both write paths, in several session time zones. */
class PartitionValuesWriteSuite extends AnyFunSuite with SparkTestSession {
  import spark.implicits._

  private val Zones = Seq("UTC", "America/New_York", "Asia/Kolkata", "Europe/Berlin", "Australia/Sydney")
  /** Pairs of instants one hour apart that share a local time in a zone's DST fall-back hour. */
  private val FallBack = Seq("2024-11-03T05:30:00.250000Z", "2024-10-27T00:30:00.000001Z", "2024-04-06T15:30:00Z")
    .flatMap { s => val i = Instant.parse(s); Seq(i, i.plusSeconds(3600)) }

  private def inZone[T](zone: String)(body: => T): T = {
    spark.conf.set("spark.sql.session.timeZone", zone)
    try body finally spark.conf.set("spark.sql.session.timeZone", "UTC")
  }

  private def log(path: String) = TableLog.forPath(new Path(path), new Configuration())
  private def rows(df: DataFrame): Seq[Row] = df.collect().toSeq.sortBy(_.getLong(0))

  private def freshTable(ddl: String): String = freshTable("pv", ddl)

  private def fallBackRows: DataFrame =
    FallBack.zipWithIndex.map { case (i, id) => (id.toLong, Timestamp.from(i)) }.toDF("id", "ts")

  private def expectedLogValues: Set[String] = FallBack.map(io.strata.table.PartitionValues.formatTimestamp).toSet

  test("V1 and V2: timestamps in DST fall-back hours keep their instants, in every session zone") {
    Zones.foreach { zone =>
      inZone(zone) {
        val path = tempDir().resolve("t").toString
        fallBackRows.write.format("strata").partitionBy("ts").save(path)
        val t = freshTable("(id BIGINT, ts TIMESTAMP) USING strata PARTITIONED BY (ts)")
        fallBackRows.writeTo(t).append()
        Seq(path, location(t)).foreach { p =>
          val values = log(p).snapshot().files.map(_.partitionValues("ts").get).toSet
          assert(values == expectedLogValues, s"$zone, $p")
          assert(rows(spark.read.format("strata").load(p)) == rows(fallBackRows), s"$zone, $p")
        }
      }
    }
  }

  test("V2 static partition overwrite of DATE, TIMESTAMP, TIMESTAMP_NTZ, string, int, decimal, boolean columns") {
    val cases = Seq(
      ("DATE", "DATE'1969-07-20'", "DATE'1969-07-21'"),
      ("TIMESTAMP", "TIMESTAMP'2024-11-03 05:30:00.000001Z'", "TIMESTAMP'2024-11-03 06:30:00.000001Z'"),
      ("TIMESTAMP_NTZ", "TIMESTAMP_NTZ'2024-11-03 01:30:00'", "TIMESTAMP_NTZ'2024-11-03 01:30:00.000001'"),
      ("STRING", "'it\\'s a \\\\ \"quote\"'", "'it'"),
      ("INT", "-7", "7"),
      ("DECIMAL(10,2)", "12.50", "-0.01"),
      ("BOOLEAN", "true", "false"))
    Seq("UTC", "America/New_York", "Asia/Kolkata").foreach { zone =>
      inZone(zone) {
        cases.foreach { case (tpe, target, other) =>
          val t = freshTable(s"(id BIGINT, p $tpe) USING strata PARTITIONED BY (p)")
          spark.sql(s"INSERT INTO $t SELECT 1, $target UNION ALL SELECT 2, $other")
          spark.sql(s"INSERT OVERWRITE $t PARTITION (p = $target) SELECT 3")
          val expected = spark.sql(s"SELECT 2L, $other UNION ALL SELECT 3L, $target")
          assert(rows(spark.table(t)) == rows(expected), s"$tpe in $zone")
          // The DataFrame API's overwrite(condition) takes the same route.
          spark.sql(s"SELECT 4L AS id, $target AS p").writeTo(t).overwrite(col("p") === expr(target))
          assert(rows(spark.table(t)) == rows(spark.sql(s"SELECT 2L, $other UNION ALL SELECT 4L, $target")),
            s"$tpe in $zone")
        }
      }
    }
  }

  test("V2 overwrite(condition) with a row outside the condition fails the job and commits nothing") {
    val t = freshTable("(id BIGINT, p STRING) USING strata PARTITIONED BY (p)")
    spark.sql(s"INSERT INTO $t VALUES (1, 'q'), (2, 'r')")
    val dir = java.nio.file.Paths.get(new java.net.URI(location(t)))
    val filesBefore = filesUnder(dir)
    val e = intercept[Exception](Seq((10L, "q"), (11L, "z")).toDF("id", "p").writeTo(t).overwrite($"p" === "q"))
    val messages = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).map(_.getMessage).mkString("\n")
    assert(messages.contains("Written rows must match replaceWhere '(p = 'q')'; a row does not: p = z"), messages)
    assert(log(location(t)).snapshot().version == 1)
    assert(filesUnder(dir) == filesBefore, "the failed job left files behind")
    assert(rows(spark.table(t)) == Seq(Row(1L, "q"), Row(2L, "r")))
  }

  test("an overwrite by a date/time function of a timestamp partition replaces the partitions it names, by zone") {
    // V2 hands hour(ts) over as EXTRACT(HOUR FROM ts), which must be replaced before Strata evaluates it on the
    // partition values and on the written rows; V1's replaceWhere is the user's SQL as written (BETWEEN's
    // replacement shares its operand as a common subexpression, which must be inlined).
    val existing = "(1, TIMESTAMP'2024-01-01 16:00:00Z'), (2, TIMESTAMP'2024-01-02 00:00:00Z'), " +
      "(3, TIMESTAMP'2024-01-01 10:00:00Z')" // hours in Los Angeles: 08, 16, 02
    Seq("UTC" -> Seq(2L, 3L, 10L), "America/Los_Angeles" -> Seq(1L, 3L, 10L)).foreach { case (zone, expected) =>
      inZone(zone) {
        val t = freshTable("(id BIGINT, ts TIMESTAMP) USING strata PARTITIONED BY (ts)")
        spark.sql(s"INSERT INTO $t VALUES $existing")
        spark.sql(s"INSERT INTO $t REPLACE WHERE hour(ts) = 16 SELECT 10, TIMESTAMP'2024-05-05 16:00:00'")
        assert(rows(spark.table(t)).map(_.getLong(0)) == expected, s"V2 in $zone")

        val path = tempDir().resolve("t").toString
        spark.sql(s"SELECT CAST(id AS BIGINT) AS id, ts FROM VALUES $existing AS v(id, ts)")
          .write.format("strata").partitionBy("ts").save(path)
        spark.sql("SELECT 10L AS id, TIMESTAMP'2024-05-05 16:00:00' AS ts").write.format("strata").mode("overwrite")
          .option("replaceWhere", "extract(HOUR FROM ts) BETWEEN 15 AND 16").save(path)
        assert(rows(spark.read.format("strata").load(path)).map(_.getLong(0)) == expected, s"V1 in $zone")
      }
    }
  }

  test("dynamic overwrite replaces a partition another engine spelled differently (delta-rs: zone-less timestamp)") {
    val dir = tempDir()
    val path = dir.resolve("t").toString
    // A data file as another writer made it, logged with delta-rs's spelling of 2024-03-01T10:11:12Z.
    val foreignDir = dir.resolve("t").resolve("foreign")
    Seq(1L).toDF("id").coalesce(1).write.parquet(foreignDir.toString)
    val part = filesUnder(foreignDir).find(_.endsWith(".parquet")).get
    val schema = """{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},""" +
      """{"name":"ts","type":"timestamp","nullable":true,"metadata":{}}]}"""
    val txn = log(path).startTransaction()
    txn.updateMetadata(io.strata.log.Metadata(id = "foreign", schemaString = schema, partitionColumns = Seq("ts")))
    txn.commit(Seq(AddFile(s"foreign/$part",
      Map("ts" -> Some("2024-03-01 10:11:12.000000")), java.nio.file.Files.size(foreignDir.resolve(part)),
      System.currentTimeMillis(), dataChange = true)), Operation("WRITE"))
    assert(rows(spark.read.format("strata").load(path)) == Seq(Row(1L, Timestamp.from(Instant.parse("2024-03-01T10:11:12Z")))))
    // The zone-less text is a local time of the session (as delta-spark reads it): 10:11:12 EST in New York.
    val newYorkReading = Timestamp.from(Instant.parse("2024-03-01T15:11:12Z"))
    inZone("America/New_York") {
      Seq((2L, newYorkReading)).toDF("id", "ts").write.format("strata")
        .mode("overwrite").option("partitionOverwriteMode", "dynamic").save(path)
    }
    assert(rows(spark.read.format("strata").load(path)) == Seq(Row(2L, newYorkReading)))
    assert(log(path).snapshot().files.map(_.partitionValues("ts")) == Seq(Some("2024-03-01T15:11:12.000000Z")))
  }
}
