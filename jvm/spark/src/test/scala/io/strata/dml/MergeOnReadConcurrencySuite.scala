package io.strata.dml

import io.strata.log.{ConcurrentAppendException, ConcurrentDeleteDeleteException, ConcurrentModificationException, DeletionVectors}
import org.apache.spark.sql.Row
import org.scalatest.LoneElement
import org.scalatest.funsuite.AnyFunSuite

/**
 * Concurrent merge-on-read DML on the same data file, made deterministic: the rival statement commits between our
 * statement's read and its commit. Disjoint rows of one file: both commit (beyond OSS Delta, delta-io/delta#7360),
 * with the contents of the serial order; the same rows, a MERGE, or a rival that rewrote the file: a typed conflict
 * with nothing lost.
 */
class MergeOnReadConcurrencySuite extends AnyFunSuite with DmlTestSupport with LoneElement {
  /** One data file holding ids 0..19, v = 'v<id>'. */
  private def oneFile(): String = {
    val t = freshTable("morc", "(id BIGINT, v STRING) USING strata TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    spark.range(0, 20, 1, 1).selectExpr("id", "concat('v', id) AS v").writeTo(t).append()
    assert(log(t).snapshot().files.size == 1)
    t
  }

  private def ids(t: String): Seq[Long] = rowsOf(t, "id").map(_.getLong(0)).sorted

  test("DELETEs of disjoint rows of one file both commit; the file's vector holds both") {
    val t = oneFile()
    val v0 = version(t)
    raced(spark.sql(s"DELETE FROM $t WHERE id = 3")) { spark.sql(s"DELETE FROM $t WHERE id IN (7, 8)") }
    assert(ids(t) == (0L until 20L).filterNot(Set(3L, 7L, 8L)))
    assert(version(t) == v0 + 2)
    val snap = log(t).snapshot()
    val file = snap.files.loneElement
    assert(DeletionVectors.read(file.deletionVector.get, snap.tablePath, log(t).conf).cardinality == 3)
    // our commit replaced the rival's entry (its vector), not the one we read
    val (_, rivalRemoves) = changes(t, v0 + 1)
    val (rivalAdds, _) = changes(t, v0 + 1)
    val (_, ourRemoves) = changes(t, v0 + 2)
    assert(rivalRemoves.head.deletionVector.isEmpty)
    assert(ourRemoves.loneElement.deletionVector == rivalAdds.loneElement.deletionVector)
  }

  test("an UPDATE and a DELETE of disjoint rows of one file both commit, equal to the serial result") {
    val t = oneFile()
    raced(spark.sql(s"DELETE FROM $t WHERE id = 3")) { spark.sql(s"UPDATE $t SET v = 'u' WHERE id = 7") }
    assert(rowsOf(t) == (0L until 20L).filterNot(_ == 3L).map(i => Row(i, if (i == 7L) "u" else s"v$i"))
      .sortBy(_.toString))
    raced(spark.sql(s"UPDATE $t SET v = 'w' WHERE id = 1")) { spark.sql(s"DELETE FROM $t WHERE id = 2") }
    assert(rowsOf(t, "id, v").filter(r => Set(1L, 2L)(r.getLong(0))) == Seq(Row(1L, "w")))
  }

  test("DELETEs of overlapping rows: the later one fails with a typed conflict, the earlier one stands") {
    val t = oneFile()
    val e = intercept[Exception] {
      raced(spark.sql(s"DELETE FROM $t WHERE id IN (3, 4)")) { spark.sql(s"DELETE FROM $t WHERE id IN (4, 5)") }
    }
    assert(causeOf[ConcurrentDeleteDeleteException](e).getMessage.contains("same rows"))
    assert(ids(t) == (0L until 20L).filterNot(Set(3L, 4L)))
  }

  test("a MERGE is not rebased (its join read rows it kept): a rival vector on the same file is a conflict") {
    val t = oneFile()
    spark.range(7, 8).selectExpr("id", "'m' AS v").createOrReplaceTempView("morc_src")
    val e = intercept[Exception] {
      raced(spark.sql(s"DELETE FROM $t WHERE id = 3")) {
        spark.sql(s"MERGE INTO $t t USING morc_src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v")
      }
    }
    causeOf[ConcurrentModificationException](e)
    assert(ids(t) == (0L until 20L).filterNot(_ == 3L) && !rowsOf(t, "v").contains(Row("m")))
  }

  test("rows the rival's UPDATE wrote that our condition may select: a typed conflict (serial order would see them)") {
    val t = oneFile()
    val e = intercept[Exception] {
      raced(spark.sql(s"UPDATE $t SET v = 'x' WHERE id = 3")) {
        spark.sql(s"UPDATE $t SET v = 'y' WHERE v = 'x' OR id = 7")
      }
    }
    causeOf[ConcurrentAppendException](e)
    assert(rowsOf(t, "v").count(_ == Row("x")) == 1 && !rowsOf(t, "v").contains(Row("y")))
  }

  test("a rival that rewrote the file (compaction) makes our vector stale: a typed conflict") {
    val t = oneFile()
    val e = intercept[Exception] {
      raced(compact(t, _ => true)) { spark.sql(s"DELETE FROM $t WHERE id = 5") }
    }
    causeOf[ConcurrentModificationException](e)
    assert(ids(t) == (0L until 20L))
  }
}
