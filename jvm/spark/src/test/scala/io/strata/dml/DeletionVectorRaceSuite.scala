package io.strata.dml

import java.nio.file.Files

import io.strata.log._
import org.apache.spark.sql.Row
import org.scalatest.LoneElement
import org.scalatest.funsuite.AnyFunSuite

import scala.jdk.CollectionConverters._

/**
 * Races of merge-on-read DML against rivals that change the same file's deletion vector, placed deterministically
 * between the statement's read and its commit; and what the committed vectors look like to other readers. Every
 * outcome is a typed conflict with nothing lost, or the table a serial order gives.
 */
class DeletionVectorRaceSuite extends AnyFunSuite with DmlTestSupport with LoneElement {
  private val dvTable = "(id BIGINT, v STRING) USING strata TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"

  /** One data file of ids 0..19; then DELETE id = 10 (version k, returned) and DELETE id = 1. */
  private def restorable(): (String, Long) = {
    val t = freshTable("dvrace", dvTable)
    spark.range(0, 20, 1, 1).selectExpr("id", "concat('v', id) AS v").writeTo(t).append()
    spark.sql(s"DELETE FROM $t WHERE id = 10")
    val k = version(t)
    spark.sql(s"DELETE FROM $t WHERE id = 1")
    (t, k)
  }

  private def ids(t: String): Seq[Long] = rowsOf(t, "id").map(_.getLong(0)).sorted
  private def restore(t: String, v: Long): Unit =
    spark.sql(s"CALL strata.system.restore(table => '$t', version => $v)").collect()

  // The rival RESTORE re-adds the file with the smaller vector {10}: row 1 is visible again, and our statement's
  // condition matches it. Committing on top would leave row 1 but not row 2, which no serial order gives.
  Seq(
    "DELETE" -> ((t: String) => spark.sql(s"DELETE FROM $t WHERE id IN (1, 2)")),
    "UPDATE" -> ((t: String) => spark.sql(s"UPDATE $t SET v = 'u' WHERE id IN (1, 2)")),
    "MERGE" -> { (t: String) =>
      spark.range(1, 3).selectExpr("id", "'m' AS v").createOrReplaceTempView("dvrace_src")
      spark.sql(s"MERGE INTO $t t USING dvrace_src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v")
    }).foreach { case (statement, run) =>
    test(s"a $statement racing a RESTORE that brings deleted rows back: a typed conflict, the restore stands") {
      val (t, k) = restorable()
      val e = intercept[Exception](raced(restore(t, k))(run(t)))
      val conflict = causeOf[ConcurrentModificationException](e)
      assert(conflict.winningVersion == k + 2)
      assert(rowsOf(t) == (0L until 20L).filterNot(_ == 10L).map(i => Row(i, s"v$i")).sortBy(_.toString))
      // Run again on the restored table: the serial result "restore, then the statement".
      run(t)
      val changed = rowsOf(t).filter(r => Set(1L, 2L)(r.getLong(0)))
      assert(changed == (if (statement == "DELETE") Nil else Seq(Row(1L, if (statement == "UPDATE") "u" else "m"),
        Row(2L, if (statement == "UPDATE") "u" else "m"))))
    }
  }

  test("a rival that deleted more rows of the file (its vector contains ours) is absorbed: both deletes stand") {
    val (t, _) = restorable()
    raced(spark.sql(s"DELETE FROM $t WHERE id = 7"))(spark.sql(s"DELETE FROM $t WHERE id IN (1, 2)"))
    assert(ids(t) == (0L until 20L).filterNot(Set(1L, 2L, 7L, 10L)))
  }

  test("vector files superseded by a re-staged commit are removed; every vector file left is referenced") {
    val t = freshTable("dvrace", dvTable)
    spark.range(0, 20, 1, 1).selectExpr("id", "concat('v', id) AS v").writeTo(t).append()
    raced(spark.sql(s"DELETE FROM $t WHERE id = 3"))(spark.sql(s"DELETE FROM $t WHERE id = 5"))
    val dir = localDir(t)
    val onDisk = Files.list(dir).iterator.asScala.map(_.getFileName.toString)
      .filter(n => n.startsWith("deletion_vector_") && n.endsWith(".bin")).toSet
    val referenced = (0L to version(t)).flatMap(v => log(t).readCommit(v)).collect {
      case a: AddFile => a.deletionVector.flatMap(_.file(log(t).tablePath)).map(_.getName)
    }.flatten.toSet
    assert(onDisk.nonEmpty && onDisk == referenced, s"on disk $onDisk, referenced $referenced")
    assert(ids(t) == (0L until 20L).filterNot(Set(3L, 5L)))
  }

  test("a vector added to a file whose entry has no statistics carries numRecords (and tightBounds false)") {
    val t = freshTable("dvrace", dvTable)
    spark.range(0, 20, 1, 1).selectExpr("id", "concat('v', id) AS v").writeTo(t).append()
    // Another writer's entry for the same file without statistics (re-added: same path, replaces the entry).
    val snap = log(t).snapshot()
    val file = snap.files.loneElement
    Files.write(localDir(t).resolve("_delta_log").resolve(f"${snap.version + 1}%020d.json"),
      Seq(ActionCodec.serialize(file.copy(stats = None, dataChange = false))).asJava)
    assert(log(t).snapshot().files.loneElement.stats.isEmpty)
    spark.sql(s"DELETE FROM $t WHERE id = 4")
    val added = changes(t, version(t))._1.loneElement
    val stats = ActionCodec.mapper.readTree(added.stats.getOrElse(fail("no stats on an add with a vector")))
    assert(added.deletionVector.isDefined && stats.get("numRecords").asLong == 20L && !stats.get("tightBounds").asBoolean)
    assert(ids(t) == (0L until 20L).filterNot(_ == 4L))
  }

  test("delta.enableDeletionVectors set without the protocol feature: DML writes no vector (copy-on-write)") {
    val t = freshTable("dvrace", "(id BIGINT, v STRING) USING strata")
    spark.range(0, 20, 1, 1).selectExpr("id", "concat('v', id) AS v").writeTo(t).append()
    // Another writer set the property but did not upgrade the protocol: a metaData action alone, written by hand.
    val l = log(t)
    val snap = l.snapshot()
    val meta = snap.metadata.copy(configuration = snap.metadata.configuration + ("delta.enableDeletionVectors" -> "true"))
    Files.write(localDir(t).resolve("_delta_log").resolve(f"${snap.version + 1}%020d.json"),
      Seq(ActionCodec.serialize(meta)).asJava)
    assert(!log(t).snapshot().protocol.writerFeatures.exists(_("deletionVectors")))
    spark.sql(s"DELETE FROM $t WHERE id = 4")
    spark.sql(s"UPDATE $t SET v = 'u' WHERE id = 5")
    val vectors = (snap.version + 2 to version(t)).flatMap(v => changes(t, v)._1).filter(_.deletionVector.isDefined)
    assert(vectors.isEmpty, "vectors in a table whose protocol does not list deletionVectors")
    assert(log(t).snapshot().files.forall(_.deletionVector.isEmpty))
    assert(ids(t) == (0L until 20L).filterNot(_ == 4L) && rowsOf(t, "v").contains(Row("u")))
  }

  test("entries read from a delta-spark checkpoint are written back with protocol fields only (no *_parsed)") {
    val golden = Fixtures.goldenTable("dv-partitioned-with-checkpoint")
    val dir = tempDir("dvrace-golden").resolve("t")
    org.apache.commons.io.FileUtils.copyDirectory(golden.toFile, dir.toFile)
    // The checkpoint (version 10) has partitionValues_parsed. The DELETE grows vectors of entries read from it;
    // the restore brings version 10's files back from it.
    spark.sql(s"DELETE FROM strata.`$dir` WHERE col1 % 4 = 1")
    spark.sql(s"CALL strata.system.restore(table => '$dir', version => 10)").collect()
    val logDir = dir.resolve("_delta_log")
    val written = Seq(16L, 17L).map(v => new String(Files.readAllBytes(logDir.resolve(f"$v%020d.json")), "UTF-8"))
    assert(written.last.contains("\"add\"") && written.forall(!_.contains("_parsed")), written.mkString("\n"))
    assert(spark.read.format("strata").load(dir.toString).collect().toSeq.sortBy(_.toString) ==
      spark.read.format("strata").option("versionAsOf", 10L).load(dir.toString).collect().toSeq.sortBy(_.toString))
  }
}
