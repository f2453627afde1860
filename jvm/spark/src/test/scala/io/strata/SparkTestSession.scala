package io.strata

import java.nio.file.{Files, Path => JPath}

import io.strata.testkit.FaultInjectingLogStore
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.SparkSession
import org.scalatest.{BeforeAndAfterAll, Suite}

/** One local[2] SparkSession per test JVM (suites share it), tuned for 2 cores. */
object SparkTestSession {
  private val tables = new java.util.concurrent.atomic.AtomicInteger()
  lazy val spark: SparkSession = SparkSession.builder()
    .master("local[2]")
    .appName("strata-tests")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.shuffle.partitions", "2")
    .config("spark.sql.session.timeZone", "UTC")
    .config("spark.sql.warehouse.dir", Files.createTempDirectory("spark-wh").toString)
    .config("spark.sql.catalog.strata", "io.strata.catalog.StrataCatalog")
    .config("spark.sql.catalog.strata.warehouse", Files.createTempDirectory("strata-wh").toString)
    .config("spark.sql.catalog.spark_catalog", "io.strata.catalog.StrataSessionCatalog")
    .config("spark.sql.extensions", "io.strata.StrataSessionExtensions")
    .getOrCreate()
}

trait SparkTestSession extends BeforeAndAfterAll { self: Suite =>
  lazy val spark: SparkSession = SparkTestSession.spark

  def tempDir(prefix: String = "strata"): JPath = {
    val d = Files.createTempDirectory(prefix)
    d.toFile.deleteOnExit()
    d
  }

  /**
   * Runs `body`; the first commit attempt of any transaction in it first waits for `rival`, run to its end on a
   * thread of its own (outside `body`'s SQL execution, as another application would be). No sleeps: the rival lands
   * between the statement's read and its commit on every run. The pause is a fault injected by the session's log
   * store for `file` tables, [[FaultInjectingLogStore]], plugged in for the length of `body`.
   */
  def withRivalBeforeCommit[T](rival: => Unit)(body: => T): T = {
    val (key, store) = FaultInjectingLogStore.Setting
    val previous = spark.conf.getOption(key)
    spark.conf.set(key, store)
    try FaultInjectingLogStore.withRivalBeforeFirstCommit { () =>
      var failure: Option[Throwable] = None
      val t = new Thread(() => try {
        spark.sparkContext.setLocalProperty("spark.sql.execution.id", null)
        rival
      } catch { case e: Throwable => failure = Some(e) })
      t.start(); t.join()
      failure.foreach(e => throw new IllegalStateException("the rival failed", e))
    }(body)
    finally previous.fold(spark.conf.unset(key))(spark.conf.set(key, _))
  }

  /**
   * A Hadoop configuration with the session's settings, built as the connector builds its own (Spark's Hadoop
   * configuration, then the session's SQL conf): a TableLog made with it commits through the session's log store.
   */
  def sessionHadoopConf(): Configuration = {
    val conf = new Configuration(spark.sparkContext.hadoopConfiguration)
    spark.conf.getAll.foreach { case (k, v) => conf.set(k, v) }
    conf
  }

  /** The jobs Spark started while `body` ran (a listener; a marker job after `body` flushes the listener bus). */
  def jobsDuring(body: => Unit): Int = {
    val started = new java.util.concurrent.atomic.AtomicInteger()
    val marker = new java.util.concurrent.CountDownLatch(1)
    val markerName = s"marker-${System.nanoTime()}"
    val listener = new org.apache.spark.scheduler.SparkListener {
      override def onJobStart(e: org.apache.spark.scheduler.SparkListenerJobStart): Unit =
        if (Option(e.properties).flatMap(p => Option(p.getProperty("spark.job.description"))).contains(markerName)) {
          marker.countDown()
        } else started.incrementAndGet()
    }
    spark.sparkContext.addSparkListener(listener)
    try {
      body
      spark.sparkContext.setJobDescription(markerName)
      try spark.sparkContext.parallelize(Seq(1), 1).count() finally spark.sparkContext.setJobDescription(null)
      assert(marker.await(60, java.util.concurrent.TimeUnit.SECONDS), "the marker job never reached the listener")
      started.get()
    } finally spark.sparkContext.removeSparkListener(listener)
  }

  /** The location of a catalog table, as DESCRIBE TABLE EXTENDED shows it. */
  def location(table: String): String = spark.sql(s"DESCRIBE TABLE EXTENDED $table")
    .where("col_name = 'Location'").head().getString(1)

  /** A new table `strata.<namespace>.t<N>` created with `ddl` (columns, USING, PARTITIONED BY, ...). */
  def freshTable(namespace: String, ddl: String): String = {
    spark.sql(s"CREATE NAMESPACE IF NOT EXISTS strata.$namespace")
    val name = s"strata.$namespace.t${SparkTestSession.tables.incrementAndGet()}"
    spark.sql(s"CREATE TABLE $name $ddl")
    name
  }

  /** Every regular file below `dir`, relative, excluding checksum files. */
  def filesUnder(dir: JPath): Set[String] = {
    import scala.jdk.CollectionConverters._
    val s = Files.walk(dir)
    try s.iterator.asScala.filter(Files.isRegularFile(_)).map(p => dir.relativize(p).toString)
      .filterNot(_.endsWith(".crc")).toSet
    finally s.close()
  }
}
