package io.strata.dml

import io.strata.log.{DeletionVectors, Protocol}
import org.apache.spark.sql.Row
import org.scalatest.funsuite.AnyFunSuite

/**
 * DELETE, UPDATE and MERGE on tables with `delta.enableDeletionVectors = true`: rows are marked deleted in the data
 * files' vectors (merge-on-read), nothing is copied, the results equal the same statements on a copy-on-write table.
 */
class MergeOnReadSuite extends AnyFunSuite with DmlTestSupport {
  private val cols = "(id BIGINT, v STRING, p STRING)"

  private def pair(): (String, String) = {
    val dv = freshTable("mor", s"$cols USING strata PARTITIONED BY (p) TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    val cow = freshTable("cow", s"$cols USING strata PARTITIONED BY (p)")
    Seq(dv, cow).foreach { t =>
      spark.sql(s"INSERT INTO $t SELECT id, concat('v', id), IF(id % 2 = 0, 'even', 'odd') FROM range(0, 40)")
    }
    (dv, cow)
  }

  private def both(dv: String, cow: String)(sql: String): Unit = {
    spark.sql(sql.replace("{t}", dv))
    spark.sql(sql.replace("{t}", cow))
    assert(rowsOf(dv) == rowsOf(cow), sql)
  }

  test("enabling the property upgrades the protocol to reader 3 / writer 7 with deletionVectors") {
    val (dv, _) = pair()
    val p = log(dv).snapshot().protocol
    assert(p.minReaderVersion == 3 && p.minWriterVersion == 7)
    assert(p.readerFeatures.exists(_("deletionVectors")) && p.writerFeatures.exists(_("deletionVectors")), p)
    val plain = freshTable("mor_alter", s"$cols USING strata")
    spark.sql(s"INSERT INTO $plain VALUES (1, 'a', 'x')")
    spark.sql(s"ALTER TABLE $plain SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    assert(log(plain).snapshot().protocol == Protocol(3, 7, Some(Set("deletionVectors")),
      Some(Set("appendOnly", "invariants", "deletionVectors"))))
  }

  test("DELETE marks the rows in vectors: no file is rewritten, each touched file gets remove + add with a vector") {
    val (dv, cow) = pair()
    val before = log(dv).snapshot()
    both(dv, cow)("DELETE FROM {t} WHERE id IN (3, 4, 17)")
    val (adds, removes) = changes(dv, before.version + 1)
    assert(adds.nonEmpty && adds.forall(_.deletionVector.isDefined), adds)
    assert(adds.map(_.path).toSet == removes.map(_.path).toSet, "same files, new vectors")
    assert(removes.forall(_.deletionVector.isEmpty))
    assert(adds.map(_.deletionVector.get.cardinality).sum == 3)
    assert(adds.forall(_.stats.exists(_.contains("\"tightBounds\":false"))))
    assert(metric(dv, "numDeletedRows") == 3 && metric(dv, "numDeletionVectorsAdded") == adds.size)
    // each vector holds exactly the deleted rows' indexes in its file
    val snap = log(dv).snapshot()
    snap.files.filter(_.deletionVector.isDefined).foreach { f =>
      val rows = DeletionVectors.read(f.deletionVector.get, snap.tablePath, log(dv).conf)
      val ids = spark.read.parquet(snap.absolutePath(f.path).toString).collect().map(_.getLong(0)).toSeq
      assert(rows.toSeq.map(i => ids(i.toInt)).toSet.subsetOf(Set(3L, 4L, 17L)), (f.path, rows.toSeq))
    }
    // a second DELETE on the same file grows its vector: remove carries the old one
    both(dv, cow)("DELETE FROM {t} WHERE id = 5")
    val (adds2, removes2) = changes(dv, before.version + 2)
    assert(removes2.size == 1 && removes2.head.deletionVector.isDefined && adds2.head.deletionVector.get.cardinality == 3)
  }

  test("UPDATE is a delete plus a reinsert; MERGE with all clause kinds; results equal copy-on-write") {
    val (dv, cow) = pair()
    both(dv, cow)("UPDATE {t} SET v = upper(v) WHERE id % 7 = 0")
    assert(metric(dv, "numUpdatedRows") == 6)
    both(dv, cow)("UPDATE {t} SET p = 'moved' WHERE id = 1")
    spark.range(30, 50).selectExpr("id", "concat('s', id) AS v", "id % 3 = 0 AS gone").createOrReplaceTempView("mor_src")
    both(dv, cow)("MERGE INTO {t} t USING mor_src s ON t.id = s.id WHEN MATCHED AND s.gone THEN DELETE " +
      "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (id, v, p) VALUES (s.id, s.v, 'new') " +
      "WHEN NOT MATCHED BY SOURCE AND t.id < 3 THEN DELETE")
    assert(metric(dv, "numTargetRowsInserted") == 10 && metric(dv, "numTargetRowsDeleted") == 7) // 30, 33, 36, 39 and 0, 1, 2
    both(dv, cow)("DELETE FROM {t} WHERE v LIKE 'V%'")
    assert(spark.sql(s"SELECT count(*) FROM $dv").head().getLong(0) == rowsOf(cow).size)
  }

  test("deleting every row of a file removes it; time travel reads the rows before each change") {
    val (dv, cow) = pair()
    val v0 = version(dv)
    both(dv, cow)("DELETE FROM {t} WHERE id = 0")
    both(dv, cow)("DELETE FROM {t} WHERE p = 'even' AND id > 0")
    assert(rowsOf(dv).forall(_.getString(2) == "odd"))
    val snap = log(dv).snapshot()
    assert(snap.files.forall(_.partitionValues("p").contains("odd")), "even files removed")
    assert(rows(spark.sql(s"SELECT * FROM $dv VERSION AS OF $v0")).size == 40)
    assert(rows(spark.sql(s"SELECT * FROM $dv VERSION AS OF ${v0 + 1}")).size == 39)
  }

  test("a copy-on-write DELETE on files with vectors drops the deleted rows and removes with the vector") {
    val (dv, _) = pair()
    spark.sql(s"DELETE FROM $dv WHERE id = 2")
    spark.sql(s"ALTER TABLE $dv SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'false')")
    spark.sql(s"DELETE FROM $dv WHERE id = 4")
    val (adds, removes) = changes(dv, version(dv))
    assert(adds.forall(_.deletionVector.isEmpty) && removes.exists(_.deletionVector.isDefined))
    assert(!rowsOf(dv, "id").contains(Row(2L)) && !rowsOf(dv, "id").contains(Row(4L)))
    assert(rowsOf(dv).size == 38)
  }
}
