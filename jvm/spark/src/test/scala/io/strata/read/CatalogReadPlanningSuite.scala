package io.strata.read

import java.nio.file.{Files, Paths}

import io.strata.SparkTestSession
import io.strata.log.{ActionCodec, AddFile, FileNames, Snapshot, TableLog}
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.ExtendedMode
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation
import org.apache.spark.sql.execution.joins.{BroadcastHashJoinExec, SortMergeJoinExec}
import org.scalatest.funsuite.AnyFunSuite

import scala.jdk.CollectionConverters._

/**
 * Catalog reads (V2) report what they select: EXPLAIN's Location counts the files the filters keep and the scan's
 * statistics are those files' size and rows, from the log. `inputFiles()` lists nothing for a V2 scan: Spark lists
 * only V1 file relations and its own V2 file tables (`Dataset.inputFiles`). count(*) is answered from the log.
 */
class CatalogReadPlanningSuite extends AnyFunSuite with SparkTestSession {
  import spark.implicits._

  private def withConf[T](pairs: (String, String)*)(body: => T): T = {
    val before = pairs.map { case (k, _) => k -> spark.conf.getOption(k) }
    pairs.foreach { case (k, v) => spark.conf.set(k, v) }
    try body finally before.foreach { case (k, v) => v.fold(spark.conf.unset(k))(spark.conf.set(k, _)) }
  }

  private def scanRelation(df: DataFrame): DataSourceV2ScanRelation =
    df.queryExecution.optimizedPlan.collect { case r: DataSourceV2ScanRelation => r }.head
  private def snapshot(path: String): Snapshot = TableLog.forPath(new Path(path), sessionHadoopConf()).snapshot()

  /** A path table read as `strata.`path``: 4 partitions (p = 0..3) of 5 files, file k holding ids [100 k, 100 k + 99]. */
  private lazy val path: String = {
    val p = tempDir().resolve("catalog-planned").toString
    spark.range(0, 2000, 1, 1).select($"id", ($"id" / 500).cast("int").as("p")).repartitionByRange(20, $"id")
      .write.format("strata").partitionBy("p").save(p)
    p
  }
  private def table: DataFrame = spark.table(s"strata.`$path`")

  test("EXPLAIN's Location counts the files a catalog read's filters keep; inputFiles() is empty") {
    val byPartition = table.where("p = 2")
    assert(byPartition.queryExecution.explainString(ExtendedMode).contains("Location: LogFileIndex(5 paths)"))
    val point = table.where("p = 1 AND id = 777")
    assert(point.queryExecution.explainString(ExtendedMode).contains("Location: LogFileIndex(1 paths)"))
    assert(point.collect().map(_.getLong(0)).toSeq == Seq(777L))
    assert(byPartition.count() == 500)
    assert(byPartition.inputFiles.isEmpty && table.inputFiles.isEmpty) // Spark's Dataset.inputFiles: V1 only
    assert(table.queryExecution.explainString(ExtendedMode).contains("Location: LogFileIndex(1 paths)[file:"))
  }

  test("count(*) comes from the log: no Spark job, no data file read; a commit made since the DataFrame is counted") {
    val p = tempDir().resolve("catalog-count").toString
    (0 until 3).foreach(i => spark.range(i * 10L, i * 10L + 10, 1, 1).write.format("strata").mode("append").save(p))
    val df = spark.table(s"strata.`$p`")
    assert(df.groupBy().count().queryExecution.explainString(ExtendedMode).contains("StrataLogAggregate [count(*)]"))
    // Without its data files the table still counts: the answer reads none.
    val listed = Files.list(Paths.get(p))
    try listed.iterator.asScala.filter(_.getFileName.toString.endsWith(".parquet")).foreach(Files.delete)
    finally listed.close()
    var n = 0L
    assert(jobsDuring { n = df.count() } == 0 && n == 30L)
    // Another process commits (straight into the log, so this JVM still holds the version before): Spark reloads the
    // table before running each plan, and the reload finds the new version.
    val log = TableLog.forPath(new Path(p), sessionHadoopConf())
    val next = log.snapshot().version + 1
    log.store.putIfAbsent(FileNames.deltaFile(log.logPath, next), Seq(ActionCodec.serialize(
      AddFile("elsewhere.parquet", Map.empty, 100L, 0L, dataChange = true, Some("""{"numRecords":5}""")))))
    assert(jobsDuring { n = df.count() } == 0 && n == 35L)
  }

  test("the scan reports the size and rows of the files it selected, from the log") {
    val s = snapshot(path)
    val p2 = scanRelation(table.where("p = 2")).stats
    assert(p2.sizeInBytes == BigInt(s.files.filter(_.partitionValues("p").contains("2")).map(_.size).sum))
    assert(p2.rowCount.contains(BigInt(500)))
    val all = scanRelation(table).stats
    assert(all.sizeInBytes == BigInt(s.sizeInBytes) && all.rowCount.contains(BigInt(2000)))
    assert(scanRelation(table.where("id >= 1950")).stats.rowCount.contains(BigInt(100))) // the last file, whole
  }

  test("rows deleted by deletion vectors are not counted") {
    val dv = io.strata.log.Fixtures.goldenTable("dv-partitioned-with-checkpoint").toString
    val df = spark.table(s"strata.`$dv`")
    val live = df.count()
    assert(scanRelation(df).stats.rowCount.contains(BigInt(live)))
    assert(snapshot(dv).files.exists(_.deletionVector.isDefined) && live == 35)
    val part0 = df.where("part = 0")
    assert(scanRelation(part0).stats.rowCount.contains(BigInt(part0.count())))
  }

  test("a selected file without numRecords in its statistics: no row count, still the size") {
    val p = tempDir().resolve("nostats").toString
    spark.range(0, 30, 1, 3).selectExpr("id").write.format("strata").save(p)
    val s = snapshot(p)
    val file = s.files.head
    Files.write(Paths.get(p, "_delta_log", f"${s.version + 1}%020d.json"),
      Seq(ActionCodec.serialize(file.copy(stats = None, dataChange = false))).asJava)
    val stats = scanRelation(spark.table(s"strata.`$p`")).stats
    assert(stats.rowCount.isEmpty && stats.sizeInBytes == BigInt(s.sizeInBytes))
    assert(LogStatisticsScan.numRecords(Some("""{"minValues":{"numRecords":3},"numRecords":10}""")).contains(10L))
    assert(LogStatisticsScan.numRecords(Some("""{"numRecords":"ten"}""")).isEmpty)
  }

  test("a small catalog table joined with a big one is broadcast; so is a small selection of a big one") {
    val small = freshTable("planning", "(id BIGINT, name STRING) USING strata")
    spark.range(0, 10).selectExpr("id", "concat('n', id) AS name").writeTo(small).append()
    val big = freshTable("planning", "(id BIGINT, q INT) USING strata")
    spark.range(0, 20000, 1, 4).selectExpr("id", "CAST(id % 4 AS INT) AS q").writeTo(big).append()
    val smallBytes = scanRelation(spark.table(small)).stats.sizeInBytes
    val partitionBytes = scanRelation(table.where("p = 1")).stats.sizeInBytes
    val threshold = (smallBytes max partitionBytes) + 1
    assert(scanRelation(spark.table(big)).stats.sizeInBytes > threshold && snapshot(path).sizeInBytes > threshold)
    withConf("spark.sql.autoBroadcastJoinThreshold" -> threshold.toString, "spark.sql.adaptive.enabled" -> "false") {
      def joins(df: DataFrame) = df.queryExecution.executedPlan.collect {
        case j: BroadcastHashJoinExec => "broadcast"
        case j: SortMergeJoinExec => "sort-merge"
      }
      val q = spark.table(big).join(spark.table(small), "id")
      assert(joins(q) == Seq("broadcast") && q.count() == 10)
      val selection = spark.table(big).join(table.where("p = 1"), "id")
      assert(joins(selection) == Seq("broadcast") && selection.count() == 500)
      assert(joins(spark.table(big).join(table, "id")) == Seq("sort-merge")) // the whole table is too big
    }
  }
}
