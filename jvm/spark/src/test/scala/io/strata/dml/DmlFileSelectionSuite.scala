package io.strata.dml

import org.apache.spark.sql.Row
import org.scalatest.funsuite.AnyFunSuite

/**
 * Which files a DELETE / UPDATE / MERGE rewrites, read from the log: only files holding a matching row (chosen by
 * statistics at planning, or by Spark's runtime group filter when statistics cannot tell), nothing when nothing
 * matches, and no job at all for a DELETE of whole partitions.
 */
class DmlFileSelectionSuite extends AnyFunSuite with DmlTestSupport {

  /**
   * A new table of 100 files of 100 rows (ids 100*k .. 100*k+99 in file k). `s` is 'a' or 'z' on every row except
   * id 4242 ('m'): every file's min/max of `s` spans 'a'..'z', so statistics cannot choose files by `s`.
   */
  private def copyOfHundredFiles(): String = {
    val t = freshTable("dmlf", "(id BIGINT, s STRING, v STRING) USING strata")
    spark.sql(s"INSERT INTO $t SELECT id, CASE WHEN id = 4242 THEN 'm' WHEN id % 2 = 0 THEN 'a' ELSE 'z' END, 'v' " +
      "FROM range(0, 10000, 1, 100)")
    assert(log(t).snapshot().files.size == 100)
    t
  }

  /** Asserts the last commit removed exactly the file(s) holding `ids`, and returns (adds, removes). */
  private def assertRewrote(t: String, before: Map[String, (Long, Long)], ids: Long*) = {
    val (adds, removes) = changes(t, version(t))
    val expected = before.collect { case (path, (lo, hi)) if ids.exists(i => i >= lo && i <= hi) => path }.toSet
    assert(removes.map(_.path).toSet == expected, s"removed ${removes.map(_.path)}, expected $expected")
    (adds, removes)
  }

  /** Each file's path and its id range (min, max) from its statistics. */
  private def idRanges(t: String): Map[String, (Long, Long)] = log(t).snapshot().files.map { f =>
    val s = io.strata.log.ActionCodec.mapper.readTree(f.stats.get)
    f.path -> (s.get("minValues").get("id").asLong, s.get("maxValues").get("id").asLong)
  }.toMap

  test("an UPDATE of one row by id (statistics) rewrites exactly 1 of 100 files") {
    val t = copyOfHundredFiles()
    val before = idRanges(t)
    spark.sql(s"UPDATE $t SET v = 'u' WHERE id = 4242")
    val (adds, removes) = assertRewrote(t, before, 4242L)
    assert(removes.size == 1 && adds.size == 1, s"adds $adds removes $removes")
    assert(metric(t, "numRemovedFiles") == 1 && metric(t, "numAddedFiles") == 1)
    assert(metric(t, "numUpdatedRows") == 1 && metric(t, "numCopiedRows") == 99)
    assert(log(t).snapshot().files.size == 100)
    assert(rows(spark.sql(s"SELECT v, count(*) FROM $t GROUP BY v")) == Seq(Row("u", 1L), Row("v", 9999L)))
    assert(rows(spark.sql(s"SELECT id FROM $t WHERE v = 'u'")) == Seq(Row(4242L)))
  }

  test("an UPDATE by a column statistics cannot prune rewrites 1 of 100 files (runtime group filter)") {
    val t = copyOfHundredFiles()
    val before = idRanges(t)
    spark.sql(s"UPDATE $t SET v = 'u' WHERE s = 'm'")
    val (adds, removes) = assertRewrote(t, before, 4242L)
    assert(removes.size == 1 && adds.size == 1, s"adds $adds removes $removes")
    assert(rows(spark.sql(s"SELECT id, s FROM $t WHERE v = 'u'")) == Seq(Row(4242L, "m")))
    assert(spark.table(t).count() == 10000)
  }

  test("a DELETE and a MERGE of one row rewrite exactly 1 of 100 files") {
    val t = copyOfHundredFiles()
    val before = idRanges(t)
    spark.sql(s"DELETE FROM $t WHERE s = 'm'")
    val (adds, removes) = assertRewrote(t, before, 4242L)
    assert(removes.size == 1 && adds.size == 1)
    assert(metric(t, "numDeletedRows") == 1 && metric(t, "numCopiedRows") == 99)
    assert(spark.table(t).count() == 9999)

    val before2 = idRanges(t)
    spark.sql(s"MERGE INTO $t t USING (SELECT 777L AS id) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = 'm'")
    val (adds2, removes2) = assertRewrote(t, before2, 777L)
    assert(removes2.size == 1 && adds2.size == 1)
    assert(metric(t, "numTargetFilesRemoved") == 1 && metric(t, "numTargetRowsUpdated") == 1)
    assert(rows(spark.sql(s"SELECT id FROM $t WHERE v = 'm'")) == Seq(Row(777L)))
  }

  test("DELETE / UPDATE / MERGE whose condition matches nothing rewrite nothing") {
    val t = copyOfHundredFiles()
    val snapshotFiles = log(t).snapshot().files.map(_.path).toSet
    // 'n' lies inside every file's 'a'..'z' range of s: only the runtime filter can find that nothing matches.
    for (stmt <- Seq(s"DELETE FROM $t WHERE id = -1", s"DELETE FROM $t WHERE s = 'n'",
                     s"UPDATE $t SET v = 'u' WHERE id > 100000", s"UPDATE $t SET v = 'u' WHERE s = 'n'",
                     s"MERGE INTO $t t USING (SELECT 123456L AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE")) {
      val v = version(t)
      spark.sql(stmt)
      (v + 1 to version(t)).foreach { c =>
        val (adds, removes) = changes(t, c)
        assert(adds.isEmpty && removes.isEmpty, s"$stmt rewrote files: adds $adds, removes $removes")
      }
      assert(log(t).snapshot().files.map(_.path).toSet == snapshotFiles, stmt)
    }
    assert(spark.table(t).count() == 10000)
  }


  test("a DELETE of whole partitions runs no Spark job and commits removes only") {
    val t = freshTable("dmlf", "(id BIGINT, d DATE, p STRING) USING strata PARTITIONED BY (p, d)")
    spark.sql(s"INSERT INTO $t SELECT id, date_add(DATE'2024-01-01', cast(id % 2 AS INT)), cast(id % 3 AS STRING) " +
      "FROM range(30)")
    val before = log(t).snapshot().files
    val v = version(t)
    val jobs = jobsDuring(spark.sql(s"DELETE FROM $t WHERE p = '1' OR (p = '2' AND d = DATE'2024-01-02')"))
    assert(jobs == 0, s"$jobs Spark job(s) ran")
    assert(version(t) == v + 1)
    val (adds, removes) = changes(t, v + 1)
    assert(adds.isEmpty)
    val expected = before.filter(f => f.partitionValues("p").contains("1") ||
      (f.partitionValues("p").contains("2") && f.partitionValues("d").contains("2024-01-02"))).map(_.path).toSet
    assert(removes.map(_.path).toSet == expected && expected.size == 3)
    assert(removes.forall(_.dataChange))
    assert(lastCommit(t).operation.contains("DELETE"))
    assert(metric(t, "numRemovedFiles") == 3 && metric(t, "numAddedFiles") == 0 && metric(t, "numDeletedRows") == 15)
    assert(rows(spark.sql(s"SELECT id FROM $t")) == (0 until 30).filter(i => i % 3 == 0 || (i % 3 == 2 && i % 2 == 0))
      .map(i => Row(i.toLong)).sortBy(_.toString))
    // The control: a DELETE by a data column does run jobs (the listener counts them).
    assert(jobsDuring(spark.sql(s"DELETE FROM $t WHERE id = 0")) > 0)
  }
}
