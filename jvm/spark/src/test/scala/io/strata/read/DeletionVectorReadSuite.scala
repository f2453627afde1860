package io.strata.read

import java.nio.file.{Files, Paths, StandardCopyOption}

import io.strata.SparkTestSession
import org.apache.spark.SparkException
import org.scalatest.funsuite.AnyFunSuite

import scala.jdk.CollectionConverters._

/**
 * Reads of delta-spark's golden deletion-vector tables: every version, V1 and V2, vectorized or not, with partition
 * and statistics pruning, through a checkpoint that carries the vectors; damaged vectors fail the read.
 */
class DeletionVectorReadSuite extends AnyFunSuite with SparkTestSession {
  private def golden(name: String) = io.strata.log.Fixtures.goldenTable(name)

  private val partitioned = golden("dv-partitioned-with-checkpoint").toString
  private val keyCases = golden("log-replay-dv-key-cases").toString

  /** dv-partitioned-with-checkpoint: 50 rows col1 0..49; commit k (1..15) is `DELETE WHERE col1 = 2 * (k - 1)`. */
  private def expectedCol1(version: Int): Seq[Int] = (0 until 50).filterNot(c => c % 2 == 0 && c <= 2 * (version - 1))

  private def withVectorized[T](on: Boolean)(body: => T): T = {
    val key = "spark.sql.parquet.enableVectorizedReader"
    val before = spark.conf.getOption(key)
    spark.conf.set(key, on.toString)
    try body finally before.fold(spark.conf.unset(key))(spark.conf.set(key, _))
  }

  for (vectorized <- Seq(true, false)) {
    test(s"every version reads the rows left by the DELETEs, V1 and V2 (vectorized reader: $vectorized)") {
      withVectorized(vectorized) {
        (0 to 15).foreach { v =>
          val v1 = spark.read.format("strata").option("versionAsOf", v.toString).load(partitioned)
            .select("col1").collect().map(_.getInt(0)).toSeq.sorted
          val v2 = spark.sql(s"SELECT col1 FROM strata.`$partitioned` VERSION AS OF $v").collect().map(_.getInt(0))
            .toSeq.sorted
          assert(v1 == expectedCol1(v), s"V1 at version $v")
          assert(v2 == expectedCol1(v), s"V2 at version $v")
          // every column, partition column included: files with and without a vector in one scan
          for (df <- Seq(spark.read.format("strata").option("versionAsOf", v.toString).load(partitioned),
            spark.sql(s"SELECT * FROM strata.`$partitioned` VERSION AS OF $v"))) {
            val all = df.select("part", "col1", "col2").collect().toSeq
            assert(all.map(_.getInt(1)).sorted == expectedCol1(v), s"version $v")
            all.foreach(r => assert(r.getInt(0) == r.getInt(1) % 10 && r.getString(2) == s"foo${r.getInt(1) % 5}", r))
          }
        }
      }
    }
  }

  test("partition and data filters, projections and counts see only live rows") {
    val df = spark.read.format("strata").load(partitioned)
    assert(df.count() == expectedCol1(15).size)
    val byPart = df.where("part = 0").select("col1").collect().map(_.getInt(0)).toSeq.sorted
    assert(byPart == expectedCol1(15).filter(_ % 10 == 0), byPart) // part = col1 % 10
    assert(df.where("col1 < 10").select("col2").count() == expectedCol1(15).count(_ < 10))
    val sqlCount = spark.sql(s"SELECT count(*), sum(col1) FROM strata.`$partitioned` WHERE col1 >= 20").head()
    assert(sqlCount.getLong(0) == expectedCol1(15).count(_ >= 20))
    assert(sqlCount.getLong(1) == expectedCol1(15).filter(_ >= 20).map(_.toLong).sum)
  }

  test("log replay keys files by path and vector: a vector replaced in the same commit (add before remove)") {
    val rows = (0 to 3).map(v => spark.read.format("strata").option("versionAsOf", v.toString).load(keyCases)
      .collect().map(_.getLong(0)).toSeq.sorted)
    assert(rows(0) == (0L until 50L))
    assert(rows(1) == (1L until 50L))
    assert(rows(2) == (1L until 50L).filterNot(_ == 7L))
    assert(rows(3) == (1L until 50L).filterNot(Set(7L, 14L)))
  }

  test("a damaged or missing vector file fails the read and names it") {
    val copy = tempDir("dv-damaged")
    Files.walk(Paths.get(keyCases)).iterator.asScala.foreach { p =>
      val target = copy.resolve(Paths.get(keyCases).relativize(p).toString)
      if (Files.isDirectory(p)) Files.createDirectories(target) else Files.copy(p, target, StandardCopyOption.REPLACE_EXISTING)
    }
    val latest = Files.readAllLines(copy.resolve("_delta_log/00000000000000000003.json")).asScala
      .find(_.startsWith("{\"add\"")).get
    val id = "\"pathOrInlineDv\":\"([^\"]+)\"".r.findFirstMatchIn(latest).get.group(1)
    val dv = io.strata.log.DeletionVectorDescriptor("u", id, Some(1), 0, 0).file(new org.apache.hadoop.fs.Path(copy.toUri)).get
    val file = Paths.get(dv.toUri)
    val bytes = Files.readAllBytes(file)
    bytes(bytes.length - 6) = (bytes(bytes.length - 6) ^ 0x55).toByte
    Files.write(file, bytes)
    // Spark reports "error while reading file <data file>"; the cause names the vector and what is wrong with it.
    def causes(e: Throwable): String = Iterator.iterate(e)(_.getCause).takeWhile(_ != null).map(_.getMessage).mkString(" / ")
    val corrupt = causes(intercept[SparkException](spark.read.format("strata").load(copy.toString).collect()))
    assert(corrupt.contains(s"deletion vector file ${dv}") && corrupt.contains("CRC"), corrupt)
    Files.delete(file)
    val missing = causes(intercept[SparkException](spark.sql(s"SELECT * FROM strata.`$copy`").collect()))
    assert(missing.contains(s"deletion vector file ${dv}") && missing.contains("is missing"), missing)
  }

  test("absolute-path (p) and inline (i) vectors read like relative ones") {
    val copy = tempDir("dv-kinds")
    Files.walk(Paths.get(keyCases)).iterator.asScala.foreach { p =>
      val target = copy.resolve(Paths.get(keyCases).relativize(p).toString)
      if (Files.isDirectory(p)) Files.createDirectories(target) else Files.copy(p, target, StandardCopyOption.REPLACE_EXISTING)
    }
    val commit = copy.resolve("_delta_log/00000000000000000003.json")
    val lines = Files.readAllLines(commit).asScala.toSeq
    val add = lines.find(_.startsWith("{\"add\"")).get
    val node = io.strata.log.ActionCodec.mapper.readTree(add).get("add")
    val dv = io.strata.log.DeletionVectorDescriptor.parse(node.get("deletionVector"))
    val table = new org.apache.hadoop.fs.Path(copy.toUri)
    val rows = io.strata.log.DeletionVectors.read(dv, table, new org.apache.hadoop.conf.Configuration())
    val absolute = dv.copy(storageType = "p", pathOrInlineDv = dv.file(table).get.toUri.toString)
    val inline = io.strata.log.DeletionVectorStore.write(table, new org.apache.hadoop.conf.Configuration(), Seq(rows),
      maxInlineBytes = 4096).head
    assert(inline.storageType == "i")
    for (replacement <- Seq(absolute, inline)) {
      node.asInstanceOf[com.fasterxml.jackson.databind.node.ObjectNode].set[com.fasterxml.jackson.databind.JsonNode](
        "deletionVector", replacement.toJson)
      val line = "{\"add\":" + io.strata.log.ActionCodec.mapper.writeValueAsString(node) + "}"
      Files.write(commit, lines.map(l => if (l == add) line else l).asJava)
      val ids = spark.read.format("strata").load(copy.toString).collect().map(_.getLong(0)).toSeq.sorted
      assert(ids == (1L until 50L).filterNot(Set(7L, 14L)), replacement)
    }
  }
}
