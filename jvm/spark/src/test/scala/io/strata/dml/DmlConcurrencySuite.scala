package io.strata.dml

import io.strata.log._
import org.apache.spark.sql.Row
import org.scalatest.funsuite.AnyFunSuite

/**
 * DELETE / UPDATE / MERGE against a rival commit that lands between the statement's read and its commit (a pause
 * the test log store injects, [[withRivalBeforeCommit]]; no sleeps). Every outcome is either a typed conflict with
 * the table exactly as the rival left it and none of the statement's files left behind, or both commit and the table
 * equals the rival followed by the statement (asserted row by row).
 */
class DmlConcurrencySuite extends AnyFunSuite with DmlTestSupport {
  import spark.implicits._

  private def newTable(props: String = "'delta.isolationLevel' = 'Serializable'"): String = {
    val t = freshTable("dmlc", s"(id BIGINT, v STRING, p STRING) USING strata PARTITIONED BY (p) TBLPROPERTIES ($props)")
    spark.sql(s"INSERT INTO $t VALUES (1, 'x', 'a'), (2, 'x', 'a'), (3, 'x', 'b'), (4, 'x', 'b')")
    t
  }

  private def dataFiles(t: String): Set[String] = filesUnder(localDir(t)).filter(_.endsWith(".parquet"))

  /** The statement failed: its job's files are gone (every data file on disk predates it or is the rival's). */
  private def assertNothingLeftBehind(t: String, filesBefore: Set[String], versionBefore: Long): Unit = {
    val l = log(t)
    val rivalAdds = (versionBefore + 1 to l.snapshot().version).flatMap(v => l.readCommit(v).collect {
      case a: AddFile => localDir(t).relativize(java.nio.file.Paths.get(
        new java.net.URI(l.snapshot().absolutePath(a.path).toUri.toString).getPath)).toString
    }).toSet
    val stray = dataFiles(t) -- filesBefore -- rivalAdds
    assert(stray.isEmpty, s"the failed statement left files behind: $stray")
  }

  private def ids(i: Long*): Seq[Row] = i.map(Row(_)).sortBy(_.toString)

  private val upsert = Seq((1L, "new", "a"), (5L, "ins", "a"))
  private def merge(t: String, view: String): Unit = spark.sql(
    s"""MERGE INTO $t t USING $view s ON t.id = s.id AND t.p = 'a'
       |WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *""".stripMargin)

  test("MERGE restricted to p=a vs an append into p=b: both commit, the table is the append then the MERGE") {
    val t = newTable()
    upsert.toDF("id", "v", "p").createOrReplaceTempView("upsert_src")
    raced(spark.sql(s"INSERT INTO $t VALUES (10, 'r', 'b')")) { merge(t, "upsert_src") }
    assert(version(t) == 3)
    assert(lastCommit(t).operation.contains("MERGE"))
    assert(rowsOf(t) == Seq(Row(1L, "new", "a"), Row(10L, "r", "b"), Row(2L, "x", "a"), Row(3L, "x", "b"),
      Row(4L, "x", "b"), Row(5L, "ins", "a")))
  }

  test("MERGE restricted to p=a vs an append into p=a: ConcurrentAppendException under serializable, nothing lost") {
    val t = newTable()
    upsert.toDF("id", "v", "p").createOrReplaceTempView("upsert_src")
    val files = dataFiles(t)
    val e = intercept[Exception](raced(spark.sql(s"INSERT INTO $t VALUES (10, 'r', 'a')")) { merge(t, "upsert_src") })
    val c = causeOf[ConcurrentAppendException](e)
    assert(c.winningVersion == 2L && c.getMessage.contains("p = 'a'"), c.getMessage)
    assert(version(t) == 2)
    assert(rowsOf(t) == Seq(Row(1L, "x", "a"), Row(10L, "r", "a"), Row(2L, "x", "a"), Row(3L, "x", "b"),
      Row(4L, "x", "b")))
    assertNothingLeftBehind(t, files, 1)
    // The retry on the new version sees the rival's row and commits.
    merge(t, "upsert_src")
    assert(rowsOf(t) == Seq(Row(1L, "new", "a"), Row(10L, "r", "a"), Row(2L, "x", "a"), Row(3L, "x", "b"),
      Row(4L, "x", "b"), Row(5L, "ins", "a")))
  }

  test("MERGE restricted to p=a vs an append into p=a under snapshot isolation: both commit, the appended row kept") {
    val t = newTable("'strata.isolationLevel' = 'snapshot'")
    upsert.toDF("id", "v", "p").createOrReplaceTempView("upsert_src")
    raced(spark.sql(s"INSERT INTO $t VALUES (10, 'r', 'a')")) { merge(t, "upsert_src") }
    assert(version(t) == 3)
    assert(lastCommit(t).json.get("isolationLevel").asText == "SnapshotIsolation")
    // The append (id 10, no source match) followed by the MERGE, equally the MERGE followed by the append.
    assert(rowsOf(t) == Seq(Row(1L, "new", "a"), Row(10L, "r", "a"), Row(2L, "x", "a"), Row(3L, "x", "b"),
      Row(4L, "x", "b"), Row(5L, "ins", "a")))
  }

  test("two MERGEs rewriting the same file: the rival commits, ours fails with ConcurrentDeleteDeleteException") {
    val t = newTable()
    Seq((1L, "ours", "a")).toDF("id", "v", "p").createOrReplaceTempView("ours_src")
    Seq((2L, "theirs", "a")).toDF("id", "v", "p").createOrReplaceTempView("theirs_src")
    val files = dataFiles(t)
    val aFile = log(t).snapshot().files.filter(_.partitionValues("p").contains("a")).map(_.path)
    assert(aFile.size == 1, "p=a is one file: both MERGEs rewrite it")
    val e = intercept[Exception](raced(merge(t, "theirs_src")) { merge(t, "ours_src") })
    val c = causeOf[ConcurrentDeleteDeleteException](e)
    assert(c.winningOperation == "MERGE" && c.getMessage.contains(aFile.head.split('/').last), c.getMessage)
    assert(version(t) == 2)
    assert(rowsOf(t) == Seq(Row(1L, "x", "a"), Row(2L, "theirs", "a"), Row(3L, "x", "b"), Row(4L, "x", "b")))
    assertNothingLeftBehind(t, files, 1)
  }

  test("two MERGEs on different partitions' files: both commit") {
    val t = newTable()
    Seq((1L, "ours", "a")).toDF("id", "v", "p").createOrReplaceTempView("ours_src2")
    Seq((3L, "theirs", "b")).toDF("id", "v", "p").createOrReplaceTempView("theirs_src2")
    raced(spark.sql(s"MERGE INTO $t t USING theirs_src2 s ON t.id = s.id AND t.p = 'b' " +
      "WHEN MATCHED THEN UPDATE SET v = s.v")) {
      spark.sql(s"MERGE INTO $t t USING ours_src2 s ON t.id = s.id AND t.p = 'a' WHEN MATCHED THEN UPDATE SET v = s.v")
    }
    assert(version(t) == 3)
    assert(rowsOf(t) == Seq(Row(1L, "ours", "a"), Row(2L, "x", "a"), Row(3L, "theirs", "b"), Row(4L, "x", "b")))
  }

  test("DELETE (rewrite) vs a compaction of the same file: ConcurrentDeleteDeleteException, no row lost or resurrected") {
    val t = newTable()
    val files = dataFiles(t)
    val e = intercept[Exception](raced(compact(t, _.partitionValues("p").contains("a"))) {
      spark.sql(s"DELETE FROM $t WHERE id = 1")
    })
    val c = causeOf[ConcurrentDeleteDeleteException](e)
    assert(c.winningOperation == "OPTIMIZE", c.getMessage)
    assert(version(t) == 2)
    assert(rowsOf(t) == Seq(Row(1L, "x", "a"), Row(2L, "x", "a"), Row(3L, "x", "b"), Row(4L, "x", "b")))
    assertNothingLeftBehind(t, files, 1)
    // A compaction of the other partition does not conflict.
    raced(compact(t, _.partitionValues("p").contains("b"))) { spark.sql(s"DELETE FROM $t WHERE id = 1") }
    assert(rowsOf(t) == Seq(Row(2L, "x", "a"), Row(3L, "x", "b"), Row(4L, "x", "b")))
  }

  test("DELETE of a whole partition (metadata-only) vs a compaction of it: ConcurrentDeleteDeleteException") {
    val t = newTable()
    val e = intercept[Exception](raced(compact(t, _.partitionValues("p").contains("a"))) {
      spark.sql(s"DELETE FROM $t WHERE p = 'a'")
    })
    causeOf[ConcurrentDeleteDeleteException](e)
    assert(version(t) == 2)
    assert(rowsOf(t) == Seq(Row(1L, "x", "a"), Row(2L, "x", "a"), Row(3L, "x", "b"), Row(4L, "x", "b")))
    spark.sql(s"DELETE FROM $t WHERE p = 'a'")
    assert(rowsOf(t) == Seq(Row(3L, "x", "b"), Row(4L, "x", "b")))
  }

  test("UPDATE vs a concurrent DELETE in the same file: ConcurrentDeleteDeleteException, the DELETE's result kept") {
    val t = newTable()
    val files = dataFiles(t)
    val e = intercept[Exception](raced(spark.sql(s"DELETE FROM $t WHERE id = 2")) {
      spark.sql(s"UPDATE $t SET v = 'u' WHERE id = 1")
    })
    val c = causeOf[ConcurrentDeleteDeleteException](e)
    assert(c.winningOperation == "DELETE", c.getMessage)
    assert(version(t) == 2)
    assert(rowsOf(t) == Seq(Row(1L, "x", "a"), Row(3L, "x", "b"), Row(4L, "x", "b")))
    assertNothingLeftBehind(t, files, 1)
    spark.sql(s"UPDATE $t SET v = 'u' WHERE id = 1")
    assert(rowsOf(t) == Seq(Row(1L, "u", "a"), Row(3L, "x", "b"), Row(4L, "x", "b")))
  }

  test("UPDATE vs a concurrent DELETE in another partition: both commit") {
    val t = newTable()
    raced(spark.sql(s"DELETE FROM $t WHERE id = 3")) { spark.sql(s"UPDATE $t SET v = 'u' WHERE id = 1 AND p = 'a'") }
    assert(version(t) == 3)
    assert(rowsOf(t) == Seq(Row(1L, "u", "a"), Row(2L, "x", "a"), Row(4L, "x", "b")))
  }

  test("UPDATE by a data column vs an append: a new matching row conflicts (statistics), a non-matching one commits") {
    val t = newTable()
    raced(spark.sql(s"INSERT INTO $t VALUES (99, 'r', 'a')")) { spark.sql(s"UPDATE $t SET v = 'u' WHERE id = 1") }
    assert(rowsOf(t) == Seq(Row(1L, "u", "a"), Row(2L, "x", "a"), Row(3L, "x", "b"), Row(4L, "x", "b"),
      Row(99L, "r", "a")))
    val v = version(t)
    // The appended row has id 2: an UPDATE after it would have changed it too.
    val e = intercept[Exception](raced(spark.sql(s"INSERT INTO $t VALUES (2, 'r', 'b')")) {
      spark.sql(s"UPDATE $t SET v = 'w' WHERE id = 2")
    })
    assert(causeOf[ConcurrentAppendException](e).winningVersion == v + 1)
    assert(rowsOf(t) == Seq(Row(1L, "u", "a"), Row(2L, "r", "b"), Row(2L, "x", "a"), Row(3L, "x", "b"),
      Row(4L, "x", "b"), Row(99L, "r", "a")))
  }

  test("MERGE whose source reads the target (p=b) vs an append into p=b: ConcurrentAppendException") {
    val t = newTable()
    // Copies p=b's rows into p=a under new ids: a serial order after the append would have copied id 20 too.
    val copy = s"MERGE INTO $t t USING (SELECT id + 100 AS id, v, 'a' AS p FROM $t WHERE p = 'b') s " +
      "ON t.id = s.id AND t.p = 'a' WHEN NOT MATCHED THEN INSERT *"
    val e = intercept[Exception](raced(spark.sql(s"INSERT INTO $t VALUES (20, 'r', 'b')"))(spark.sql(copy)))
    causeOf[ConcurrentAppendException](e)
    assert(rowsOf(t, "id") == ids(1, 2, 3, 4, 20))
    spark.sql(copy)
    assert(rowsOf(t, "id") == ids(1, 2, 3, 4, 20, 103, 104, 120))
  }

  test("idempotent DELETE while a run of the same application commits its version: skipped, no file left behind") {
    val t = newTable()
    val files = dataFiles(t)
    val rival = () => log(t).startTransaction().commit(Seq(SetTransaction("job", 3L, None)), Operation("WRITE"))
    spark.conf.set("spark.strata.txnAppId", "job")
    spark.conf.set("spark.strata.txnVersion", "3")
    try raced(rival())(spark.sql(s"DELETE FROM $t WHERE id = 1"))
    finally { spark.conf.unset("spark.strata.txnAppId"); spark.conf.unset("spark.strata.txnVersion") }
    assert(version(t) == 2 && lastCommit(t).operation.contains("WRITE"))
    assert(rowsOf(t, "id") == ids(1, 2, 3, 4))
    assert(dataFiles(t) == files, "the skipped DELETE's files were deleted")
  }
}
