package io.strata.write

import java.util.concurrent.{Callable, Executors}

import io.strata.SparkTestSession
import io.strata.log.{ConcurrentModificationException, TableLog}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.functions._
import org.scalatest.funsuite.AnyFunSuite

import scala.util.Try

class V2WriteSuite extends AnyFunSuite with SparkTestSession {
  import spark.implicits._

  private def rows(df: DataFrame): Seq[Row] = df.collect().toSeq.sortBy(_.toString)
  private def log(table: String) = TableLog.forPath(new Path(location(table)), new Configuration())

  private def freshTable(ddl: String = "(id BIGINT, p STRING) USING strata PARTITIONED BY (p)"): String =
    freshTable("v2", ddl)

  test("INSERT INTO, INSERT OVERWRITE (static partition, whole table) and overwritePartitions match Parquet tables") {
    val t = freshTable()
    spark.sql("CREATE TABLE spark_catalog.default.pq_v2 (id BIGINT, p STRING) USING parquet PARTITIONED BY (p)")
    try {
      val statements = Seq(
        "INSERT INTO TBL VALUES (1, 'a'), (2, 'b'), (3, 'a')",
        "INSERT INTO TBL SELECT id, cast(id % 4 AS STRING) FROM range(20)",
        "INSERT OVERWRITE TBL PARTITION (p = 'a') SELECT 42",
        "INSERT OVERWRITE TBL SELECT id, 'z' FROM range(3)")
      statements.foreach { s =>
        spark.sql(s.replace("TBL", t))
        spark.sql(s.replace("TBL", "spark_catalog.default.pq_v2"))
        assert(rows(spark.table(t)) == rows(spark.table("spark_catalog.default.pq_v2")), s)
      }
      spark.range(10).select($"id", ($"id" % 2).cast("string").as("p")).writeTo(t).overwritePartitions()
      assert(rows(spark.table(t)) == rows(spark.range(10).select($"id", ($"id" % 2).cast("string").as("p"))
        .union(Seq((0L, "z"), (1L, "z"), (2L, "z")).toDF("id", "p"))))
      spark.range(5).select($"id", lit("q").as("p")).writeTo(t).append()
      spark.range(2).select($"id", lit("q").as("p")).writeTo(t).overwrite($"p" === "q")
      assert(spark.table(t).where($"p" === "q").count() == 2)
      val ops = log(t).history().map(_.commitInfo.get).filter(_.operation.contains("WRITE"))
        .map(_.json.get("operationParameters").get("mode").asText)
      assert(ops.size == 7 && ops.head == "Overwrite" && ops.last == "Append")
      assert(spark.sql(s"SELECT * FROM $t VERSION AS OF 1").count() == 3)
    } finally spark.sql("DROP TABLE IF EXISTS spark_catalog.default.pq_v2")
  }

  test("a partitioned write of 200 partitions from 8 input tasks makes about one file per partition") {
    val t = freshTable("(id BIGINT, k INT) USING strata PARTITIONED BY (k)")
    spark.range(0, 20000, 1, 8).select($"id", ($"id" % 200).cast("int").as("k")).writeTo(t).append()
    val files = log(t).snapshot().files
    assert(files.map(_.partitionValues).distinct.size == 200)
    assert(files.size <= 210, s"${files.size} files for 200 partitions")
    val plan = spark.sql(s"EXPLAIN INSERT INTO $t SELECT id, cast(id % 200 AS INT) FROM range(10)").head().getString(0)
    assert(plan.contains("hashpartitioning(k") && plan.contains("Sort [k"), plan)
  }

  test("two concurrent INSERT OVERWRITE of one partition: one commits, the other gets a typed conflict") {
    val t = freshTable()
    spark.sql(s"INSERT INTO $t SELECT id, cast(id % 2 AS STRING) FROM range(10)")
    val pool = Executors.newFixedThreadPool(2)
    try {
      val results = (1 to 2).map { i =>
        pool.submit(new Callable[Try[Unit]] {
          override def call(): Try[Unit] = Try(spark.sql(
            s"INSERT OVERWRITE $t PARTITION (p = '1') SELECT id * 100 + $i FROM range(5)").collect(): Unit)
        })
      }.map(_.get())
      val failures = results.collect { case scala.util.Failure(e) => e }
      assert(failures.size <= 1)
      // If both ran one after the other, the second simply replaced the first: also serializable.
      failures.foreach { e =>
        val cause = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null)
          .collectFirst { case c: ConcurrentModificationException => c }
        assert(cause.isDefined, s"not a typed conflict: $e")
      }
      assert(spark.table(t).where($"p" === "1").count() == 5)
      assert(spark.table(t).where($"p" === "0").count() == 5)
    } finally pool.shutdown()
  }

  test("a V2 task that commits after its job already failed (a straggler) leaves no file behind") {
    val t = freshTable("(id BIGINT) USING strata")
    spark.sql(s"INSERT INTO $t VALUES (1)")
    val dir = java.nio.file.Paths.get(new java.net.URI(location(t)).getPath)
    val before = filesUnder(dir)
    // As in V1WriteSuite: task 0 commits and is held before it reports, task 1 fails once it is (Straggler).
    val whileHeld = Straggler.run(spark, held = 0, failing = 19, () => filesUnder(dir))(intercept[Exception](
      spark.range(0, 20, 1, 2).select(Straggler.column(spark, $"id").as("id")).writeTo(t).append()))
    assert((whileHeld -- before).exists(_.endsWith(".parquet")), "the straggler had committed no file")
    assert(log(t).snapshot().version == 1)
    assert(filesUnder(dir) == before, "the straggler's file was left behind")
  }

  test("the write node of an INSERT shows rows from the tasks, and files, bytes and the log commit from the driver") {
    val t = freshTable()
    val result = spark.sql(s"INSERT INTO $t SELECT id, cast(id % 3 AS STRING) FROM range(0, 300, 1, 2)")
    val node = result.queryExecution.executedPlan.collectFirst {
      case c: org.apache.spark.sql.execution.CommandResultExec => c.commandPhysicalPlan
    }.get
    val m = node.metrics.map { case (k, v) => k -> v.value }
    val snap = log(t).snapshot()
    assert(m("strataRowsWritten") == 300L)
    assert(m("strataFilesWritten") == snap.files.size.toLong)
    assert(m("strataBytesWritten") == snap.files.map(_.size).sum)
    assert(m("strataCommittedVersion") == snap.version && m("strataCommitAttempts") == 1L)
    assert(m.contains("strataCommitDurationMs"))
  }

  test("the rolling writer closes files at the target file size (table property, overridden by the write option)") {
    val t = freshTable("(id BIGINT, h STRING) USING strata TBLPROPERTIES ('write.target-file-size-bytes' = '1048576')")
    // 64 hex characters of hash per row compress poorly: about 10 MB of rows in one task.
    val data = spark.range(0, 120000, 1, 1).select($"id", sha2($"id".cast("string"), 256).as("h"))
    data.writeTo(t).append()
    val files = log(t).snapshot().files
    assert(spark.table(t).count() == 120000L)
    assert(files.size >= 5 && files.size <= 40, s"${files.size} files")
    assert(files.map(_.size).max < 2L * 1048576, files.map(_.size).sorted.mkString(", "))
    // The write option wins over the table property: 4 MB files, so fewer of them.
    data.writeTo(t).option("write.target-file-size-bytes", (4L * 1048576).toString).append()
    val second = log(t).snapshot().files.filterNot(f => files.exists(_.path == f.path))
    assert(second.size < files.size, s"${second.size} files at 4 MB against ${files.size} at 1 MB")
    val e = intercept[Exception](data.writeTo(t).option("write.target-file-size-bytes", "big").append())
    assert(Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).exists(c =>
      Option(c.getMessage).exists(_.contains("write option write.target-file-size-bytes has invalid value 'big'"))), e.toString)
  }

  test("two concurrent INSERT INTO statements both commit") {
    val t = freshTable()
    val pool = Executors.newFixedThreadPool(2)
    try {
      (1 to 2).map { i =>
        pool.submit(new Callable[Unit] {
          override def call(): Unit = spark.sql(s"INSERT INTO $t SELECT id, '$i' FROM range(50)").collect(): Unit
        })
      }.foreach(_.get())
      assert(spark.table(t).count() == 100)
      assert(log(t).snapshot().version == 2)
    } finally pool.shutdown()
  }

  test("spark_catalog tables USING strata are written through the log, never by Spark's own committer") {
    spark.sql("CREATE TABLE default.sess_t (id BIGINT, p STRING) USING strata PARTITIONED BY (p)")
    try {
      spark.sql("INSERT INTO default.sess_t SELECT id, cast(id % 3 AS STRING) FROM range(30)")
      spark.sql("INSERT OVERWRITE default.sess_t PARTITION (p = '0') SELECT 7")
      spark.range(4).select($"id", lit("9").as("p")).write.insertInto("default.sess_t")
      val expected = spark.range(30).select($"id", ($"id" % 3).cast("string").as("p")).where($"p" =!= "0")
        .union(Seq((7L, "0")).toDF("id", "p")).union(spark.range(4).select($"id", lit("9").as("p")))
      assert(rows(spark.table("default.sess_t")) == rows(expected))
      val dir = location("default.sess_t")
      val snap = TableLog.forPath(new Path(dir), new Configuration()).snapshot()
      assert(snap.version == 3)
      assert(rows(spark.read.format("strata").load(dir)) == rows(expected))
      assert(!new java.io.File(new java.net.URI(dir).getPath, "_SUCCESS").exists())
      spark.sql("DROP TABLE default.sess_t")
      assert(!new java.io.File(new java.net.URI(dir).getPath).exists(), "DROP of a managed table keeps its data")
    } finally spark.sql("DROP TABLE IF EXISTS default.sess_t")
  }

  test("distribution modes: option > session conf > table property; none uses the fanout writer") {
    val t = freshTable("(id BIGINT, k INT) USING strata PARTITIONED BY (k) TBLPROPERTIES ('write.distribution-mode' = 'range')")
    def plan(extra: String = "") = spark.sql(s"EXPLAIN INSERT INTO $t SELECT id, cast(id % 5 AS INT) FROM range(10)")
      .head().getString(0)
    assert(plan().contains("rangepartitioning(k"), "table property range")
    spark.conf.set("spark.strata.write.distribution-mode", "hash")
    try assert(plan().contains("hashpartitioning(k"), "session conf beats the table property")
    finally spark.conf.unset("spark.strata.write.distribution-mode")
    // Option > everything: 'none' asks for no shuffle; unclustered rows go to the fanout writer.
    val data = spark.range(0, 3000, 1, 3).select($"id", ($"id" % 50).cast("int").as("k"))
    data.writeTo(t).option("write.distribution-mode", "none").option("write.fanout.max-open-files", "20").append()
    assert(rows(spark.table(t)) == rows(data))
    val files = log(t).snapshot().files
    assert(files.map(_.partitionValues).distinct.size == 50)
    assert(files.size > 50, "with 20 open files per task, partitions get more than one file")
    val bad = intercept[Exception](data.writeTo(t).option("write.distribution-mode", "random").append())
    assert(bad.getMessage.contains("write option write.distribution-mode has invalid value 'random'"))
    val flat = freshTable("(id BIGINT, s STRING) USING strata")
    spark.range(100).select($"id", $"id".cast("string").as("s")).writeTo(flat).append()
    assert(spark.table(flat).count() == 100)
    val v1 = intercept[Exception](data.write.format("strata").option("write.distribution-mode", "none")
      .mode("append").save(location(t)))
    assert(v1.getMessage.contains("applies to catalog table writes"))
  }

  test("CTAS, RTAS and CREATE OR REPLACE each commit definition and data as one version; a failed CTAS leaves nothing") {
    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.v2")
    spark.sql("CREATE TABLE strata.v2.ctas USING strata PARTITIONED BY (p) TBLPROPERTIES ('owner.team' = 'x') " +
      "AS SELECT id, cast(id % 3 AS STRING) AS p FROM range(30)")
    val l = log("strata.v2.ctas")
    assert(l.snapshot().version == 0 && l.snapshot().files.nonEmpty && l.snapshot().partitionColumns == Seq("p"))
    assert(l.snapshot().metadata.configuration.get("owner.team").contains("x"))
    assert(l.history().head.commitInfo.get.operation.contains("CREATE TABLE AS SELECT"))
    spark.sql("REPLACE TABLE strata.v2.ctas USING strata AS SELECT id * 2 AS id2 FROM range(5)")
    assert(l.snapshot().version == 1 && spark.table("strata.v2.ctas").columns.toSeq == Seq("id2"))
    assert(spark.table("strata.v2.ctas").count() == 5)
    assert(spark.sql("SELECT * FROM strata.v2.ctas VERSION AS OF 0").count() == 30)
    spark.range(7).writeTo("strata.v2.ctas").createOrReplace()
    assert(l.snapshot().version == 2 && spark.table("strata.v2.ctas").count() == 7)
    spark.range(4).select($"id", ($"id" % 2).as("k")).writeTo("strata.v2.created").partitionedBy($"k").create()
    assert(log("strata.v2.created").snapshot().version == 0)
    intercept[Exception](spark.range(4).writeTo("strata.v2.created").create())
    val boom = udf((id: Long) => { if (id == 3) throw new IllegalStateException("boom"); id })
    intercept[Exception](spark.range(10).select(boom($"id").as("id")).writeTo("strata.v2.failed").create())
    assert(!spark.catalog.tableExists("strata.v2.failed"))
    spark.sql("CREATE OR REPLACE TABLE strata.v2.empty (a INT) USING strata")
    assert(spark.table("strata.v2.empty").count() == 0)
  }

  test("ALTER TABLE ADD COLUMNS, SET/UNSET TBLPROPERTIES, RENAME, DESCRIBE and SHOW TABLES") {
    val t = freshTable()
    spark.sql(s"INSERT INTO $t VALUES (1, 'a')")
    spark.sql(s"ALTER TABLE $t ADD COLUMNS (note STRING COMMENT 'free text')")
    spark.sql(s"ALTER TABLE $t SET TBLPROPERTIES ('team' = 'core', 'delta.checkpointInterval' = '5')")
    spark.sql(s"ALTER TABLE $t UNSET TBLPROPERTIES ('team')")
    spark.sql(s"INSERT INTO $t VALUES (2, 'b', 'hello')")
    assert(rows(spark.table(t)) == Seq(Row(1L, "a", null), Row(2L, "b", "hello")).sortBy(_.toString))
    val meta = log(t).snapshot().metadata
    assert(meta.configuration == Map("delta.checkpointInterval" -> "5"))
    assert(spark.sql(s"DESCRIBE TABLE $t").where($"col_name" === "note").head().getString(2) == "free text")
    val e = intercept[Exception](spark.sql(s"ALTER TABLE $t ADD COLUMNS (bad INT NOT NULL)"))
    assert(e.getMessage.contains("Cannot add NOT NULL column 'bad'"))
    val n = t.stripPrefix("strata.v2.t")
    spark.sql(s"ALTER TABLE $t RENAME TO v2.renamed_$n") // V2 catalogs take the new name without the catalog
    assert(spark.sql("SHOW TABLES IN strata.v2").where($"tableName" === s"renamed_$n").count() == 1)
    assert(spark.table(s"strata.v2.renamed_$n").count() == 2)
    spark.sql(s"DROP TABLE strata.v2.renamed_$n PURGE")
    assert(!spark.catalog.tableExists(s"strata.v2.renamed_$n"))
  }
}
