package io.strata.state

import io.strata.SparkTestSession
import io.strata.config.ReadConf
import io.strata.log.{InvalidTableOperationException, Operation, TableLog}
import io.strata.read.{DistributedFileIndex, LogFileIndex}
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.datasources.{FileIndex, HadoopFsRelation, LogicalRelation}
import org.apache.spark.storage.StorageLevel
import org.scalatest.funsuite.AnyFunSuite

/**
 * The distributed state's reconciled adds stay persisted between queries ([[StateCache]]): a second query of the same
 * version runs no reconciliation job, a new commit is applied to the cached state and seen, and the cache
 * holds a bounded number of tables.
 */
class DistributedStateCacheSuite extends AnyFunSuite with SparkTestSession {
  private def distributed[T](body: => T): T = {
    spark.conf.set(ReadConf.DistributedFilesKey, "0")
    try body finally spark.conf.unset(ReadConf.DistributedFilesKey)
  }

  /** Reconciliation jobs (one per query stage) Spark started while `body` ran (a marker job after it flushes the listener bus). */
  private def reconciling[T](body: => T): (Int, T) = {
    val started = new java.util.concurrent.atomic.AtomicInteger()
    val marker = new java.util.concurrent.CountDownLatch(1)
    val markerName = s"marker-${System.nanoTime()}"
    val listener = new org.apache.spark.scheduler.SparkListener {
      override def onJobStart(e: org.apache.spark.scheduler.SparkListenerJobStart): Unit = {
        val d = Option(e.properties).flatMap(p => Option(p.getProperty("spark.job.description"))).getOrElse("")
        if (d == markerName) marker.countDown()
        else if (d.startsWith(DistributedFileState.Reconciling)) started.incrementAndGet()
      }
    }
    spark.sparkContext.addSparkListener(listener)
    try {
      val out = body
      spark.sparkContext.setJobDescription(markerName)
      try spark.sparkContext.parallelize(Seq(1), 1).count() finally spark.sparkContext.setJobDescription(null)
      assert(marker.await(60, java.util.concurrent.TimeUnit.SECONDS), "the marker job never reached the listener")
      (started.get(), out)
    } finally spark.sparkContext.removeSparkListener(listener)
  }

  private def index(df: DataFrame): FileIndex = df.queryExecution.optimizedPlan.collectFirst {
    case r: LogicalRelation if r.relation.isInstanceOf[HadoopFsRelation] => r.relation.asInstanceOf[HadoopFsRelation].location
  }.get

  /** The live files (path, size, deletion vector) the distributed state lists, against the driver's snapshot. */
  private def sameFilesAsDriver(path: String): Unit = {
    val d = index(spark.read.format("strata").load(path)).asInstanceOf[DistributedFileIndex]
    val listed = d.listFiles(Nil, Nil).flatMap(_.files).map(f => (f.getPath.getName, f.getLen)).toSet
    val log = TableLog.forPath(new Path(path), sessionHadoopConf())
    assert(listed == log.snapshot().files.map(f => (new Path(f.path).getName, f.size)).toSet)
  }

  /** `appends` appends of 20 rows (partition p<k>), a checkpoint, then one row (id 500, p0): 20 * appends + 1 rows. */
  private def table(appends: Int = 3): String = {
    val path = tempDir("cache").resolve("t").toString
    import spark.implicits._
    (0 until appends).foreach { k =>
      (0 until 20).map(i => (k * 100L + i, s"p$k")).toDF("id", "p").repartition(2)
        .write.format("strata").mode("append").partitionBy("p").save(path)
    }
    val log = TableLog.forPath(new Path(path), sessionHadoopConf())
    log.writeCheckpoint(log.snapshot())
    Seq((500L, "p0")).toDF("id", "p").write.format("strata").mode("append").save(path)
    path
  }

  test("a second query of a version reconciles nothing; new commits are applied to the cached state and seen") {
    StateCache.clear()
    val path = table()
    import spark.implicits._
    distributed {
      def read() = spark.read.format("strata").load(path)
      val (first, n) = reconciling(read().where("p = 'p1'").count())
      assert(first > 0 && n == 20) // jobs: one per query stage of the reconciliation
      // other filters, inputFiles(), the totals and a full read: all from the cached state
      val (again, answers) = reconciling((read().where("id < 5").count(), read().count(),
        read().where("p = 'p0'").inputFiles.length, read().collect().length))
      assert(again == 0 && answers == ((5L, 61L, 3, 61)), answers)
      sameFilesAsDriver(path)

      // an append and a removal: the newer version reconciles once (from the cached state), then reuses it
      Seq((600L, "p2")).toDF("id", "p").write.format("strata").mode("append").save(path)
      val log = TableLog.forPath(new Path(path), sessionHadoopConf())
      val gone = log.snapshot().files.filter(_.partitionValues("p").contains("p1")).head
      log.startTransaction().commit(Seq(gone.remove(System.currentTimeMillis())), Operation("DELETE"))
      val expected = 62L - spark.read.parquet(new Path(new Path(path), gone.path).toString).count()
      val (update, count) = reconciling(read().count())
      assert(update > 0 && count == expected)
      val (none, ids) = reconciling(read().where("id = 600 OR id = 500").select("id").as[Long].collect().toSet)
      assert(none == 0 && ids == Set(500L, 600L))
      sameFilesAsDriver(path)
      // the driver's answer for the same version
      spark.conf.unset(ReadConf.DistributedFilesKey)
      assert(index(read()).isInstanceOf[LogFileIndex] && read().count() == expected)
    }
  }

  test("the cache is bounded: the least recently used table's state is unpersisted") {
    StateCache.clear()
    val before = spark.sparkContext.getPersistentRDDs.size
    val paths = (0 to StateCache.MaxTables).map(_ => table(appends = 1))
    distributed {
      paths.foreach(p => assert(spark.read.format("strata").load(p).count() == 21))
      assert(spark.sparkContext.getPersistentRDDs.size - before == StateCache.MaxTables)
      // the first table was evicted: reading it reconciles again; the last is still cached
      assert(reconciling(spark.read.format("strata").load(paths.head).count())._1 > 0)
      assert(reconciling(spark.read.format("strata").load(paths.last).count())._1 == 0)
    }
    StateCache.clear()
    assert(spark.sparkContext.getPersistentRDDs.size == before)
  }

  test("the state is kept on disk by default; spark.strata.state.storageLevel picks another level, or NONE") {
    StateCache.clear()
    val path = table(appends = 1)
    def read() = spark.read.format("strata").load(path).count()
    def withLevel[T](v: String)(body: => T): T = {
      spark.conf.set(ReadConf.StateStorageLevelKey, v)
      try body finally spark.conf.unset(ReadConf.StateStorageLevelKey)
    }
    val before = spark.sparkContext.getPersistentRDDs.keySet
    def added = spark.sparkContext.getPersistentRDDs.filter { case (id, _) => !before(id) }.values
      .map(_.getStorageLevel).toSeq
    distributed {
      assert(read() == 21 && added == Seq(StorageLevel.DISK_ONLY))
      assert(reconciling(read())._1 == 0)
      StateCache.clear()
      withLevel("memory_and_disk_ser") {
        assert(read() == 21 && added == Seq(StorageLevel.MEMORY_AND_DISK_SER))
      }
      StateCache.clear()
      withLevel("NONE") { // each query reconciles for itself: right answers, nothing kept, no cache job
        import spark.implicits._
        assert(reconciling(read()) == ((0, 21L)))
        Seq((700L, "p0")).toDF("id", "p").write.format("strata").mode("append").save(path)
        assert(read() == 22 && added.isEmpty, "nothing kept")
      }
      val e = intercept[InvalidTableOperationException](withLevel("SOMETIMES")(read()))
      assert(e.getCondition == "STRATA_INVALID_CONF_VALUE" && e.getMessage.contains(ReadConf.StateStorageLevelKey) &&
        e.getMessage.contains("DISK_ONLY, MEMORY_AND_DISK_SER or NONE"), e.getMessage)
    }
  }

  test("a log put back from a copy and written on to the cached version is reconciled anew; so is its next version") {
    StateCache.clear()
    import spark.implicits._
    val path = table(appends = 2) // versions 0-2, checkpoint at 2, version 3 (id 500)
    val copy = tempDir("cache-copy").resolve("t")
    def move(from: java.nio.file.Path, to: java.nio.file.Path): Unit = {
      org.apache.commons.io.FileUtils.deleteDirectory(to.toFile)
      org.apache.commons.io.FileUtils.moveDirectory(from.toFile, to.toFile)
    }
    // The copy keeps modification times (as cp -a, a backup restore or an object-store rollback do).
    org.apache.commons.io.FileUtils.copyDirectory(new java.io.File(path), copy.toFile, true)
    def read() = spark.read.format("strata").load(path)
    distributed {
      Seq((600L, "p1")).toDF("id", "p").write.format("strata").mode("append").save(path) // version 4
      assert(read().count() == 42)
      // Another history written from the copy to version 4 (under another path, as another process would: this
      // JVM's caches of `path` never see it), then moved in place of the table.
      Seq((700L, "p0"), (701L, "p0")).toDF("id", "p").write.format("strata").mode("append").save(copy.toString)
      move(copy, java.nio.file.Paths.get(path))
      val (jobs, ids) = reconciling(read().where("id >= 500").select("id").as[Long].collect().toSet)
      assert(jobs > 0 && ids == Set(500L, 700L, 701L), "the cached state of the other history answered")
      sameFilesAsDriver(path)
      // The next version is brought forward from the state just built (its commit file probed: still the log's).
      Seq((800L, "p1")).toDF("id", "p").write.format("strata").mode("append").save(path)
      val (update, n) = reconciling(read().count())
      assert(update > 0 && n == 44)
      assert(reconciling(read().count()) == ((0, 44L)))
    }
  }
}
