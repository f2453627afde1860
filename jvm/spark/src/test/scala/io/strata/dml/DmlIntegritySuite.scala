package io.strata.dml

import io.strata.config.WriteSettings
import org.apache.spark.SparkThrowable
import org.apache.spark.sql.Row
import org.scalatest.funsuite.AnyFunSuite

/**
 * What DML must refuse or skip without committing anything: NOT NULL and CHECK violations on rewritten and inserted
 * rows, MERGE with several source rows for one target row, and re-runs of an idempotent (txnAppId / txnVersion)
 * statement. "Nothing committed": the table keeps its version, its rows, and its data files on disk.
 */
class DmlIntegritySuite extends AnyFunSuite with DmlTestSupport {
  import spark.implicits._

  private def dataFiles(t: String): Set[String] = filesUnder(localDir(t)).filter(_.endsWith(".parquet"))

  /** `stmt` fails with an error whose message (or a cause's) contains `fragment`; the table is left untouched. */
  private def assertRefused(t: String, fragment: String)(stmt: => Unit): Throwable = {
    val (v, before, files) = (version(t), rowsOf(t), dataFiles(t))
    val e = intercept[Throwable](stmt)
    assert(causes(e).exists(c => Option(c.getMessage).exists(_.contains(fragment))), s"no '$fragment' in: $e")
    assert(version(t) == v, "a version was committed")
    assert(rowsOf(t) == before)
    assert(dataFiles(t) == files, "the failed statement left data files behind")
    e
  }

  private def constrained(): String = {
    val t = freshTable("dmli", "(id BIGINT NOT NULL, v STRING NOT NULL, n INT, p STRING, " +
      "CONSTRAINT n_pos CHECK (n > 0)) USING strata PARTITIONED BY (p)")
    spark.sql(s"INSERT INTO $t VALUES (1, 'a', 1, 'x'), (2, 'b', 2, 'x'), (3, 'c', 3, 'y')")
    t
  }

  test("UPDATE: a CHECK or NOT NULL violation on a rewritten row fails the statement and commits nothing") {
    val t = constrained()
    assertRefused(t, "CHECK constraint n_pos (n > 0) violated by row with values: n = -1") {
      spark.sql(s"UPDATE $t SET n = -1 WHERE id = 2")
    }
    // A partition-moving UPDATE is checked the same way.
    assertRefused(t, "CHECK constraint n_pos") { spark.sql(s"UPDATE $t SET n = 0, p = 'z' WHERE id = 3") }
    assertRefused(t, "n_pos") { spark.sql(s"UPDATE $t SET n = NULL WHERE p = 'x'") }
    assertRefused(t, "NOT_NULL_ASSERT_VIOLATION") { spark.sql(s"UPDATE $t SET v = NULL WHERE id = 1") }
    assertRefused(t, "NOT_NULL_ASSERT_VIOLATION") { spark.sql(s"UPDATE $t SET v = if(id = 1, NULL, v)") }
    spark.sql(s"UPDATE $t SET n = n + 10 WHERE id = 2")
    assert(rowsOf(t) == Seq(Row(1L, "a", 1, "x"), Row(2L, "b", 12, "x"), Row(3L, "c", 3, "y")))
  }

  test("MERGE: violations on updated and on inserted rows fail the statement and commit nothing") {
    val t = constrained()
    Seq((1L, Option("A"), -5, "x")).toDF("id", "v", "n", "p").createOrReplaceTempView("bad_update")
    assertRefused(t, "CHECK constraint n_pos (n > 0) violated by row with values: n = -5") {
      spark.sql(s"MERGE INTO $t t USING bad_update s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *")
    }
    Seq((9L, Option("I"), 0, "x")).toDF("id", "v", "n", "p").createOrReplaceTempView("bad_insert")
    assertRefused(t, "CHECK constraint n_pos (n > 0) violated by row with values: n = 0") {
      spark.sql(s"MERGE INTO $t t USING bad_insert s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *")
    }
    Seq((9L, Option.empty[String], 4, "x")).toDF("id", "v", "n", "p").createOrReplaceTempView("null_insert")
    assertRefused(t, "NOT_NULL_ASSERT_VIOLATION") {
      spark.sql(s"MERGE INTO $t t USING null_insert s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *")
    }
    assertRefused(t, "NOT_NULL_ASSERT_VIOLATION") {
      spark.sql(s"MERGE INTO $t t USING null_insert s ON t.id = s.id WHEN NOT MATCHED BY SOURCE AND t.id = 3 " +
        "THEN UPDATE SET v = NULL")
    }
    // One valid clause and one violating clause in the same statement: still nothing committed.
    Seq((1L, Option("A"), 5, "x"), (8L, Option("B"), -1, "y")).toDF("id", "v", "n", "p")
      .createOrReplaceTempView("mixed")
    assertRefused(t, "n_pos") {
      spark.sql(s"MERGE INTO $t t USING mixed s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * " +
        "WHEN NOT MATCHED THEN INSERT *")
    }
    Seq((1L, Option("A"), 5, "x"), (8L, Option("B"), 1, "y")).toDF("id", "v", "n", "p")
      .createOrReplaceTempView("good")
    spark.sql(s"MERGE INTO $t t USING good s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    assert(rowsOf(t) == Seq(Row(1L, "A", 5, "x"), Row(2L, "b", 2, "x"), Row(3L, "c", 3, "y"), Row(8L, "B", 1, "y")))
  }

  test("MERGE with two source rows matching one target row: MERGE_CARDINALITY_VIOLATION, nothing committed") {
    val t = freshTable("dmli", "(id BIGINT, v STRING, p STRING) USING strata PARTITIONED BY (p)")
    spark.sql(s"INSERT INTO $t VALUES (1, 'a', 'x'), (2, 'b', 'y')")
    Seq((1L, "one"), (1L, "uno"), (3L, "three")).toDF("id", "v").createOrReplaceTempView("dup_src")
    for (clauses <- Seq("WHEN MATCHED THEN UPDATE SET v = s.v",
                        "WHEN MATCHED AND s.v <> 'x' THEN DELETE",
                        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (id, v, p) VALUES (s.id, s.v, 'x')")) {
      val e = assertRefused(t, "MERGE_CARDINALITY_VIOLATION") {
        spark.sql(s"MERGE INTO $t t USING dup_src s ON t.id = s.id $clauses")
      }
      val classes = causes(e).collect { case s: SparkThrowable => s.getCondition }
      assert(classes.contains("MERGE_CARDINALITY_VIOLATION"), s"$clauses: $classes")
    }
    assert(rowsOf(t) == Seq(Row(1L, "a", "x"), Row(2L, "b", "y")))
    // Spark (as delta-spark) exempts one unconditional DELETE: deleting a row twice is deleting it once.
    spark.sql(s"MERGE INTO $t t USING dup_src s ON t.id = s.id WHEN MATCHED THEN DELETE")
    assert(rowsOf(t) == Seq(Row(2L, "b", "y")))
  }

  /**
   * Runs `body` with the session's application transaction set to (app, version), then unsets it: Strata's session
   * confs (`keys` 0) or delta-spark's (`keys` 1).
   */
  private def asApp[T](app: String, v: Long, keys: Int = 0)(body: => T): T = {
    val (appKey, versionKey) = (WriteSettings.TxnAppId.sessions(keys), WriteSettings.TxnVersion.sessions(keys))
    spark.conf.set(appKey, app)
    spark.conf.set(versionKey, v.toString)
    try body finally {
      spark.conf.unset(appKey)
      spark.conf.unset(versionKey)
    }
  }

  /** `stmt` as (app, v) is skipped: no version, same rows, no file left behind. */
  private def assertSkipped(t: String, app: String, v: Long)(stmt: => Unit): Unit = {
    val (ver, before, files) = (version(t), rowsOf(t), dataFiles(t))
    asApp(app, v)(stmt)
    assert(version(t) == ver, "a skipped statement committed a version")
    assert(rowsOf(t) == before)
    assert(dataFiles(t) == files, "the skipped statement left data files behind")
  }

  test("idempotent DML under delta-spark's session confs write.txnAppId / write.txnVersion") {
    val t = freshTable("dmli", "(id BIGINT, n BIGINT) USING strata")
    spark.sql(s"INSERT INTO $t VALUES (1, 0), (2, 0)")
    val bump = s"UPDATE $t SET n = n + 1 WHERE id = 1"
    assert(WriteSettings.TxnAppId.sessions(1) == "spark.databricks.delta.write.txnAppId")
    asApp("moved", 4, keys = 1)(spark.sql(bump))
    assert(log(t).snapshot().transactionVersion("moved").contains(4L))
    val v = version(t)
    asApp("moved", 4, keys = 1)(spark.sql(bump))
    asApp("moved", 3, keys = 1)(spark.sql(s"INSERT INTO $t VALUES (3, 0)"))
    assert(version(t) == v && rowsOf(t, "id, n") == Seq(Row(1L, 1L), Row(2L, 0L)), "both skipped")
    asApp("moved", 5, keys = 1)(spark.sql(bump))
    assert(rowsOf(t, "id, n") == Seq(Row(1L, 2L), Row(2L, 0L)))
  }

  test("idempotent DML: a re-run with the same txnVersion is skipped, a higher one applies") {
    val t = freshTable("dmli", "(id BIGINT, n BIGINT, p STRING) USING strata PARTITIONED BY (p)")
    spark.sql(s"INSERT INTO $t VALUES (1, 0, 'x'), (2, 0, 'x'), (3, 0, 'y'), (4, 0, 'z')")
    val bump = s"UPDATE $t SET n = n + 1 WHERE id = 1"
    asApp("etl", 1)(spark.sql(bump))
    assert(lastCommit(t).operation.contains("UPDATE"))
    assert(log(t).snapshot().transactionVersion("etl").contains(1L))
    assertSkipped(t, "etl", 1)(spark.sql(bump))
    assertSkipped(t, "etl", 0)(spark.sql(bump)) // an older version is skipped too
    asApp("etl", 2)(spark.sql(bump))
    assert(rowsOf(t, "id, n") == Seq(Row(1L, 2L), Row(2L, 0L), Row(3L, 0L), Row(4L, 0L)))

    // MERGE (the foreachBatch upsert pattern): a retried batch is skipped.
    Seq((2L, 10L, "x"), (5L, 10L, "y")).toDF("id", "n", "p").createOrReplaceTempView("batch")
    val upsert = s"MERGE INTO $t t USING batch s ON t.id = s.id " +
      "WHEN MATCHED THEN UPDATE SET n = t.n + s.n WHEN NOT MATCHED THEN INSERT *"
    asApp("etl", 3)(spark.sql(upsert))
    assertSkipped(t, "etl", 3)(spark.sql(upsert))
    assert(rowsOf(t, "id, n") == Seq(Row(1L, 2L), Row(2L, 10L), Row(3L, 0L), Row(4L, 0L), Row(5L, 10L)))

    // DELETE, both as a rewrite and as a metadata-only partition delete.
    asApp("etl", 4)(spark.sql(s"DELETE FROM $t WHERE id = 3"))
    spark.sql(s"INSERT INTO $t VALUES (3, 0, 'y')")
    assertSkipped(t, "etl", 4)(spark.sql(s"DELETE FROM $t WHERE id = 3"))
    assertSkipped(t, "etl", 4)(spark.sql(s"DELETE FROM $t WHERE p = 'z'"))
    asApp("etl", 5)(spark.sql(s"DELETE FROM $t WHERE p = 'z'"))
    assert(log(t).snapshot().transactionVersion("etl").contains(5L))
    assert(rowsOf(t, "id, n") == Seq(Row(1L, 2L), Row(2L, 10L), Row(3L, 0L), Row(5L, 10L)))
    // Another application's version 1 is its own.
    asApp("other", 1)(spark.sql(s"UPDATE $t SET n = 7 WHERE id = 3"))
    assert(rowsOf(t, "id, n") == Seq(Row(1L, 2L), Row(2L, 10L), Row(3L, 7L), Row(5L, 10L)))
  }
}
