package io.strata.write

import java.nio.file.Paths

import io.strata.SparkTestSession
import io.strata.log.{ConstraintViolationException, InvalidTableOperationException, TableLog}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.functions._
import org.scalatest.funsuite.AnyFunSuite

/** CHECK constraints: declared in DDL or as delta.constraints.* properties, enforced by both write paths. */
class ConstraintsSuite extends AnyFunSuite with SparkTestSession {
  import spark.implicits._

  private def rows(df: DataFrame): Seq[Row] = df.collect().toSeq.sortBy(_.toString)
  private def log(table: String) = TableLog.forPath(new Path(location(table)), new Configuration())
  private def localDir(table: String) = Paths.get(new java.net.URI(location(table)).getPath)

  private def freshTable(ddl: String): String = freshTable("ck", ddl)

  private def causes(e: Throwable): Seq[Throwable] = Iterator.iterate(e)(_.getCause).takeWhile(_ != null).toSeq

  /** The write fails naming the constraint; the table keeps its version and its files. */
  private def assertRejected(table: String, fragment: String)(write: => Unit): Unit = {
    val before = log(table).snapshot().version
    val files = filesUnder(localDir(table))
    val e = intercept[Exception](write)
    assert(causes(e).exists(c => Option(c.getMessage).exists(_.contains(fragment))), s"no '$fragment' in: $e")
    assert(log(table).snapshot().version == before)
    assert(filesUnder(localDir(table)) == files, "the failed write left files behind")
  }

  test("CONSTRAINT ... CHECK in CREATE TABLE is stored as delta.constraints.* and needs writer version 3") {
    val t = freshTable("(id BIGINT, p STRING, CONSTRAINT Id_Pos CHECK (id > 0)) USING strata PARTITIONED BY (p)")
    val snap = log(t).snapshot()
    assert(snap.metadata.configuration.get("delta.constraints.id_pos").contains("id > 0"))
    assert(snap.protocol.minReaderVersion == 1 && snap.protocol.minWriterVersion == 3)
  }

  test("V2 writes (INSERT, writeTo) enforce CHECK constraints; NULL fails as in Delta; valid rows commit") {
    val t = freshTable("(id BIGINT, p STRING, CONSTRAINT id_pos CHECK (id > 0)) USING strata PARTITIONED BY (p)")
    spark.sql(s"INSERT INTO $t VALUES (1, 'a'), (2, 'b')")
    assert(log(t).snapshot().version == 1)
    assertRejected(t, "CHECK constraint id_pos (id > 0) violated by row with values: id = -5") {
      spark.sql(s"INSERT INTO $t VALUES (3, 'a'), (-5, 'b')").collect()
    }
    assertRejected(t, "CHECK constraint id_pos (id > 0) violated by row with values: id = null") {
      spark.sql(s"INSERT INTO $t VALUES (CAST(NULL AS BIGINT), 'a')").collect()
    }
    assertRejected(t, "CHECK constraint id_pos") {
      spark.range(-50, 50, 1, 4).select($"id", ($"id" % 7).cast("string").as("p")).writeTo(t).append()
    }
    val e = intercept[Exception](spark.sql(s"INSERT OVERWRITE $t SELECT 0, 'z'").collect())
    assert(causes(e).exists(_.isInstanceOf[ConstraintViolationException]), e.toString)
    spark.range(1, 101, 1, 4).select($"id", ($"id" % 7).cast("string").as("p")).writeTo(t).append()
    assert(spark.table(t).count() == 102)
  }

  test("V1 path writes enforce the same constraints with the same message, and commit nothing on a violation") {
    val t = freshTable("(id BIGINT, p STRING, CONSTRAINT ok CHECK (id > 0 AND length(p) < 3)) USING strata " +
      "PARTITIONED BY (p)")
    val path = location(t)
    Seq((1L, "a")).toDF("id", "p").write.format("strata").mode("append").save(path)
    assertRejected(t, "CHECK constraint ok (id > 0 AND length(p) < 3) violated by row with values: id = 2, p = long") {
      Seq((2L, "long")).toDF("id", "p").write.format("strata").mode("append").save(path)
    }
    assertRejected(t, "violated by row with values: id = null, p = b") {
      Seq((None: Option[Long], "b")).toDF("id", "p").write.format("strata").mode("append").save(path)
    }
    assertRejected(t, "CHECK constraint ok") {
      spark.range(-10, 10, 1, 2).select($"id", lit("c").as("p")).write.format("strata").mode("overwrite").save(path)
    }
    spark.range(1, 11).select($"id", lit("c").as("p")).write.format("strata").mode("append").save(path)
    assert(spark.read.format("strata").load(path).count() == 11)
  }

  test("constraints calling RuntimeReplaceable functions (nvl, extract, ...) are enforced on V2 and V1 writes") {
    // Strata evaluates a constraint itself, on each written row: such functions must be replaced first, as the
    // optimizer does (their own eval fails).
    val t = freshTable("(id BIGINT, s STRING, ts TIMESTAMP, CONSTRAINT s_set CHECK (nvl(s, '') <> ''), " +
      "CONSTRAINT day_hours CHECK (extract(HOUR FROM ts) BETWEEN 8 AND 17)) USING strata")
    spark.sql(s"INSERT INTO $t VALUES (1, 'a', TIMESTAMP'2024-01-01 08:00:00'), (2, 'b', TIMESTAMP'2024-01-01 17:59:59')")
    assertRejected(t, "CHECK constraint s_set (nvl(s, '') <> '') violated by row with values: s = null") {
      spark.sql(s"INSERT INTO $t VALUES (3, NULL, TIMESTAMP'2024-01-01 12:00:00')").collect()
    }
    assertRejected(t, "CHECK constraint day_hours (extract(HOUR FROM ts) BETWEEN 8 AND 17) violated by row with " +
      "values: ts = ") {
      spark.sql("SELECT 4L AS id, 'd' AS s, TIMESTAMP'2024-01-01 18:00:00' AS ts")
        .write.format("strata").mode("append").save(location(t))
    }
    spark.sql("SELECT 5L AS id, 'e' AS s, TIMESTAMP'2024-01-01 09:30:00' AS ts")
      .write.format("strata").mode("append").save(location(t))
    assert(rows(spark.sql(s"SELECT id FROM $t")) == Seq(Row(1L), Row(2L), Row(5L)))
  }

  test("ALTER TABLE ADD CONSTRAINT checks the rows already there; DROP CONSTRAINT removes it") {
    val t = freshTable("(id BIGINT, s STRING) USING strata")
    spark.sql(s"INSERT INTO $t VALUES (1, 'x'), (2, NULL)")
    val v = log(t).snapshot().version
    // Spark's own check of existing rows lets NULL pass; Strata's (Delta's rule) does not.
    val e = intercept[Exception](spark.sql(s"ALTER TABLE $t ADD CONSTRAINT s_set CHECK (s <> '')"))
    assert(causes(e).exists(c => c.isInstanceOf[InvalidTableOperationException] &&
      c.getMessage.contains("1 row(s) already in the table do not satisfy it")), e.toString)
    assert(log(t).snapshot().version == v)
    assert(log(t).snapshot().protocol.minWriterVersion == 2)

    spark.sql(s"ALTER TABLE $t ADD CONSTRAINT small CHECK (id < 10)")
    val snap = log(t).snapshot()
    assert(snap.metadata.configuration.get("delta.constraints.small").contains("id < 10"))
    assert(snap.protocol.minWriterVersion == 3)
    assertRejected(t, "CHECK constraint small (id < 10)") { spark.sql(s"INSERT INTO $t VALUES (10, 'y')").collect() }
    val dup = intercept[Exception](spark.sql(s"ALTER TABLE $t ADD CONSTRAINT SMALL CHECK (id < 5)"))
    assert(causes(dup).exists(c => Option(c.getMessage).exists(_.contains("already has a constraint named small"))))

    spark.sql(s"ALTER TABLE $t DROP CONSTRAINT small")
    assert(!log(t).snapshot().metadata.configuration.contains("delta.constraints.small"))
    spark.sql(s"INSERT INTO $t VALUES (10, 'y')")
    assert(rows(spark.table(t)) == Seq(Row(1L, "x"), Row(10L, "y"), Row(2L, null)))
  }

  test("a constraint on an unknown column or that is not a condition is refused when added") {
    val t = freshTable("(id BIGINT) USING strata")
    val e1 = intercept[Exception](spark.sql(s"ALTER TABLE $t SET TBLPROPERTIES ('delta.constraints.c1' = 'nope > 1')"))
    assert(causes(e1).exists(c => Option(c.getMessage).exists(_.contains("CHECK constraint c1 (nope > 1) cannot be " +
      "checked against the table's columns"))), e1.toString)
    val e2 = intercept[Exception](spark.sql(s"ALTER TABLE $t SET TBLPROPERTIES ('delta.constraints.c2' = 'id + 1')"))
    assert(causes(e2).exists(c => Option(c.getMessage).exists(_.contains("is not a condition"))), e2.toString)
    assert(log(t).snapshot().version == 0)
  }

  test("session-catalog tables USING strata take constraints too") {
    spark.sql("CREATE TABLE default.ck_sess (id INT, CONSTRAINT pos CHECK (id >= 0)) USING strata")
    try {
      spark.sql("INSERT INTO default.ck_sess VALUES (0), (1)")
      assertRejected("default.ck_sess", "CHECK constraint pos (id >= 0)") {
        spark.sql("INSERT INTO default.ck_sess VALUES (-1)").collect()
      }
      spark.sql("ALTER TABLE default.ck_sess DROP CONSTRAINT pos")
      spark.sql("INSERT INTO default.ck_sess VALUES (-1)")
      assert(spark.table("default.ck_sess").count() == 3)
    } finally spark.sql("DROP TABLE IF EXISTS default.ck_sess")
  }

  test("CTAS with a delta.constraints.* property checks the query's rows; a violation creates nothing") {
    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.ck")
    val e = intercept[Exception](spark.sql("CREATE TABLE strata.ck.ctas USING strata " +
      "TBLPROPERTIES ('delta.constraints.pos' = 'id > 0') AS SELECT id FROM range(-1, 3)"))
    assert(causes(e).exists(_.isInstanceOf[ConstraintViolationException]), e.toString)
    assert(!spark.catalog.tableExists("strata.ck.ctas"))
    spark.sql("CREATE TABLE strata.ck.ctas USING strata TBLPROPERTIES ('delta.constraints.pos' = 'id > 0') " +
      "AS SELECT id FROM range(1, 4)")
    assert(log("strata.ck.ctas").snapshot().version == 0)
    assert(log("strata.ck.ctas").snapshot().protocol.minWriterVersion == 3)
  }

  test("CREATE OR REPLACE TABLE and REPLACE TABLE keep the CHECK constraints they declare") {
    Seq("strata.ck.replaced", "spark_catalog.default.ck_replaced").foreach { t =>
      spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.ck")
      spark.sql(s"DROP TABLE IF EXISTS $t")
      spark.sql(s"CREATE OR REPLACE TABLE $t (id BIGINT, CONSTRAINT pos CHECK (id > 0)) USING strata")
      assert(log(t).snapshot().metadata.configuration.get("delta.constraints.pos").contains("id > 0"), t)
      spark.sql(s"REPLACE TABLE $t (id BIGINT, CONSTRAINT big CHECK (id > 10)) USING strata")
      val conf = log(t).snapshot().metadata.configuration
      assert(conf.get("delta.constraints.big").contains("id > 10") && !conf.contains("delta.constraints.pos"), conf)
      assertRejected(t, "big")(spark.sql(s"INSERT INTO $t VALUES (5)"))
      spark.sql(s"DROP TABLE $t")
    }
  }
}
