package io.strata.catalog

import java.nio.file.Paths
import java.util.concurrent.atomic.AtomicInteger

import io.strata.SparkTestSession
import io.strata.log.InvalidTableOperationException
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

import scala.collection.mutable

/**
 * Defect 10: `spark.read.option(...).table(name)` on tables of both catalogs (`strata` and `spark_catalog` USING
 * strata) checks its options as a path read does: an unknown option is refused naming the closest known one, a change
 * data feed request is refused (it must never return the whole table), and the options path reads accept work.
 */
class CatalogReadOptionsSuite extends AnyFunSuite with SparkTestSession {
  private val sessionTables = new AtomicInteger()

  /** A table in each catalog, each with version 1 holding ids 1 and 2 and version 2 adding id 3. */
  private def tables(): Seq[String] = {
    val inStrata = freshTable("readopts", "(id BIGINT) USING strata")
    val inSession = s"spark_catalog.default.readopts_${sessionTables.incrementAndGet()}"
    spark.sql(s"CREATE TABLE $inSession (id BIGINT) USING strata")
    Seq(inStrata, inSession).foreach { t =>
      spark.sql(s"INSERT INTO $t VALUES (1), (2)")
      spark.sql(s"INSERT INTO $t VALUES (3)")
    }
    Seq(inStrata, inSession)
  }

  private def ids(df: DataFrame): Set[Long] = df.collect().map(_.getLong(0)).toSet

  /** The Strata refusal `body` fails with, wherever Spark wrapped it. */
  private def refusal(body: => Any): InvalidTableOperationException = {
    val e = intercept[Throwable](body)
    Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null)
      .collectFirst { case s: InvalidTableOperationException => s }
      .getOrElse(fail(s"expected Strata's refusal, got $e", e))
  }

  private def pathRead = spark.read.format("strata")

  test("an unknown option on .table() is refused naming the closest known one, with the path read's message") {
    tables().foreach { t =>
      val viaTable = refusal(spark.read.option("versionAsOff", "1").table(t).collect())
      val viaPath = refusal(pathRead.option("versionAsOff", "1").load(location(t)).collect())
      assert(viaTable.getCondition == "STRATA_UNKNOWN_OPTION", t)
      assert(viaTable.messageText == "Unknown option 'versionAsOff'. Did you mean 'versionAsOf'? Known options: path, " +
        "versionAsOf, timestampAsOf.", t)
      assert(viaTable.getMessage == viaPath.getMessage, t)
      // SQL's options clause reaches the table the same way.
      val viaSql = refusal(spark.sql(s"SELECT * FROM $t WITH ('timestampAsOff' = '2020-01-01')").collect())
      assert(viaSql.messageText.startsWith("Unknown option 'timestampAsOff'. Did you mean 'timestampAsOf'?"), t)
    }
  }

  test("readChangeFeed / readChangeData are refused: change data feed is not supported yet (never the whole table)") {
    tables().foreach { t =>
      Seq("readChangeFeed", "readChangeData").foreach { option =>
        val viaTable = refusal(spark.read.option(option, "true").option("startingVersion", "0").table(t).collect())
        assert(viaTable.getCondition == "STRATA_UNSUPPORTED_OPTION", t)
        assert(viaTable.messageText == s"Option '$option': change data feed is not supported by Strata yet; this read " +
          "would return the table's rows, not its changes. Leave the option out to read the rows (with versionAsOf " +
          "or timestampAsOf for an older version).", t)
        val viaPath = refusal(pathRead.option(option, "true").load(location(t)).collect())
        assert(viaPath.getMessage == viaTable.getMessage, t)
      }
      // Spelled in any case, as Spark matches option names.
      assert(refusal(spark.read.option("READCHANGEFEED", "true").table(t).collect()).messageText
        .startsWith("Option 'readChangeFeed': change data feed is not supported by Strata yet"), t)
    }
  }

  test("accepted options still work on .table(): versionAsOf and timestampAsOf select the version, any case") {
    tables().foreach { t =>
      assert(ids(spark.read.table(t)) == Set(1L, 2L, 3L), t)
      assert(ids(spark.read.option("versionAsOf", "1").table(t)) == Set(1L, 2L), t)
      assert(ids(spark.read.option("VERSIONASOF", "2").table(t)) == Set(1L, 2L, 3L), t)
      assert(ids(spark.read.option("versionAsOf", "1").table(t).where("id > 1")) == Set(2L), t)
      // Commit times set to known instants (local file system: a commit's time is its file's modification time).
      val log = Paths.get(new java.net.URI(location(t)).getPath, "_delta_log")
      (0 to 2).foreach(v => assert(log.resolve(f"$v%020d.json").toFile.setLastModified(1000000L * (v + 1))))
      // 2,500 s after the epoch: after version 1 (2,000 s), before version 2 (3,000 s); the session zone is UTC.
      assert(ids(spark.read.option("timestampAsOf", "1970-01-01 00:41:40").table(t)) == Set(1L, 2L), t)
      assert(ids(spark.read.format("strata").option("timestampAsOf", "1970-01-01 00:41:40").load(location(t))) ==
        Set(1L, 2L), t)
    }
  }

  test("a time travel option Spark did not apply is refused, not ignored; streaming reads keep their own options") {
    tables().foreach { t =>
      spark.conf.set("spark.sql.timeTravelVersionKey", "strataVersion")
      try {
        val notApplied = refusal(spark.read.option("versionAsOf", "1").table(t).collect())
        assert(notApplied.getCondition == "STRATA_OPTION_NOT_APPLIED", t)
        assert(notApplied.messageText.startsWith(s"Option versionAsOf 1 on "), t)
        assert(notApplied.getMessage.contains("was not applied: Spark loaded version 2. Spark applies this option to " +
          "catalog tables under the name 'strataVersion'"), t)
        assert(ids(spark.read.option("strataVersion", "1").table(t)) == Set(1L, 2L), t) // the name Spark applies
      } finally spark.conf.unset("spark.sql.timeTravelVersionKey")
      // A stream of the table takes streaming options (checked by the stream), not the batch read's.
      val rows = mutable.ArrayBuffer.empty[Long]
      val q = spark.readStream.option("maxFilesPerTrigger", "1").table(t).writeStream
        .option("checkpointLocation", tempDir("readopts-cp").toString).trigger(Trigger.AvailableNow())
        .foreachBatch { (b: DataFrame, _: Long) => rows ++= ids(b); () }.start()
      q.awaitTermination()
      assert(rows.toSet == Set(1L, 2L, 3L), t)
    }
  }
}
