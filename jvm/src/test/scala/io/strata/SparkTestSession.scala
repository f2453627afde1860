package io.strata

import java.nio.file.{Files, Path => JPath}

import org.apache.spark.sql.SparkSession
import org.scalatest.{BeforeAndAfterAll, Suite}

/** One local[2] SparkSession per test JVM (suites share it), tuned for 2 cores. */
object SparkTestSession {
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
    .getOrCreate()
}

trait SparkTestSession extends BeforeAndAfterAll { self: Suite =>
  lazy val spark: SparkSession = SparkTestSession.spark

  def tempDir(prefix: String = "strata"): JPath = {
    val d = Files.createTempDirectory(prefix)
    d.toFile.deleteOnExit()
    d
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
