package io.strata.dml

import io.strata.log.InvalidTableOperationException
import org.apache.spark.sql.Row
import org.apache.spark.sql.connector.catalog.{Identifier, SupportsDeleteV2, SupportsRowLevelOperations, TableCatalog}
import org.apache.spark.sql.connector.expressions.filter.{AlwaysTrue, Predicate}
import org.apache.spark.sql.connector.write.{RowLevelOperation, RowLevelOperationInfo}
import org.apache.spark.sql.strata.SparkInternals
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import org.scalatest.funsuite.AnyFunSuite

/**
 * Results of DELETE / UPDATE / MERGE that are easy to get wrong: WHEN NOT MATCHED BY SOURCE under an ON condition that
 * restricts the target (the scan must not be pruned by it), time travel, a non-UTC session on date and timestamp
 * partitions, and the three ways to name a table.
 */
class DmlSemanticsSuite extends AnyFunSuite with DmlTestSupport {
  import spark.implicits._

  private def fourRows(): String = {
    val t = freshTable("dmls", "(id BIGINT, v STRING, p STRING) USING strata PARTITIONED BY (p)")
    spark.sql(s"INSERT INTO $t VALUES (1, 'x', 'a'), (2, 'x', 'a'), (3, 'x', 'b'), (4, 'x', 'b')")
    t
  }

  test("WHEN NOT MATCHED BY SOURCE reaches target rows outside a target-restricting ON condition") {
    Seq((1L, "s", "a"), (3L, "s", "b")).toDF("id", "v", "p").createOrReplaceTempView("nmbs_src")
    val on = "ON t.id = s.id AND t.p = 'a'"
    // Row 3 has a source row with its id, but ON also asks t.p = 'a': rows 2, 3 and 4 are not matched by source.
    val t1 = fourRows()
    spark.sql(s"MERGE INTO $t1 t USING nmbs_src s $on WHEN MATCHED THEN UPDATE SET v = s.v " +
      "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET v = 'orphan'")
    assert(rowsOf(t1) == Seq(Row(1L, "s", "a"), Row(2L, "orphan", "a"), Row(3L, "orphan", "b"), Row(4L, "orphan", "b")))
    assert(metric(t1, "numTargetRowsNotMatchedBySourceUpdated") == 3)

    val t2 = fourRows()
    spark.sql(s"MERGE INTO $t2 t USING nmbs_src s $on WHEN NOT MATCHED BY SOURCE THEN DELETE")
    assert(rowsOf(t2) == Seq(Row(1L, "x", "a")))

    // All three clause kinds: source row 3 is not matched (inserted), target rows 3 and 4 are deleted.
    val t3 = fourRows()
    spark.sql(s"MERGE INTO $t3 t USING nmbs_src s $on WHEN MATCHED THEN UPDATE SET v = s.v " +
      "WHEN NOT MATCHED THEN INSERT * WHEN NOT MATCHED BY SOURCE AND t.p = 'b' THEN DELETE")
    assert(rowsOf(t3) == Seq(Row(1L, "s", "a"), Row(2L, "x", "a"), Row(3L, "s", "b")))

    // The same trap through a source-side predicate: ON ... AND s.p = 'a' leaves every target row but 1 unmatched.
    val t4 = fourRows()
    spark.sql(s"MERGE INTO $t4 t USING nmbs_src s ON t.id = s.id AND s.p = 'a' " +
      "WHEN NOT MATCHED BY SOURCE AND t.id > 2 THEN UPDATE SET v = 'gone'")
    assert(rowsOf(t4) == Seq(Row(1L, "x", "a"), Row(2L, "x", "a"), Row(3L, "gone", "b"), Row(4L, "gone", "b")))
  }

  test("DML on a table loaded at a version (time travel) is refused with a clear error; nothing is committed") {
    val t = fourRows()
    Seq((1L, "s", "a")).toDF("id", "v", "p").createOrReplaceTempView("tt_src")
    spark.sql(s"DELETE FROM $t WHERE id = 4")
    val Array(_, ns, name) = t.split('.')
    val catalog = SparkInternals.catalogManager(spark).catalog("strata").asInstanceOf[TableCatalog]
    val old = catalog.loadTable(Identifier.of(Array(ns), name), "1")
    def info(c: RowLevelOperation.Command) = new RowLevelOperationInfo {
      override def options(): CaseInsensitiveStringMap = CaseInsensitiveStringMap.empty()
      override def command(): RowLevelOperation.Command = c
    }
    for (c <- RowLevelOperation.Command.values()) {
      val e = intercept[InvalidTableOperationException](
        old.asInstanceOf[SupportsRowLevelOperations].newRowLevelOperationBuilder(info(c)))
      assert(e.getMessage.contains(s"$c on ") && e.getMessage.contains("read at version 1 (time travel)"), e.getMessage)
    }
    val e = intercept[InvalidTableOperationException](
      old.asInstanceOf[SupportsDeleteV2].deleteWhere(Array[Predicate](new AlwaysTrue)))
    assert(e.getMessage.contains("time travel"), e.getMessage)
    // SQL has no way to name a version as a DML target: the statement does not parse, and nothing happens.
    for (stmt <- Seq(s"DELETE FROM $t VERSION AS OF 1 WHERE id = 1", s"UPDATE $t VERSION AS OF 1 SET v = 'u'",
                     s"MERGE INTO $t VERSION AS OF 1 t USING tt_src s ON t.id = s.id WHEN MATCHED THEN DELETE")) {
      intercept[Exception](spark.sql(stmt))
    }
    assert(version(t) == 2 && rowsOf(t, "id") == Seq(Row(1L), Row(2L), Row(3L)))
    // A time-travel read as the *source* of a MERGE is a deliberate choice of data (a restore): it commits.
    spark.sql(s"MERGE INTO $t t USING (SELECT * FROM $t VERSION AS OF 1) s ON t.id = s.id " +
      "WHEN NOT MATCHED THEN INSERT *")
    assert(rowsOf(t) == Seq(Row(1L, "x", "a"), Row(2L, "x", "a"), Row(3L, "x", "b"), Row(4L, "x", "b")))
  }

  test("DML in an America/Los_Angeles session on date and timestamp partitions: right rows and UTC partition values") {
    val zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try {
      val t = freshTable("dmls", "(id BIGINT, v STRING, d DATE, ts TIMESTAMP) USING strata PARTITIONED BY (d, ts)")
      // Local LA times: 01:30 PST (09:30Z), 03:30 PDT after the spring-forward gap (10:30Z), 23:30 PST (07:30Z next day).
      spark.sql(s"""INSERT INTO $t VALUES
        (1, 'a', DATE'2024-03-10', TIMESTAMP'2024-03-10 01:30:00'),
        (2, 'b', DATE'2024-03-10', TIMESTAMP'2024-03-10 03:30:00'),
        (3, 'c', DATE'2024-12-31', TIMESTAMP'2024-12-31 23:30:00'),
        (4, 'd', DATE'2024-06-01', TIMESTAMP'2024-06-01 00:00:00')""")
      // Partition-only: the metadata DELETE; the literal means 01:45 LA (09:45Z), so only row 1 goes.
      spark.sql(s"DELETE FROM $t WHERE ts < TIMESTAMP'2024-03-10 01:45:00'")
      assert(changes(t, version(t))._1.isEmpty, "a partition-only delete rewrites nothing")
      spark.sql(s"UPDATE $t SET v = 'u' WHERE ts = TIMESTAMP'2024-03-10 03:30:00' AND v <> 'zzz'")
      // Moves row 4 to new date and timestamp partitions.
      spark.sql(s"UPDATE $t SET d = DATE'2024-07-01', ts = TIMESTAMP'2024-07-01 12:00:00' WHERE id = 4")
      spark.sql(s"MERGE INTO $t t USING (SELECT TIMESTAMP'2024-12-31 23:30:00' AS ts, DATE'2024-12-31' AS d) s " +
        "ON t.ts = s.ts AND t.d = s.d WHEN MATCHED THEN UPDATE SET v = 'm' " +
        "WHEN NOT MATCHED BY SOURCE AND t.d > DATE'2024-06-30' THEN UPDATE SET v = 'july'")
      assert(rowsOf(t, "id, v, cast(d AS STRING), cast(ts AS STRING)") == Seq(
        Row(2L, "u", "2024-03-10", "2024-03-10 03:30:00"),
        Row(3L, "m", "2024-12-31", "2024-12-31 23:30:00"),
        Row(4L, "july", "2024-07-01", "2024-07-01 12:00:00")))
      // The log holds instants in UTC, whatever the session zone.
      val values = log(t).snapshot().files.map(f => (f.partitionValues("d").get, f.partitionValues("ts").get)).toSet
      assert(values == Set(("2024-03-10", "2024-03-10T10:30:00.000000Z"), ("2024-12-31", "2025-01-01T07:30:00.000000Z"),
        ("2024-07-01", "2024-07-01T19:00:00.000000Z")), values)
      spark.conf.set("spark.sql.session.timeZone", "UTC")
      assert(rowsOf(t, "id, cast(ts AS STRING)") == Seq(Row(2L, "2024-03-10 10:30:00"), Row(3L, "2025-01-01 07:30:00"),
        Row(4L, "2024-07-01 19:00:00")))
    } finally spark.conf.set("spark.sql.session.timeZone", zone)
  }

  test("a partition-only DELETE by date/time functions of a timestamp partition, in UTC and America/Los_Angeles") {
    // Spark hands the condition over as a V2 predicate (hour() becomes EXTRACT(HOUR FROM ts), dayofweek() an EXTRACT
    // of DAY_OF_WEEK) and Strata evaluates it on each file's partition values: the RuntimeReplaceable functions
    // (extract, nvl, ...) must be replaced first, and the EXTRACT fields spelled as Spark's parser knows them.
    val instants = Seq(1 -> "2024-01-01 16:00:00Z", 2 -> "2024-01-01 10:00:00Z", 3 -> "2024-01-02 00:30:00Z",
      4 -> "2023-12-31 23:00:00Z", 5 -> "", 6 -> "2024-07-04 16:15:00Z", 7 -> "2024-01-01 05:00:00Z")
    // In Los Angeles: 1 08:00, 2 02:00, 3 2024-01-01 16:30, 4 15:00 (Sunday), 6 09:15 (PDT), 7 2023-12-31 21:00.
    val cases = Seq( // predicate -> rows deleted in UTC, rows deleted in Los Angeles
      "hour(ts) = 16" -> (Set(1, 6), Set(3)),
      "year(ts) = 2023" -> (Set(4), Set(4, 7)),
      "extract(MINUTE FROM ts) = 30 OR dayofweek(ts) = 1 OR dayofyear(ts) = 186" -> (Set(3, 4, 6), Set(3, 4, 6, 7)),
      "to_date(ts) = DATE'2024-01-01'" -> (Set(1, 2, 7), Set(1, 2, 3)),
      "date_format(ts, 'yyyy-MM-dd HH') = '2024-01-01 16'" -> (Set(1), Set(3)),
      "nvl(hour(ts), -1) < 9" -> (Set(3, 5, 7), Set(1, 2, 5)))
    val zone = spark.conf.get("spark.sql.session.timeZone")
    // The Los Angeles tables have deletion vectors enabled: the partition-only DELETE takes the same path there.
    Seq("UTC" -> "", "America/Los_Angeles" -> "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')").foreach {
      case (z, properties) =>
        spark.conf.set("spark.sql.session.timeZone", z)
        try cases.foreach { case (predicate, (utc, la)) =>
          val deleted = if (z == "UTC") utc else la
          val t = freshTable("dmls", s"(id INT, ts TIMESTAMP) USING strata PARTITIONED BY (ts) $properties")
          spark.sql(s"INSERT INTO $t VALUES " + instants.map { case (id, ts) =>
            s"($id, ${if (ts.isEmpty) "NULL" else s"TIMESTAMP'$ts'"})" }.mkString(", "))
          spark.sql(s"DELETE FROM $t WHERE $predicate")
          assert(rowsOf(t, "id").map(_.getInt(0)).toSet == instants.map(_._1).toSet -- deleted, s"$predicate in $z")
          val (added, removed) = changes(t, version(t))
          assert(added.isEmpty && removed.size == deleted.size, s"$predicate in $z: not a partition-only delete")
        } finally spark.conf.set("spark.sql.session.timeZone", zone)
    }
  }

  /** DELETE (rewrite and metadata-only), UPDATE and MERGE through one name of a table. */
  private def exercise(t: String): Unit = {
    spark.sql(s"INSERT INTO $t VALUES (1, 'x', 'a'), (2, 'x', 'a'), (3, 'x', 'b'), (4, 'x', 'c')")
    spark.sql(s"DELETE FROM $t WHERE id = 2")
    assert(lastCommit(t).operation.contains("DELETE"))
    spark.sql(s"DELETE FROM $t WHERE p = 'c'")
    spark.sql(s"UPDATE $t SET v = 'u' WHERE id = 3")
    assert(lastCommit(t).operation.contains("UPDATE"))
    spark.sql(s"MERGE INTO $t t USING (SELECT 1L AS id, 'm' AS v, 'a' AS p UNION ALL SELECT 5L, 'i', 'd') s " +
      "ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    assert(lastCommit(t).operation.contains("MERGE"))
    assert(rowsOf(t) == Seq(Row(1L, "m", "a"), Row(3L, "u", "b"), Row(5L, "i", "d")), t)
    assert(version(t) == 5, t)
  }

  test("DML through the strata catalog, spark_catalog USING strata, and a path table strata.`/abs/path`") {
    exercise(freshTable("dmls", "(id BIGINT, v STRING, p STRING) USING strata PARTITIONED BY (p)"))

    spark.sql("DROP TABLE IF EXISTS default.dml_session_t")
    spark.sql("CREATE TABLE default.dml_session_t (id BIGINT, v STRING, p STRING) USING strata PARTITIONED BY (p)")
    try exercise("spark_catalog.default.dml_session_t") finally spark.sql("DROP TABLE default.dml_session_t")

    val path = tempDir("dml-path").resolve("t").toString
    Seq.empty[(Long, String, String)].toDF("id", "v", "p").write.format("strata").partitionBy("p").save(path)
    exercise(s"strata.`$path`")
  }
}
