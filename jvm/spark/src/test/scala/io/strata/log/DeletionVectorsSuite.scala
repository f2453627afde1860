package io.strata.log

import java.nio.file.{Files, Paths}

import io.strata.SparkTestSession
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import scala.jdk.CollectionConverters._

/** Deletion vectors written by delta-spark (golden table dv-partitioned-with-checkpoint), decoded by Strata. */
class DeletionVectorsSuite extends AnyFunSuite with SparkTestSession {
  private val table = Fixtures.goldenTable("dv-partitioned-with-checkpoint")
  private val tablePath = new Path(table.toUri)

  test("Z85 decodes the ZeroMQ reference vector and refuses bad text") {
    assert(Z85.decode("HelloWorld").toSeq.map(_ & 0xff) == Seq(0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B))
    assert(intercept[CorruptLogException](Z85.decode("abc")).getMessage.contains("multiple of 5"))
    assert(intercept[CorruptLogException](Z85.decode("ab~cd")).getMessage.contains("not a Z85 character"))
  }

  /** Every action of every JSON commit, in order. */
  private def actions(): Seq[com.fasterxml.jackson.databind.JsonNode] =
    Files.list(table.resolve("_delta_log")).iterator.asScala.map(_.toString).filter(_.endsWith(".json")).toSeq.sorted
      .flatMap(f => Files.readAllLines(Paths.get(f)).asScala.filter(_.trim.nonEmpty).map(ActionCodec.mapper.readTree))

  /** The live add actions after replaying every JSON commit, keyed by path and deletion vector (PROTOCOL.md). */
  private def liveAdds(): Seq[com.fasterxml.jackson.databind.JsonNode] = {
    val live = scala.collection.mutable.LinkedHashMap.empty[(String, String), com.fasterxml.jackson.databind.JsonNode]
    def key(a: com.fasterxml.jackson.databind.JsonNode) = (a.get("path").asText,
      Option(a.get("deletionVector")).filterNot(_.isNull).map(d => DeletionVectorDescriptor.parse(d).uniqueId).getOrElse(""))
    Files.list(table.resolve("_delta_log")).iterator.asScala.map(_.toString).filter(_.endsWith(".json")).toSeq.sorted
      .foreach { f =>
        Files.readAllLines(Paths.get(f)).asScala.filter(_.trim.nonEmpty).map(ActionCodec.mapper.readTree).foreach { n =>
          Option(n.get("add")).foreach(a => live(key(a)) = a)
          Option(n.get("remove")).foreach(r => live.remove(key(r)))
        }
      }
    live.values.toSeq
  }

  test("every deletion vector the table ever had holds exactly the rows of its file deleted by then") {
    // Commit k (1..15) is `DELETE WHERE col1 = 2 * (k - 1)`: a vector added by commit k covers the file's rows with an
    // even col1 up to 2 * (k - 1). Read from the file itself (one small file: rows in file order).
    val commits = Files.list(table.resolve("_delta_log")).iterator.asScala.map(_.getFileName.toString)
      .filter(_.endsWith(".json")).toSeq.sorted
    val checked = commits.flatMap { name =>
      val k = name.stripSuffix(".json").toInt
      Files.readAllLines(table.resolve("_delta_log").resolve(name)).asScala.filter(_.trim.nonEmpty)
        .map(ActionCodec.mapper.readTree).flatMap(n => Option(n.get("add"))).filter(_.has("deletionVector")).map { a =>
          val dv = DeletionVectorDescriptor.parse(a.get("deletionVector"))
          val rows = DeletionVectors.read(dv, tablePath, new Configuration())
          val col1 = spark.read.parquet(new Path(tablePath, a.get("path").asText).toString).collect().map(_.getAs[Int]("col1"))
          val expected = col1.zipWithIndex.collect { case (c, i) if c % 2 == 0 && c <= 2 * (k - 1) => i.toLong }.toSeq
          assert(rows.toSeq == expected && rows.cardinality == dv.cardinality, (name, a.get("path"), col1.toSeq))
          dv
        }
    }
    assert(checked.size == 10 && liveAdds().count(_.has("deletionVector")) == 2)
  }

  test("the rows the vectors delete are exactly the ones the 15 DELETEs removed") {
    val kept = liveAdds().flatMap { a =>
      val file = new Path(tablePath, a.get("path").asText).toString
      val deleted = Option(a.get("deletionVector")).map(d =>
        DeletionVectors.read(DeletionVectorDescriptor.parse(d), tablePath, new Configuration()))
      // One small file is one task: rows come in file order, so the position is the row index.
      spark.read.parquet(file).collect().toSeq.zipWithIndex.collect {
        case (row, i) if !deleted.exists(_.contains(i.toLong)) => row.getAs[Int]("col1")
      }
    }
    assert(kept.sorted == (0 until 50).filterNot(c => c % 2 == 0 && c <= 28))
  }

  test("a damaged deletion vector is refused: wrong size, CRC or cardinality") {
    val a = liveAdds().find(_.has("deletionVector")).get
    val dv = DeletionVectorDescriptor.parse(a.get("deletionVector"))
    val conf = new Configuration()
    assert(intercept[CorruptLogException](DeletionVectors.read(dv.copy(cardinality = dv.cardinality + 1), tablePath,
      conf)).getMessage.contains("descriptor says"))
    assert(intercept[CorruptLogException](DeletionVectors.read(dv.copy(sizeInBytes = dv.sizeInBytes + 1), tablePath,
      conf)).getMessage.contains("holds"))
    val copy = Files.createTempDirectory("dv")
    val name = dv.file(tablePath).get.getName
    val bytes = Files.readAllBytes(Paths.get(dv.file(tablePath).get.toUri))
    bytes(bytes.length - 6) = (bytes(bytes.length - 6) ^ 0x55).toByte // inside the last vector's data
    Files.write(copy.resolve(name), bytes)
    val last = actions().flatMap(n => Option(n.get("add"))).filter(_.has("deletionVector"))
      .map(x => DeletionVectorDescriptor.parse(x.get("deletionVector")))
      .filter(_.storageType == "u").filter(_.file(tablePath).get.getName == name).maxBy(_.offset.getOrElse(1))
    assert(intercept[CorruptLogException](DeletionVectors.read(last, new Path(copy.toUri), conf))
      .getMessage.contains("CRC"))
  }
}
