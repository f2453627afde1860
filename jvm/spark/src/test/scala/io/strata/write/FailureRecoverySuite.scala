package io.strata.write

import java.nio.file.{Files, Paths}

import io.strata.{ChildJvm, SparkTestSession}
import io.strata.log.TableLog
import io.strata.testkit.FaultInjectingLogStore
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.ExceptionFailure
import org.apache.spark.scheduler.{SparkListener, SparkListenerTaskEnd}
import org.apache.spark.sql.SparkSession
import org.scalatest.funsuite.AnyFunSuite

/** A driver that dies after its tasks wrote files but before the log commit leaves the table as it was. */
class DriverCrashSuite extends AnyFunSuite with SparkTestSession {
  test("driver killed between the data files and the log commit: previous version, files invisible") {
    val path = tempDir().resolve("crash").toString
    spark.range(10).selectExpr("id", "cast(id % 2 as string) as p").write.format("strata").partitionBy("p").save(path)
    val before = filesUnder(Paths.get(path))

    val exit = ChildJvm.run("io.strata.write.CrashingWriter", path)
    assert(exit == 86, s"the child driver should have halted at the put of its commit (exit $exit)")

    val written = filesUnder(Paths.get(path)) -- before
    assert(written.exists(_.endsWith(".parquet")), "the child's tasks should have written data files")
    val log = TableLog.forPath(new Path(path), new Configuration())
    assert(log.snapshot().version == 0)
    val live = log.snapshot().files.map(f => log.snapshot().absolutePath(f.path).toUri.getPath).toSet
    assert(written.forall(w => !live.exists(_.endsWith(w))), "an uncommitted file is visible")
    assert(spark.read.format("strata").load(path).count() == 10)
    spark.range(5).selectExpr("id", "'1' as p").write.format("strata").mode("append").save(path)
    assert(spark.read.format("strata").load(path).count() == 15)
  }
}

class TaskRetrySuite extends AnyFunSuite with SparkTestSession {
  test("a task whose first attempt fails mid-file is retried: every row once, no file of the failed attempt left") {
    val path = tempDir().resolve("retry").toString
    val failures = tempDir().resolve("failures")
    val exit = ChildJvm.run("io.strata.write.RetryingWriter", path, failures.toString)
    assert(exit == 0)
    assert(Files.readString(failures).trim.toInt > 0, "no first attempt failed")
    val log = TableLog.forPath(new Path(path), new Configuration())
    val snap = log.snapshot()
    assert(snap.version == 0)
    val df = spark.read.format("strata").load(path)
    assert(df.count() == 1000 && df.distinct().count() == 1000)
    val live = snap.files.map(f => Paths.get(path).relativize(Paths.get(snap.absolutePath(f.path).toUri)).toString).toSet
    val onDisk = filesUnder(Paths.get(path)).filterNot(_.startsWith("_delta_log"))
    assert(onDisk == live, s"files on disk that the log does not reference: ${onDisk -- live}")
  }
}

/**
 * Child driver with task retries (local[2,3]) on [[FaultInjectingFileSystem]]: the data files of every first attempt
 * fail after 100 bytes (half written), the retries succeed. Writes the number of task attempts that failed so into
 * the file `args(1)`.
 */
object RetryingWriter {
  def main(args: Array[String]): Unit = {
    val builder = SparkSession.builder().master("local[2,3]").config("spark.ui.enabled", "false")
    val spark = FaultInjectingFileSystem.Settings.foldLeft(builder) { case (b, (k, v)) => b.config(s"spark.hadoop.$k", v) }
      .getOrCreate()
    val failed = new java.util.concurrent.atomic.AtomicInteger()
    spark.sparkContext.addSparkListener(new SparkListener {
      override def onTaskEnd(end: SparkListenerTaskEnd): Unit = end.reason match {
        case f: ExceptionFailure if f.toErrorString.contains("Injected write failure") => failed.incrementAndGet()
        case _ =>
      }
    })
    FaultInjectingFileSystem.failingWrites(bytes = 100)(spark.range(1000).selectExpr("id", "cast(id % 3 as string) as p")
      .repartition(4).write.format("strata").partitionBy("p").save(args(0)))
    spark.stop() // delivers the listener's pending events first
    Files.writeString(Paths.get(args(1)), failed.get.toString)
  }
}

/**
 * Child driver: appends 1,000 rows through [[FaultInjectingLogStore]], which halts the JVM (code 86) at the put of
 * the log commit: the data files are written, the commit is not.
 */
object CrashingWriter {
  def main(args: Array[String]): Unit = {
    val (store, impl) = FaultInjectingLogStore.Setting
    val spark = SparkSession.builder().master("local[2]").config("spark.ui.enabled", "false")
      .config(s"spark.hadoop.$store", impl).getOrCreate()
    FaultInjectingLogStore.withHaltBeforeCommit(86)(spark.range(1000).selectExpr("id", "cast(id % 2 as string) as p")
      .write.format("strata").mode("append").save(args(0)))
    System.exit(0) // not reached: the log store halts with code 86
  }
}
