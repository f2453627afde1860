package io.strata.read

import io.strata.SparkTestSession
import io.strata.log.{Snapshot, TableLog}
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.execution.exchange.ReusedExchangeExec
import org.apache.spark.sql.execution.joins.{BroadcastHashJoinExec, SortMergeJoinExec}
import org.apache.spark.sql.functions._
import org.scalatest.funsuite.AnyFunSuite

/**
 * Path reads planned from the log by [[PruneLogFileIndex]] (the session extension): `inputFiles()`, EXPLAIN, the
 * relation's size and the scan see exactly the files the filters keep, and no result changes.
 */
class PathReadPlanningSuite extends AnyFunSuite with SparkTestSession {
  import spark.implicits._

  private def withConf[T](pairs: (String, String)*)(body: => T): T = {
    val before = pairs.map { case (k, _) => k -> spark.conf.getOption(k) }
    pairs.foreach { case (k, v) => spark.conf.set(k, v) }
    try body finally before.foreach { case (k, v) => v.fold(spark.conf.unset(k))(spark.conf.set(k, _)) }
  }

  /** Runs `body` with the rule switched off (Spark's own switch for optimizer rules). */
  private def withoutRule[T](body: => T): T = withConf("spark.sql.optimizer.excludedRules" -> PruneLogFileIndex.ruleName)(body)

  private def rows(df: DataFrame): Seq[Row] = df.collect().toSeq.sortBy(_.toString)
  private def snapshot(path: String): Snapshot = TableLog.forPath(new Path(path), sessionHadoopConf()).snapshot()
  private def read(path: String): DataFrame = spark.read.format("strata").load(path)

  private def scans(plan: SparkPlan): Seq[FileSourceScanExec] = plan.collect { case s: FileSourceScanExec => s }
  private def index(df: DataFrame): Seq[LogFileIndex] = df.queryExecution.optimizedPlan.collect {
    case LogicalRelation(fs: HadoopFsRelation, _, _, _, _) => fs.location.asInstanceOf[LogFileIndex]
  }

  /** 4 partitions (p = 0..3) of 5 files each, file k of a partition holding ids [100 k, 100 k + 99] of it. */
  private lazy val table: String = {
    val path = tempDir().resolve("planned").toString
    spark.range(0, 2000, 1, 1).select($"id", ($"id" / 500).cast("int").as("p"), concat(lit("v"), $"id").as("v"))
      .repartitionByRange(20, $"id")
      .write.format("strata").partitionBy("p").save(path)
    path
  }

  private def logFiles(path: String, keep: io.strata.log.AddFile => Boolean): Set[String] = {
    val s = snapshot(path)
    s.files.filter(keep).map(f => s.absolutePath(f.path).toString).toSet
  }

  test("inputFiles() of a partition filter lists exactly that partition's files, which the scan reads") {
    val df = read(table).where("p = 2")
    val expected = logFiles(table, _.partitionValues("p").contains("2"))
    assert(expected.size == 5)
    assert(df.inputFiles.toSet == expected)
    assert(index(df).map(_.inputFiles.length) == Seq(5))
    assert(df.collect().length == 500)
    val read2 = df.select(col("_metadata.file_path")).distinct().collect().map(_.getString(0)).toSet
    assert(read2.map(p => new Path(p).toString) == expected)
    val scan = scans(df.queryExecution.executedPlan).head
    assert(scan.metrics("numFiles").value == 5)
    withoutRule(assert(read(table).where("p = 2").inputFiles.length == 20)) // the whole table, as Spark plans it
  }

  test("a point query's inputFiles() is the files its statistics keep, as many as the scan reads") {
    val df = read(table).where("p = 1 AND id = 777")
    val expected = logFiles(table, f => f.partitionValues("p").contains("1") && f.stats.exists { s =>
      val node = io.strata.log.ActionCodec.mapper.readTree(s)
      node.get("minValues").get("id").asLong <= 777 && node.get("maxValues").get("id").asLong >= 777
    })
    assert(expected.size == 1)
    assert(df.inputFiles.toSet == expected)
    assert(df.collect().map(_.getLong(0)).toSeq == Seq(777L))
    assert(scans(df.queryExecution.executedPlan).head.metrics("numFiles").value == 1)
    // data filters alone prune too; an impossible one keeps nothing
    assert(read(table).where("id = 1234").inputFiles.length == 1)
    assert(read(table).where("p = 7").inputFiles.isEmpty)
    assert(read(table).where("p = 7").count() == 0)
  }

  test("EXPLAIN names the files the scan reads; the relation's size is theirs") {
    val df = read(table).where("p = 3")
    val explained = df.queryExecution.explainString(org.apache.spark.sql.execution.ExtendedMode)
    assert(explained.contains("Location: LogFileIndex(5 paths)"), explained)
    val all = read(table)
    assert(!all.queryExecution.explainString(org.apache.spark.sql.execution.SimpleMode)
      .contains("LogFileIndex(5 paths)"))
    val size = snapshot(table).files.filter(_.partitionValues("p").contains("3")).map(_.size).sum
    assert(df.queryExecution.optimizedPlan.collectLeaves().head.stats.sizeInBytes == BigInt(size))
    assert(all.queryExecution.optimizedPlan.stats.sizeInBytes == BigInt(snapshot(table).sizeInBytes))
  }

  test("results with and without the rule are equal, over many filter shapes") {
    Seq("p = 2", "p IN (0, 3)", "p > 1 AND id % 7 = 0", "id < 150 OR id > 1950", "p = 1 OR id = 5",
      "id BETWEEN 480 AND 520", "v = 'v1500'", "p = 0 AND rand(3) < 2", "p + 1 = 3", "p IS NULL", "NOT (p = 1)",
      "id = (SELECT max(id) FROM range(10))", "p IN (SELECT 2)")
      .foreach { c =>
        val withRule = rows(read(table).where(c))
        val without = withoutRule(rows(read(table).where(c)))
        assert(withRule == without, c)
      }
  }

  test("a join on the partition column: run-time partition pruning works within the kept files") {
    val dims = Seq((1, "one"), (3, "three"), (0, "zero")).toDF("p", "name")
    def q() = read(table).where("p > 0 AND id % 2 = 0").join(dims.where("name = 'one'"), "p")
    val expected = withoutRule(rows(q()))
    assert(rows(q()) == expected && expected.size == 250)
  }

  test("a self-join with two different filters prunes each side by its own") {
    val df = read(table)
    def join() = df.where("p = 0").as("a").join(df.where("p = 3 AND id >= 1900").as("b"), $"a.id" + 1900 === $"b.id")
    val expected = withoutRule(rows(join()))
    val joined = join()
    assert(rows(joined) == expected && expected.size == 100)
    val sizes = index(joined).map(_.inputFiles.length).sorted
    assert(sizes == Seq(1, 5), sizes) // p = 3's last file only, all 5 of p = 0
    assert(joined.inputFiles.length == 6)
    // Equal filters on both sides: equal indexes, so Spark reuses one side's exchange for the other.
    val same = withConf("spark.sql.autoBroadcastJoinThreshold" -> "-1", "spark.sql.adaptive.enabled" -> "false") {
      val q = df.where("p = 1").as("a").join(df.where("p = 1").as("b"), Seq("id"))
      assert(q.count() == 500)
      q.queryExecution.executedPlan
    }
    assert(same.collect { case r: ReusedExchangeExec => r }.nonEmpty, same)
  }

  test("a union of two filtered reads of one relation keeps each branch's rows") {
    val df = read(table)
    val u = df.where("p = 0 AND id < 10").union(df.where("p = 2 AND id >= 1490"))
    assert(rows(u).map(_.getLong(0)) == ((0L until 10L) ++ (1490L until 1500L)).sortBy(_.toString))
  }

  test("a cached filtered read serves its rows; other filters on the same relation still see theirs") {
    val df = read(table)
    val cached = df.where("p = 1").cache()
    try {
      assert(cached.count() == 500)
      assert(df.where("p = 1").count() == 500) // from the cache
      assert(df.where("p = 2").count() == 500)
      assert(df.count() == 2000)
    } finally cached.unpersist()
  }

  test("a small selection of a big table is broadcast in a join: its size is the selected files'") {
    val other = tempDir().resolve("other").toString
    spark.range(0, 2000, 1, 4).select($"id", ($"id" % 4).cast("int").as("q")).write.format("strata").save(other)
    val partitionBytes = snapshot(table).files.filter(_.partitionValues("p").contains("1")).map(_.size).sum
    val threshold = partitionBytes + 1
    assert(snapshot(table).sizeInBytes > threshold && snapshot(other).sizeInBytes > threshold)
    withConf("spark.sql.autoBroadcastJoinThreshold" -> threshold.toString, "spark.sql.adaptive.enabled" -> "false") {
      val q = read(other).join(read(table).where("p = 1"), "id")
      val plan = q.queryExecution.executedPlan
      assert(plan.collect { case j: BroadcastHashJoinExec => j }.size == 1, plan)
      assert(q.count() == 500)
      withoutRule {
        val p2 = read(other).join(read(table).where("p = 1"), "id").queryExecution.executedPlan
        assert(p2.collect { case j: SortMergeJoinExec => j }.size == 1, p2) // the whole table's size: no broadcast
      }
    }
  }

  test("timestamp partitions in a non-UTC session prune by instant") {
    withConf("spark.sql.session.timeZone" -> "America/Los_Angeles") {
      val path = tempDir().resolve("ts").toString
      spark.range(0, 40, 1, 1).select($"id",
        (lit("2024-03-10 00:30:00").cast("timestamp") + make_interval(lit(0), lit(0), lit(0), lit(0),
          ($"id" % 4).cast("int"))).as("ts"))
        .write.format("strata").partitionBy("ts").save(path)
      val df = read(path).where("ts = TIMESTAMP'2024-03-10 03:30:00'") // the DST gap: 02:30 does not exist
      assert(df.inputFiles.length == 1)
      assert(rows(df) == withoutRule(rows(read(path).where("ts = TIMESTAMP'2024-03-10 03:30:00'"))))
      assert(df.count() == 10)
      val kept = read(path).where("ts >= TIMESTAMP'2024-03-10 01:30:00'")
      assert(kept.inputFiles.length == 3 && kept.count() == 30)
    }
  }

  test("tables with deletion vectors: pruned reads keep dropping deleted rows") {
    val dv = io.strata.log.Fixtures.goldenTable("dv-partitioned-with-checkpoint").toString
    val df = read(dv).where("part = 0")
    assert(index(df).forall(_.hasDeletionVectors))
    val s = snapshot(dv)
    assert(df.inputFiles.toSet == s.files.filter(_.partitionValues("part").contains("0"))
      .map(f => s.absolutePath(f.path).toString).toSet)
    val col1 = df.select("col1").collect().map(_.getInt(0)).toSeq.sorted
    assert(col1 == (0 until 50).filter(c => c % 10 == 0 && !(c % 2 == 0 && c <= 28)))
    Seq("part = 0", "col1 >= 30", "part = 4 AND col1 = 24", "part IN (1, 2)").foreach { c =>
      assert(rows(read(dv).where(c)) == withoutRule(rows(read(dv).where(c))), c)
    }
  }

  test("a pruned index never builds the files of the partitions it leaves out") {
    val s = snapshot(table)
    val built = scala.collection.mutable.Set.empty[Int]
    val base = SnapshotReader.fileIndex(spark, s)
    val partitions = s.filesByPartition.map { case (values, files) =>
      val p = values("p").get.toInt
      val row = org.apache.spark.sql.catalyst.InternalRow(p)
      new IndexedPartition(row, { built += p; files.map(f => IndexedFile(s.absolutePath(f.path), f.size,
        f.modificationTime, row, f.stats)) })
    }
    val counted = new LogFileIndex(spark, s.tablePath, partitions, base.partitionSchema.add("id", "long"),
      base.partitionSchema, Map.empty, s.version, false, false, s.sizeInBytes)
    val p = read(table).queryExecution.analyzed.output.find(_.name == "p").get
    val filter = org.apache.spark.sql.catalyst.expressions.EqualTo(p, org.apache.spark.sql.catalyst.expressions.Literal(2))
    val pruned = counted.pruned(Seq(filter), Nil).get
    assert(built == Set(2))
    assert(pruned.inputFiles.length == 5 && pruned.sizeInBytes < s.sizeInBytes)
    assert(pruned.listFiles(Seq(filter), Nil).map(_.files.size).sum == 5)
    assert(built == Set(2))
    // a scan whose filters do not include the pruning's is answered from the whole snapshot
    assert(pruned.listFiles(Nil, Nil).map(_.files.size).sum == 20)
  }
}
