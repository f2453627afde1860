package io.strata.dml

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.CommandResultExec
import org.scalatest.funsuite.AnyFunSuite

/**
 * The write node of DELETE / UPDATE / MERGE in the Spark UI (the executed plan's metrics): the same row and file
 * counts as the commit's operationMetrics, next to the log commit's own metrics.
 */
class DmlMetricsSuite extends AnyFunSuite with DmlTestSupport {

  /** The metrics of the statement's write node (the command's physical plan root). */
  private def nodeMetrics(result: DataFrame): Map[String, Long] = {
    val node = result.queryExecution.executedPlan.collectFirst { case c: CommandResultExec => c.commandPhysicalPlan }
      .getOrElse(fail(s"no command in ${result.queryExecution.executedPlan}"))
    node.metrics.map { case (k, v) => k -> v.value }
  }

  private def commitMetrics(t: String): Map[String, Long] = {
    import scala.jdk.CollectionConverters._
    lastCommit(t).json.get("operationMetrics").fields().asScala.map(e => e.getKey -> e.getValue.asText.toLong).toMap
  }

  private def table(): String = {
    val t = freshTable("dmlm", "(id BIGINT, v STRING, p STRING) USING strata PARTITIONED BY (p)")
    spark.sql(s"INSERT INTO $t SELECT id, 'v', cast(id % 2 AS STRING) FROM range(0, 20)")
    t
  }

  test("DELETE: deleted and copied rows, added and removed files on the write node, as in commitInfo") {
    val t = table()
    val m = nodeMetrics(spark.sql(s"DELETE FROM $t WHERE id IN (2, 4, 5)"))
    val c = commitMetrics(t)
    assert(c("numDeletedRows") == 3 && c("numCopiedRows") == 17 && c("numRemovedFiles") == 2 && c("numAddedFiles") == 2, c)
    for (k <- Seq("numDeletedRows", "numCopiedRows", "numRemovedFiles", "numAddedFiles")) assert(m(k) == c(k), k)
    assert(m("strataCommittedVersion") == version(t))
    assert(m("strataRowsWritten") == 17)
  }

  test("UPDATE: updated and copied rows, added and removed files on the write node, as in commitInfo") {
    val t = table()
    val m = nodeMetrics(spark.sql(s"UPDATE $t SET v = 'u' WHERE id IN (3, 5, 6)"))
    val c = commitMetrics(t)
    assert(c("numUpdatedRows") == 3 && c("numCopiedRows") == 17 && c("numRemovedFiles") == 2 && c("numAddedFiles") == 2, c)
    for (k <- Seq("numUpdatedRows", "numCopiedRows", "numRemovedFiles", "numAddedFiles")) assert(m(k) == c(k), k)
    assert(!m.contains("numDeletedRows"), m)
    assert(m("strataRowsWritten") == 20)
    // A condition with a subquery (Spark plans a union of changed and copied rows) and a partition move.
    spark.sql(s"UPDATE $t SET v = 'w', p = 'moved' WHERE id IN (SELECT id FROM range(0, 20) WHERE id % 5 = 0)")
    val c2 = commitMetrics(t)
    assert(c2("numUpdatedRows") == 4 && c2("numCopiedRows") == 16, c2)
    assert(rows(spark.sql(s"SELECT id FROM $t WHERE p = 'moved' AND v = 'w'")) ==
      Seq(0L, 10L, 15L, 5L).map(org.apache.spark.sql.Row(_)))
    // Matching nothing: nothing updated.
    spark.sql(s"UPDATE $t SET v = 'z' WHERE v = 'nothing'")
    assert(rows(spark.sql(s"SELECT count(*) FROM $t WHERE v = 'z'")) == Seq(org.apache.spark.sql.Row(0L)))
  }

  test("MERGE: inserted, updated, deleted and copied target rows and target files on the write node") {
    val t = table()
    val m = nodeMetrics(spark.sql(s"MERGE INTO $t t USING (SELECT explode(array(1L, 3L, 4L, 100L, 101L)) AS id) s " +
      "ON t.id = s.id WHEN MATCHED AND t.id = 4 THEN DELETE WHEN MATCHED THEN UPDATE SET v = 'm' " +
      "WHEN NOT MATCHED THEN INSERT (id, v, p) VALUES (s.id, 'new', 'n')"))
    val c = commitMetrics(t)
    assert(c("numTargetRowsInserted") == 2 && c("numTargetRowsUpdated") == 2 && c("numTargetRowsDeleted") == 1 &&
      c("numTargetRowsCopied") == 17 && c("numTargetFilesRemoved") == 2 && c("numTargetFilesAdded") == 3, c)
    for (k <- Seq("numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted", "numTargetRowsCopied",
                  "numTargetFilesAdded", "numTargetFilesRemoved")) assert(m(k) == c(k), s"$k: ${m.get(k)} vs ${c(k)}")
    assert(m("strataCommittedVersion") == version(t))
  }

  test("an INSERT's write node shows no DML counts") {
    val t = table()
    val m = nodeMetrics(spark.sql(s"INSERT INTO $t VALUES (50, 'x', 'a')"))
    assert(!m.keySet.exists(k => k.startsWith("numTarget") || k == "numDeletedRows" || k == "numCopiedRows"), m)
  }
}
