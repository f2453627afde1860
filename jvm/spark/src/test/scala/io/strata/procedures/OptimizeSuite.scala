package io.strata.procedures

import io.strata.dml.DmlTestSupport
import io.strata.log._
import io.strata.optimize.{OptimizeRequest, Optimizer}
import org.apache.spark.sql.Row
import org.apache.spark.sql.execution.datasources.FilePartition
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.scalatest.funsuite.AnyFunSuite

/** CALL optimize: bin-packing, deletion vectors, Z-order, concurrency and bad input. */
class OptimizeSuite extends AnyFunSuite with DmlTestSupport with AdaptiveSparkPlanHelper {
  private def optimize(t: String, args: String*): Row =
    spark.sql(s"CALL strata.system.optimize(table => '$t'${args.map(", " + _).mkString})").head()

  private def files(t: String): Seq[AddFile] = log(t).snapshot().files
  private def partitionsOf(t: String): Seq[Map[String, Option[String]]] = files(t).map(_.partitionValues).distinct
    .sortBy(_.toString)

  /** The result row as (files_removed, files_added, partitions_optimized, groups_committed, groups_conflicted). */
  private def counts(r: Row): (Long, Long, Long, Int, Int) =
    (r.getAs[Long]("files_removed"), r.getAs[Long]("files_added"), r.getAs[Long]("partitions_optimized"),
      r.getAs[Int]("groups_committed"), r.getAs[Int]("groups_conflicted"))
  private def versionsOf(r: Row): Seq[Long] = r.getSeq[Long](r.fieldIndex("versions"))

  /** Files the scan of `query` reads after pruning and statistics skipping (the splits Spark plans for it). */
  private def filesRead(query: String): Int = {
    val df = spark.sql(query)
    df.collect()
    val scans = collect(df.queryExecution.executedPlan) { case s: BatchScanExec => s }
    assert(scans.size == 1, df.queryExecution.executedPlan)
    scans.head.batch.planInputPartitions().toSeq.flatMap {
      case p: FilePartition => p.files.map(_.filePath.toString).toSeq
      case other => fail(s"unexpected input partition $other")
    }.distinct.size
  }

  private def withConf[T](pairs: (String, String)*)(body: => T): T = {
    val old = pairs.map { case (k, _) => k -> spark.conf.getOption(k) }
    pairs.foreach { case (k, v) => spark.conf.set(k, v) }
    try body finally old.foreach { case (k, v) => v.fold(spark.conf.unset(k))(spark.conf.set(k, _)) }
  }

  test("bin-packing compacts each partition's small files into one, rows and partition values unchanged") {
    val t = freshTable("opt", "(id INT, v STRING, p STRING) USING strata PARTITIONED BY (p)")
    val parts = Seq("'a'", "NULL", "'x/y=z%'", "'sp ace:é'")
    (0 until 4).foreach { i =>
      spark.sql(s"INSERT INTO $t VALUES " + parts.zipWithIndex.map { case (p, j) => s"(${i * 10 + j}, 'v$i', $p)" }
        .mkString(", "))
    }
    val before = rowsOf(t)
    val partitionsBefore = partitionsOf(t)
    val v0 = version(t)
    assert(files(t).size == 16)
    val r = optimize(t)
    assert(counts(r) == (16L, 4L, 4L, 4, 0), r)
    assert(versionsOf(r) == (v0 + 1 to v0 + 4), "one commit per partition")
    assert(rowsOf(t) == before)
    assert(files(t).size == 4)
    assert(partitionsOf(t) == partitionsBefore, "partition values kept verbatim, NULL and special characters too")
    (v0 + 1 to v0 + 4).foreach { v =>
      val (adds, removes) = changes(t, v)
      assert(adds.size == 1 && removes.size == 4)
      assert(adds.forall(!_.dataChange) && removes.forall(!_.dataChange), "a rewrite changes no data")
      assert(adds.head.stats.exists(_.contains("\"numRecords\":4")))
      val info = log(t).history().find(_.version == v).get.commitInfo.get.json
      assert(info.get("operation").asText == "OPTIMIZE")
      assert(info.get("operationParameters").get("zOrderBy").asText == "[]")
      assert(info.get("operationMetrics").get("numRemovedFiles").asText == "4")
    }
    assert(r.getAs[Long]("bytes_removed") > 0 && r.getAs[Long]("bytes_added") > 0)
    // Nothing left to do: zeros and no commit.
    val again = optimize(t)
    assert(counts(again) == (0L, 0L, 0L, 0, 0) && versionsOf(again).isEmpty && version(t) == v0 + 4)
  }

  test("where selects partitions; target_file_size and min_input_files shape the groups") {
    val t = freshTable("opt", "(id INT, p INT) USING strata PARTITIONED BY (p)")
    (0 until 3).foreach(i => spark.sql(s"INSERT INTO $t VALUES ($i, 1), ($i, 2), ($i, 3)"))
    val before = rowsOf(t)
    val r = optimize(t, "where => 'p >= 2 AND p < 3'")
    assert(counts(r) == (3L, 1L, 1L, 1, 0))
    val info = lastCommit(t).json.get("operationParameters")
    assert(info.get("predicate").asText == "[\"((p >= 2) AND (p < 3))\"]", info)
    assert(files(t).groupBy(_.partitionValues("p").get).map { case (p, fs) => p -> fs.size } ==
      Map("1" -> 3, "2" -> 1, "3" -> 3))
    // Files at or above the target are left alone; fewer than min_input_files small ones too.
    val size = files(t).filter(_.partitionValues("p").contains("1")).map(_.size).max
    assert(counts(optimize(t, "where => 'p = 1'", s"target_file_size => $size")) == (0L, 0L, 0L, 0, 0))
    assert(counts(optimize(t, "where => 'p = 1'", "min_input_files => 4")) == (0L, 0L, 0L, 0, 0))
    // Two files per bin: 3 files give one bin of 2 (rewritten) and one of 1 (left).
    assert(counts(optimize(t, "where => 'p = 1'", s"target_file_size => ${2 * size + 1}")) == (2L, 1L, 1L, 1, 0))
    assert(rowsOf(t) == before)
  }

  test("batchSize cuts a bin-packing OPTIMIZE into commits of at most that many rewritten bytes (delta-spark's)") {
    def table() = {
      val t = freshTable("optb", "(id INT, v STRING) USING strata")
      (0 until 6).foreach(i => spark.sql(s"INSERT INTO $t VALUES ($i, 'v$i')"))
      t
    }
    val one = table()
    val size = files(one).map(_.size).max
    val bins = s"target_file_size => ${2 * size}"
    val whole = optimize(one, bins)
    assert(counts(whole) == (6L, 3L, 1L, 3, 0) && versionsOf(whole).size == 1, "no limit: one commit")
    val t = table()
    val before = rowsOf(t)
    val v0 = version(t)
    val batched = withConf("spark.strata.optimize.batchSize" -> (2 * size).toString)(optimize(t, bins))
    assert(counts(batched) == (6L, 3L, 1L, 3, 0) && versionsOf(batched) == (v0 + 1 to v0 + 3), "one commit per bin")
    (v0 + 1 to v0 + 3).foreach { v =>
      val (adds, removes) = changes(t, v)
      assert(adds.size == 1 && removes.size == 2 && removes.flatMap(_.size).sum <= 2 * size)
    }
    assert(rowsOf(t) == before && files(t).size == 3)
  }

  test("files with deletion vectors are rewritten without their deleted rows") {
    val t = freshTable("opt", "(id INT, s STRING) USING strata TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    spark.sql(s"INSERT INTO $t SELECT id, concat('s', id) FROM range(0, 100)")
    spark.sql(s"INSERT INTO $t SELECT id, concat('s', id) FROM range(100, 200)")
    spark.sql(s"DELETE FROM $t WHERE id % 10 = 3")
    val n = files(t).size
    assert(n >= 2 && files(t).forall(_.deletionVector.isDefined))
    val before = rowsOf(t)
    assert(before.size == 180)
    // A bin is rewritten when a file has a vector, whatever min_input_files says.
    val r = optimize(t, s"min_input_files => ${n + 1}")
    assert(counts(r) == (n.toLong, 1L, 1L, 1, 0))
    assert(files(t).forall(_.deletionVector.isEmpty))
    assert(files(t).head.stats.exists(_.contains("\"numRecords\":180")), "the deleted rows are gone from the file")
    assert(rowsOf(t) == before)
    assert(metric(t, "numDeletionVectorsRemoved") == n.toLong)
  }

  test("Z-order clusters rows so a two-column point query reads far fewer files") {
    val t = freshTable("opt", "(a INT, b INT, s STRING) USING strata")
    // 16 files (one append of 16 tasks) of random (a, b): every file spans the whole range of both columns.
    spark.sql(s"INSERT INTO $t SELECT CAST(rand(1) * 1000 AS INT), CAST(rand(2) * 1000 AS INT), repeat('x', 20) " +
      "FROM range(0, 32000, 1, 16)")
    val probe = spark.sql(s"SELECT a, b FROM $t LIMIT 1").head()
    val query = s"SELECT count(*) FROM $t WHERE a = ${probe.getInt(0)} AND b = ${probe.getInt(1)}"
    val before = rowsOf(t)
    assert(filesRead(query) == 16)
    val total = files(t).map(_.size).sum
    val r = optimize(t, "zorder_by => array('A', 'b')", s"target_file_size => ${total / 16}")
    val added = r.getAs[Long]("files_added")
    assert(r.getAs[Long]("files_removed") == 16 && added >= 12 && added <= 20, r)
    assert(rowsOf(t) == before)
    val read = filesRead(query)
    assert(read >= 1 && read <= 4, s"$read of $added files read after Z-order")
    val params = lastCommit(t).json.get("operationParameters")
    assert(params.get("zOrderBy").asText == "[\"a\",\"b\"]" && params.get("predicate").asText == "[]", params)
    assert(spark.sql(query).head().getLong(0) >= 1)
  }

  test("optimize against a concurrent append: both commit, nothing lost") {
    val t = freshTable("opt", "(id INT, p INT) USING strata PARTITIONED BY (p)")
    (0 until 3).foreach(i => spark.sql(s"INSERT INTO $t VALUES ($i, 1), ($i, 2)"))
    val r = raced(spark.sql(s"INSERT INTO $t VALUES (100, 1), (101, 2)")) { optimize(t) }
    assert(counts(r) == (6L, 2L, 2L, 2, 0))
    assert(rowsOf(t, "id").map(_.getInt(0)).sorted == Seq(0, 0, 1, 1, 2, 2, 100, 101))
    assert(files(t).size == 4, "the appended files stay next to the compacted ones")
  }

  test("a concurrent DELETE of a row in one group loses that group only, with the typed conflict") {
    val t = freshTable("opt", "(id INT, s STRING) USING strata")
    (0 until 6).foreach(i => spark.sql(s"INSERT INTO $t VALUES ($i, 's$i')"))
    val size = files(t).map(_.size).max
    val result = raced(spark.sql(s"DELETE FROM $t WHERE id = 5")) {
      // Files of equal size: bins of 3 files each, both in one commit (one partition). The session's log store (as
      // CALL optimize has it) is where the rival waits.
      val sessionLog = TableLog.forPath(new org.apache.hadoop.fs.Path(location(t)), sessionHadoopConf())
      Optimizer.run(spark, sessionLog, OptimizeRequest(targetFileSize = Some(3 * size)))
    }
    assert(result.groupsCommitted == 1 && result.groupsConflicted == 1 && result.versions.size == 1)
    val (group, conflict) = result.conflicts.head
    assert(conflict.isInstanceOf[ConcurrentDeleteDeleteException], conflict)
    assert(group.files.exists(_.stats.exists(_.contains("\"maxValues\":{\"id\":5"))))
    assert(rowsOf(t, "id").map(_.getInt(0)) == Seq(0, 1, 2, 3, 4), "deleted row not resurrected")
    assert(files(t).size == 3, "one compacted file of 3, two original files and the DELETE's empty result")
  }

  test("a concurrent overwrite of a partition loses its group; the other partitions commit") {
    val t = freshTable("opt", "(id INT, p STRING) USING strata PARTITIONED BY (p)")
    (0 until 3).foreach(i => spark.sql(s"INSERT INTO $t VALUES ($i, 'a'), ($i, 'b'), ($i, 'c')"))
    val r = raced(spark.sql(s"INSERT OVERWRITE $t PARTITION (p = 'c') VALUES (9)")) { optimize(t) }
    assert(counts(r) == (6L, 2L, 2L, 2, 1), r)
    assert(rowsOf(t).map(r => (r.getInt(0), r.getString(1))) ==
      Seq((0, "a"), (0, "b"), (1, "a"), (1, "b"), (2, "a"), (2, "b"), (9, "c")))
    assert(files(t).count(_.partitionValues("p").contains("c")) == 1)
  }

  test("timestamp partitions keep their values in a Los Angeles session") {
    withConf("spark.sql.session.timeZone" -> "America/Los_Angeles") {
      val t = freshTable("opt", "(id INT, ts TIMESTAMP) USING strata PARTITIONED BY (ts)")
      // 01:30 on the fall-back day happens twice in Los Angeles: two partitions an hour apart.
      (0 until 2).foreach { i =>
        spark.sql(s"INSERT INTO $t VALUES ($i, TIMESTAMP '2024-11-03 08:30:00 UTC'), " +
          s"($i, TIMESTAMP '2024-11-03 09:30:00 UTC'), ($i, NULL)")
      }
      val before = rowsOf(t)
      val parts = partitionsOf(t)
      assert(parts.size == 3)
      val r = optimize(t, "where => \"ts >= TIMESTAMP '2024-11-03 01:00:00' OR ts IS NULL\"")
      assert(counts(r) == (6L, 3L, 3L, 3, 0), r)
      assert(partitionsOf(t) == parts && rowsOf(t) == before)
    }
  }

  test("bad input names what is wrong and commits nothing") {
    val t = freshTable("opt", "(id INT, a INT, p INT) USING strata PARTITIONED BY (p)")
    (0 until 2).foreach(i => spark.sql(s"INSERT INTO $t VALUES ($i, $i, 1)"))
    val v = version(t)
    def error(args: String*): String = {
      val e = intercept[Exception](optimize(t, args: _*))
      causes(e).map(_.getMessage).mkString(" | ")
    }
    assert(error("zorder_by => array('nope')").contains("argument zorder_by names column 'nope', which the table " +
      "does not have; expected data columns of the table (id, a)"))
    assert(error("zorder_by => array('p')").contains("argument zorder_by names partition column 'p'"))
    assert(error("zorder_by => array('a', 'A')").contains("names column 'a' twice"))
    assert(error("where => 'a = 1'").contains("argument where ('a = 1') refers to a, which is not a partition " +
      "column; expected a predicate over the partition columns only (p)"))
    assert(error("where => 'p ='").contains("is not a valid SQL predicate"))
    assert(error("target_file_size => -5").contains("argument target_file_size is -5; expected a number of bytes > 0"))
    assert(error("min_input_files => 0").contains("argument min_input_files is 0"))
    val unknown = intercept[Exception](spark.sql(s"CALL strata.system.optimize(table => '$t', zorder => array('a'))"))
    assert(unknown.getMessage.contains("UNRECOGNIZED_PARAMETER_NAME"), unknown)
    val flat = freshTable("opt", "(id INT) USING strata")
    val e = intercept[Exception](optimize(flat, "where => 'id = 1'"))
    assert(causes(e).exists(_.getMessage.contains("but the table is not partitioned")), e)
    assert(version(t) == v && files(t).size == 2)
  }

  test("auto-compaction compacts the partitions a commit leaves with many small files; its failure fails no write") {
    withConf("spark.strata.autoCompact.minNumFiles" -> "4") {
      val t = freshTable("opt", "(id INT, p INT) USING strata PARTITIONED BY (p) " +
        "TBLPROPERTIES ('delta.autoOptimize.autoCompact' = 'true')")
      (0 until 3).foreach(i => spark.sql(s"INSERT INTO $t VALUES ($i, 1), ($i, 2)"))
      val v = version(t)
      assert(files(t).size == 6, "3 small files per partition: below the threshold")
      spark.sql(s"INSERT INTO $t VALUES (9, 2)") // p = 2 reaches 4 small files; p = 1 is not touched
      assert(version(t) == v + 2 && lastCommit(t).operation.contains("OPTIMIZE"))
      assert(lastCommit(t).json.get("operationParameters").get("auto").asText == "true")
      val (adds, removes) = changes(t, v + 2)
      assert(adds.size == 1 && removes.size == 4 && (adds ++ removes).forall(f => f match {
        case a: AddFile => !a.dataChange && a.partitionValues("p").contains("2")
        case _ => true
      }) && removes.forall(!_.dataChange))
      // The V1 path triggers it too: p = 1 reaches 4 small files.
      spark.createDataFrame(Seq((7, 1))).toDF("id", "p").write.format("strata").mode("append").save(location(t))
      assert(version(t) == v + 4 && files(t).size == 2)
      assert(rowsOf(t, "id, p").map(r => (r.getInt(0), r.getInt(1))).sortBy(_.toString) ==
        Seq((0, 1), (0, 2), (1, 1), (1, 2), (2, 1), (2, 2), (7, 1), (9, 2)).sortBy(_.toString))
      // A failing compaction is logged; the write has committed and stands.
      withConf("spark.strata.autoCompact.maxFileSize" -> "many") {
        (0 until 4).foreach(i => spark.sql(s"INSERT INTO $t VALUES (${20 + i}, 1)"))
      }
      assert(version(t) == v + 8 && !lastCommit(t).operation.contains("OPTIMIZE"))
      assert(rowsOf(t).size == 12 && files(t).size == 6)
    }
  }

  test("delta-spark's session confs: autoCompact.enabled decides over the table property, with its thresholds") {
    withConf("spark.databricks.delta.autoCompact.enabled" -> "true",
      "spark.databricks.delta.autoCompact.minNumFiles" -> "3") {
      val t = freshTable("opt", "(id INT, p INT) USING strata PARTITIONED BY (p) " +
        "TBLPROPERTIES ('delta.autoOptimize.autoCompact' = 'false')")
      (0 until 2).foreach(i => spark.sql(s"INSERT INTO $t VALUES ($i, 1)"))
      val v = version(t)
      spark.sql(s"INSERT INTO $t VALUES (2, 1)") // 3 small files: delta-spark's minNumFiles
      assert(version(t) == v + 2 && lastCommit(t).operation.contains("OPTIMIZE") && files(t).size == 1)
      withConf("spark.databricks.delta.autoCompact.enabled" -> "false") {
        (3 until 6).foreach(i => spark.sql(s"INSERT INTO $t VALUES ($i, 1)"))
      }
      assert(version(t) == v + 5 && files(t).size == 4, "the session conf turned off: no compaction")
      assert(rowsOf(t, "id").map(_.getInt(0)).sorted == (0 until 6))
    }
  }
}
