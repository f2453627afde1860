package io.strata.write

import java.nio.file.{Files, Paths}

import io.strata.SparkTestSession
import io.strata.log._
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, Row}
import org.scalatest.funsuite.AnyFunSuite

/**
 * Real Spark writes (V1 path and V2 catalog) with a rival commit made at a chosen point: the test-only pause
 * between the write's read and its commit ([[withRivalBeforeCommit]]). No sleeps: the rival runs to the end
 * before the write's first commit attempt, on every run. Each outcome is a typed conflict with the rival's state
 * intact, or a table equal to the rival's commit followed by the write's.
 */
class ConcurrentWriteSuite extends AnyFunSuite with SparkTestSession {
  import spark.implicits._

  private def log(path: String) = TableLog.forPath(new Path(path), new Configuration())
  private def rows(df: DataFrame): Seq[Row] = df.collect().toSeq.sortBy(_.toString)
  private def table(path: String): Seq[Row] = rows(spark.read.format("strata").load(path).select("id", "p"))


  private def append(path: String, rows: (Long, String)*): Unit =
    rows.toDF("id", "p").write.format("strata").mode("append").save(path)

  private def newTable(rows: (Long, String)*): String = {
    val path = tempDir().resolve("t").toString
    rows.toDF("id", "p").write.format("strata").partitionBy("p").save(path)
    path
  }

  /** Another engine's compaction of partition `p`: its one file rewritten under a new name, dataChange = false. */
  private def compact(path: String, p: String): Unit = {
    val l = log(path)
    val txn = l.startTransaction()
    val old = txn.readSnapshot.get.files.filter(_.partitionValues("p").contains(p))
    assert(old.size == 1)
    val src = Paths.get(txn.readSnapshot.get.absolutePath(old.head.path).toUri)
    Files.copy(src, src.resolveSibling("compacted-" + src.getFileName))
    val renamed = old.head.copy(path = old.head.path.replace(src.getFileName.toString, "compacted-" + src.getFileName))
    txn.commit(TableOperation.RewriteFiles(old, Seq(renamed)), Nil, Operation("OPTIMIZE"))
  }

  test("V1 overwrite while a rival appends: ConcurrentAppendException, the rival's rows kept") {
    val path = newTable(1L -> "a", 2L -> "b")
    val e = intercept[ConcurrentAppendException](withRivalBeforeCommit(append(path, 9L -> "c")) {
      Seq(5L -> "a").toDF("id", "p").write.format("strata").mode("overwrite").save(path)
    })
    assert(e.winningVersion == 1L)
    assert(table(path) == Seq(Row(1L, "a"), Row(2L, "b"), Row(9L, "c")))
  }

  test("V1 replaceWhere while a rival compacts the same partition: ConcurrentDeleteDeleteException, no resurrection") {
    val path = newTable(1L -> "a", 2L -> "b")
    val e = intercept[ConcurrentDeleteDeleteException](withRivalBeforeCommit(compact(path, "a")) {
      Seq(5L -> "a").toDF("id", "p").write.format("strata").mode("overwrite").option("replaceWhere", "p = 'a'").save(path)
    })
    assert(e.winningOperation == "OPTIMIZE")
    assert(table(path) == Seq(Row(1L, "a"), Row(2L, "b")))
    // Compaction of another partition is no conflict: the replace commits after it.
    withRivalBeforeCommit(compact(path, "b")) {
      Seq(5L -> "a").toDF("id", "p").write.format("strata").mode("overwrite").option("replaceWhere", "p = 'a'").save(path)
    }
    assert(table(path) == Seq(Row(2L, "b"), Row(5L, "a")))
  }

  test("V2 INSERT OVERWRITE PARTITION: a rival append to another partition commits, one to the same partition conflicts") {
    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.cw")
    spark.sql("DROP TABLE IF EXISTS strata.cw.t")
    spark.sql("CREATE TABLE strata.cw.t (id BIGINT, p STRING) USING strata PARTITIONED BY (p)")
    spark.sql("INSERT INTO strata.cw.t VALUES (1, 'a'), (2, 'b')")
    val path = location("strata.cw.t")
    withRivalBeforeCommit(append(path, 3L -> "b")) {
      spark.sql("INSERT OVERWRITE strata.cw.t PARTITION (p = 'a') SELECT 10")
    }
    assert(table(path) == Seq(Row(10L, "a"), Row(2L, "b"), Row(3L, "b")))
    intercept[ConcurrentAppendException](withRivalBeforeCommit(append(path, 4L -> "a")) {
      spark.sql("INSERT OVERWRITE strata.cw.t PARTITION (p = 'a') SELECT 11")
    })
    assert(table(path) == Seq(Row(10L, "a"), Row(2L, "b"), Row(3L, "b"), Row(4L, "a")))
    spark.sql("DROP TABLE strata.cw.t")
  }

  test("V2 idempotent append: a rival run of the same application commits first, ours is skipped and leaves no file") {
    val path = newTable(1L -> "a")
    val rival = () => log(path).startTransaction().commit(Seq(SetTransaction("job", 3L, None)), Operation("WRITE"))
    val before = filesUnder(Paths.get(path))
    withRivalBeforeCommit(rival()) {
      Seq(7L -> "z").toDF("id", "p").writeTo(s"strata.`$path`").option("txnAppId", "job").option("txnVersion", "3")
        .append()
    }
    assert(table(path) == Seq(Row(1L, "a")))
    assert(log(path).snapshot().version == 1L)
    assert(filesUnder(Paths.get(path)).filterNot(_.startsWith("_delta_log")) ==
      before.filterNot(_.startsWith("_delta_log")), "our job's files were deleted")
  }

  test("CTAS while another writer creates the table: MetadataChangedException, the other table intact") {
    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.cw")
    spark.sql("DROP TABLE IF EXISTS strata.cw.ctas")
    val location = Paths.get(spark.conf.get("spark.sql.catalog.strata.warehouse"), "cw", "ctas").toString
    val schema = org.apache.spark.sql.types.StructType.fromDDL("id BIGINT, p STRING, other STRING")
    val rival = () => {
      val txn = log(location).startTransaction()
      txn.updateMetadata(Metadata(id = "rival", schemaString = schema.json))
      txn.commit(Nil, Operation("CREATE TABLE"))
    }
    val e = intercept[MetadataChangedException](withRivalBeforeCommit(rival()) {
      spark.sql("CREATE TABLE strata.cw.ctas USING strata AS SELECT 2L AS id, 'mine' AS p")
    })
    assert(e.getMessage.contains("created concurrently"))
    val snap = log(location).snapshot()
    assert(snap.version == 0L && snap.metadata.id == "rival" && snap.files.isEmpty)
    assert(!filesUnder(Paths.get(location)).exists(_.endsWith(".parquet")), "the CTAS job's files were deleted")
    spark.sql("DROP TABLE strata.cw.ctas")
  }

  test("V1 overwrite from a read of the same table: a rival append in between is a conflict") {
    val path = newTable(1L -> "a", 2L -> "a")
    val input = spark.read.format("strata").load(path).where("id > 1")
    append(path, 3L -> "a") // lands after the input's read, before the write begins
    val e = intercept[ConcurrentAppendException](input.write.format("strata").mode("overwrite").save(path))
    assert(e.winningVersion == 1L && e.getMessage.contains("the write's input read"))
    assert(table(path) == Seq(Row(1L, "a"), Row(2L, "a"), Row(3L, "a")))
  }
}
