package io.strata.catalog

import java.nio.file.Paths

import io.strata.SparkTestSession
import io.strata.log.{MetadataChangedException, TableLog}
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.Row
import org.scalatest.funsuite.AnyFunSuite

/**
 * RENAME / DROP COLUMN on a column-mapped table racing an append, the rival landing between the statement's read and
 * its first commit attempt ([[withRivalBeforeCommit]], no sleeps). A winner that changed the metadata is a typed
 * [[MetadataChangedException]] for the loser (ConflictChecker rule 2; and rule 4: a metadata change loses to any add),
 * with the table exactly as the winner left it and none of the loser's files left behind; run again, the statement
 * gives the serial result.
 */
class ColumnMappingRaceSuite extends AnyFunSuite with SparkTestSession {
  private def newTable(): String = {
    val t = freshTable("cmrace", "(id BIGINT, v STRING, w STRING) USING strata " +
      "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    spark.sql(s"INSERT INTO $t VALUES (1, 'a', 'x'), (2, 'b', 'y')")
    t
  }
  private def rows(t: String): Seq[Row] = spark.table(t).collect().toSeq.sortBy(_.getLong(0))
  private def version(t: String): Long = TableLog.forPath(new Path(location(t)), sessionHadoopConf()).snapshot().version
  private def dataFiles(t: String): Set[String] = filesUnder(Paths.get(new Path(location(t)).toUri))
    .filter(_.endsWith(".parquet"))

  test("an append racing a rename: MetadataChangedException, the rename stands; run again, the rows land renamed") {
    val t = newTable()
    val before = dataFiles(t)
    val e = intercept[MetadataChangedException](withRivalBeforeCommit(
      spark.sql(s"ALTER TABLE $t RENAME COLUMN v TO v2")) {
      spark.sql(s"INSERT INTO $t VALUES (3, 'c', 'z')")
    })
    assert(e.winningVersion == 2L && e.getMessage.contains("metadata changed"), e.getMessage)
    assert(spark.table(t).columns.toSeq == Seq("id", "v2", "w"))
    assert(rows(t) == Seq(Row(1L, "a", "x"), Row(2L, "b", "y")))
    assert(dataFiles(t) == before, "the losing append's files were deleted")
    spark.sql(s"INSERT INTO $t VALUES (3, 'c', 'z')") // serial: after the rename
    assert(rows(t) == Seq(Row(1L, "a", "x"), Row(2L, "b", "y"), Row(3L, "c", "z")))
    assert(spark.sql(s"SELECT id FROM $t WHERE v2 = 'c'").collect().toSeq == Seq(Row(3L)))
  }

  test("a rename racing an append: MetadataChangedException, the append stands; run again, every row renamed") {
    val t = newTable()
    val e = intercept[MetadataChangedException](withRivalBeforeCommit(
      spark.sql(s"INSERT INTO $t VALUES (3, 'c', 'z')")) {
      spark.sql(s"ALTER TABLE $t RENAME COLUMN v TO v2")
    })
    assert(e.winningVersion == 2L, e.getMessage)
    assert(spark.table(t).columns.toSeq == Seq("id", "v", "w"))
    assert(rows(t) == Seq(Row(1L, "a", "x"), Row(2L, "b", "y"), Row(3L, "c", "z")))
    spark.sql(s"ALTER TABLE $t RENAME COLUMN v TO v2")
    assert(spark.sql(s"SELECT id FROM $t WHERE v2 IN ('a', 'c')").collect().toSeq.map(_.getLong(0)).sorted ==
      Seq(1L, 3L))
  }

  test("an append racing a drop, and a drop racing an append: typed conflicts, then the serial result") {
    val t = newTable()
    val before = dataFiles(t)
    intercept[MetadataChangedException](withRivalBeforeCommit(spark.sql(s"ALTER TABLE $t DROP COLUMN w")) {
      spark.sql(s"INSERT INTO $t VALUES (3, 'c', 'z')")
    })
    assert(spark.table(t).columns.toSeq == Seq("id", "v"))
    assert(rows(t) == Seq(Row(1L, "a"), Row(2L, "b")))
    assert(dataFiles(t) == before && version(t) == 2L)
    intercept[MetadataChangedException](withRivalBeforeCommit(spark.sql(s"INSERT INTO $t VALUES (3, 'c')")) {
      spark.sql(s"ALTER TABLE $t DROP COLUMN v")
    })
    assert(rows(t) == Seq(Row(1L, "a"), Row(2L, "b"), Row(3L, "c")) && version(t) == 3L)
    spark.sql(s"ALTER TABLE $t DROP COLUMN v")
    // The column re-added under a dropped name is a new column: the files hold no value for it.
    spark.sql(s"ALTER TABLE $t ADD COLUMN w STRING")
    assert(rows(t) == Seq(Row(1L, null), Row(2L, null), Row(3L, null)))
  }
}
