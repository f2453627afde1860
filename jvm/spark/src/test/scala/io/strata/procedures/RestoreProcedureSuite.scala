package io.strata.procedures

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files

import io.strata.dml.DmlTestSupport
import io.strata.log._
import org.apache.spark.sql.Row
import org.scalatest.LoneElement
import org.scalatest.funsuite.AnyFunSuite

/**
 * `restore`: the new version equals the old one (files, deletion vectors, metadata), the protocol never goes down,
 * missing files refuse it, and a rival commit between its read and its commit is a typed conflict.
 */
class RestoreProcedureSuite extends AnyFunSuite with DmlTestSupport with LoneElement {
  private def restore(t: String, arg: String): Row = spark.sql(s"CALL strata.system.restore(table => '$t', $arg)").head()
  private def at(t: String, v: Long): Seq[Row] = rows(spark.sql(s"SELECT * FROM $t VERSION AS OF $v"))
  private def live(t: String): Set[(String, String)] = log(t).snapshot().files.map(f => f.path -> f.dvId).toSet
  private def params(t: String): String = lastCommit(t).json.get("operationParameters").toString

  test("restore after an overwrite: the old files come back as a new version; every version stays readable") {
    val t = freshTable("rst", "(id INT, p STRING) USING strata PARTITIONED BY (p)")
    spark.sql(s"INSERT INTO $t VALUES (1, 'a'), (2, 'b')")
    spark.sql(s"INSERT INTO $t VALUES (3, 'a')")
    val v2 = rowsOf(t)
    val files2 = live(t)
    spark.sql(s"INSERT OVERWRITE $t VALUES (9, 'c')")
    val before = (0L to 3L).map(at(t, _))
    val r = restore(t, "version => 2")
    assert(r == Row(4L, 2L, 1L, 3L, r.getLong(4), r.getLong(5)) && r.getLong(4) > 0 && r.getLong(5) > 0, r)
    assert(rowsOf(t) == v2 && live(t) == files2)
    val (adds, removes) = changes(t, 4)
    assert(adds.size == 3 && adds.forall(_.dataChange) && removes.loneElement.dataChange)
    assert(lastCommit(t).operation.contains("RESTORE") && params(t) == """{"version":"2"}""")
    Seq("numRestoredFiles" -> 3L, "numRemovedFiles" -> 1L, "numOfFilesAfterRestore" -> 3L,
      "restoredFilesSize" -> adds.map(_.size).sum, "removedFilesSize" -> removes.head.size.get,
      "tableSizeAfterRestore" -> adds.map(_.size).sum).foreach { case (m, v) => assert(metric(t, m) == v, m) }
    assert((0L to 3L).map(at(t, _)) == before, "time travel to the versions before the restore")
    assert(at(t, 4) == v2)
    // restoring the restored state again: nothing changes, nothing is committed
    assert(restore(t, "version => 2") == Row(4L, 2L, 0L, 0L, 0L, 0L) && version(t) == 4L)
    assert(restore(t, "version => 4") == Row(4L, 4L, 0L, 0L, 0L, 0L) && version(t) == 4L)
    // and back to the overwrite (a restore can be restored)
    assert(restore(t, "version => 3").getLong(0) == 5L && rowsOf(t) == Seq(Row(9, "c")))
  }

  test("restore after DELETEs with deletion vectors: a file is keyed by path and vector") {
    val t = freshTable("rst", "(id BIGINT) USING strata TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    spark.range(0, 10, 1, 1).writeTo(t).append() // v1: one file, no vector
    spark.sql(s"DELETE FROM $t WHERE id = 3") // v2: the file with vector {3}
    spark.sql(s"DELETE FROM $t WHERE id = 5") // v3: the file with vector {3, 5}
    val file = log(t).snapshot().files.loneElement
    assert(file.deletionVector.get.cardinality == 2)
    val r = restore(t, "version => 2")
    assert(r.getLong(2) == 1L && r.getLong(3) == 1L, r)
    val (adds, removes) = changes(t, 4)
    assert(adds.loneElement.path == file.path && adds.head.deletionVector.get.cardinality == 1)
    assert(removes.loneElement.deletionVector == file.deletionVector)
    assert(rowsOf(t) == (0L until 10L).filterNot(_ == 3L).map(Row(_)))
    restore(t, "version => 1")
    assert(log(t).snapshot().files.loneElement.deletionVector.isEmpty && rowsOf(t) == (0L until 10L).map(Row(_)))
    assert(at(t, 3) == (0L until 10L).filterNot(Set(3L, 5L)).map(Row(_)))
  }

  test("restore across a schema change brings the old metadata back and never downgrades the protocol") {
    val t = freshTable("rst", "(id INT) USING strata")
    spark.sql(s"INSERT INTO $t VALUES (1)") // v1
    spark.sql(s"ALTER TABLE $t ADD COLUMNS (note STRING)") // v2
    spark.sql(s"ALTER TABLE $t SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')") // v3: protocol 3/7
    spark.sql(s"INSERT INTO $t VALUES (2, 'x')") // v4
    val protocolNow = log(t).snapshot().protocol
    assert(protocolNow.minWriterVersion == 7)
    restore(t, "version => 1")
    val s = log(t).snapshot()
    assert(s.metadata == log(t).snapshotAt(1).metadata && !s.metadata.schemaString.contains("note"))
    assert(s.protocol == protocolNow, "the protocol is kept, not downgraded")
    spark.catalog.refreshTable(t)
    assert(spark.table(t).columns.toSeq == Seq("id") && rowsOf(t) == Seq(Row(1)))
    assert(restore(t, "version => 4").getLong(0) == 6L)
    spark.catalog.refreshTable(t)
    assert(rowsOf(t) == Seq(Row(1, null), Row(2, "x")))
  }

  test("an old version whose metadata needs a feature the current protocol lacks: the restore upgrades it") {
    val t = freshTable("rst", "(id INT, ts TIMESTAMP_NTZ) USING strata") // v0: reader 3 / writer 7, timestampNtz
    spark.sql(s"INSERT INTO $t VALUES (1, TIMESTAMP_NTZ'2026-01-01 10:00:00')")
    val l = log(t)
    val s = l.snapshot()
    // Another engine dropped the column and the feature (a protocol without timestampNtz): written by hand.
    val info = CommitInfo(ActionCodec.mapper.createObjectNode().put("operation", "DROP FEATURE"))
    val plain = s.metadata.copy(schemaString = """{"type":"struct","fields":[{"name":"id","type":"integer",""" +
      """"nullable":true,"metadata":{}}]}""")
    val lines = Seq(info, Protocol(1, 2), plain).map(ActionCodec.serialize) ++
      s.files.map(f => ActionCodec.serialize(f.remove(System.currentTimeMillis())))
    Files.write(localDir(t).resolve(f"_delta_log/${s.version + 1}%020d.json"), lines.mkString("", "\n", "\n").getBytes(UTF_8))
    assert(log(t).snapshot().protocol == Protocol(1, 2))
    restore(t, "version => 1")
    val p = log(t).snapshot().protocol
    assert(p.minReaderVersion == 3 && p.readerFeatures.exists(_("timestampNtz")) && p.writerFeatures.exists(_("timestampNtz")), p)
    spark.catalog.refreshTable(t)
    assert(rowsOf(t) == at(t, 1))
  }

  test("restore by timestamp in a non-UTC session picks the version committed at or before that wall-clock time") {
    val t = freshTable("rst", "(id INT) USING strata")
    spark.sql(s"INSERT INTO $t VALUES (1)") // v1
    spark.sql(s"INSERT INTO $t VALUES (2)") // v2
    val stamps = log(t).commitTimestamps().toMap
    val zone = "America/Los_Angeles"
    val wall = java.time.Instant.ofEpochMilli(stamps(1L)).atZone(java.time.ZoneId.of(zone))
      .format(java.time.format.DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSS"))
    spark.conf.set("spark.sql.session.timeZone", zone)
    try {
      assert(restore(t, s"timestamp => '$wall'").getLong(1) == 1L) // a string, cast in the session time zone
      assert(rowsOf(t) == Seq(Row(1)))
      assert(params(t).startsWith(s"""{"timestamp":"${wall.take(19)}"""), "the timestamp as the session shows it")
      assert(restore(t, s"timestamp => TIMESTAMP'$wall'").getLong(1) == 1L) // a TIMESTAMP literal: same version
      val early = intercept[Exception](restore(t, "timestamp => '2001-01-01 00:00:00'"))
      assert(causeOf[InvalidTableOperationException](early).getMessage.contains("No version of"), early)
    } finally spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert(version(t) == 3L)
  }

  test("a version whose files are gone (vacuumed) is refused naming a file and the version; nothing is committed") {
    val t = freshTable("rst", "(id INT) USING strata")
    spark.sql(s"INSERT INTO $t VALUES (1)")
    spark.sql(s"INSERT OVERWRITE $t VALUES (2)")
    val gone = log(t).snapshotAt(1).files.loneElement
    Files.delete(localDir(t).resolve(gone.path))
    val e = intercept[Exception](restore(t, "version => 1"))
    val msg = causeOf[InvalidTableOperationException](e).getMessage
    assert(msg.contains(gone.path) && msg.contains("version 1") && msg.contains("Nothing was committed"), msg)
    assert(version(t) == 2L && rowsOf(t) == Seq(Row(2)))
  }

  test("bad arguments are refused naming what is wrong; nothing is committed") {
    val t = freshTable("rst", "(id INT) USING strata")
    spark.sql(s"INSERT INTO $t VALUES (1)")
    def refused(args: String, expected: String): Unit = {
      val e = intercept[Exception](spark.sql(s"CALL strata.system.restore(table => '$t'$args)").collect())
      assert(causes(e).exists(_.getMessage.contains(expected)), e)
    }
    refused("", "neither version nor timestamp is given")
    refused(", version => 0, timestamp => '2026-01-01 00:00:00'", "both given")
    refused(", version => -1", "argument version is -1")
    refused(", version => 7", "Version 7 of")
    refused(", timestamp => 'not a time'", "not a time")
    assert(version(t) == 1L)
  }

  test("a rival append between the restore's read and its commit: typed conflict, the appended rows stay") {
    val t = freshTable("rst", "(id INT) USING strata TBLPROPERTIES ('strata.isolationLevel' = 'snapshot')")
    spark.sql(s"INSERT INTO $t VALUES (1)")
    spark.sql(s"INSERT INTO $t VALUES (2)")
    val e = intercept[Exception](raced(spark.sql(s"INSERT INTO $t VALUES (3)"))(restore(t, "version => 1")))
    assert(causeOf[ConcurrentAppendException](e).getMessage.contains("the whole table"), e)
    assert(version(t) == 3L && rowsOf(t) == Seq(Row(1), Row(2), Row(3)))
  }

  test("a rival delete or compaction between the restore's read and its commit: typed conflict, nothing resurrected") {
    val t = freshTable("rst", "(id INT, p STRING) USING strata PARTITIONED BY (p)")
    spark.sql(s"INSERT INTO $t VALUES (1, 'a'), (2, 'b')")
    spark.sql(s"INSERT INTO $t VALUES (3, 'c')")
    val deleted = intercept[Exception](raced(spark.sql(s"DELETE FROM $t WHERE p = 'b'"))(restore(t, "version => 1")))
    causeOf[ConcurrentDeleteReadException](deleted)
    assert(version(t) == 3L && rowsOf(t) == Seq(Row(1, "a"), Row(3, "c")))
    val compacted = intercept[Exception](raced(compact(t, _.partitionValues("p").contains("a")))(
      restore(t, "version => 1")))
    causeOf[ConcurrentDeleteReadException](compacted)
    assert(version(t) == 4L && rowsOf(t) == Seq(Row(1, "a"), Row(3, "c")))
    // without a rival the same restore commits
    assert(restore(t, "version => 1").getLong(0) == 5L && rowsOf(t) == Seq(Row(1, "a"), Row(2, "b")))
  }
}
