package io.strata.state

import java.time.ZoneId

import io.strata.log.{RecentlyUsed, SnapshotHead, TableLog, VacuumedFiles}
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.functions.{col, lit, min}

/**
 * Time travel to a version without its file state on the driver (a table above the distributed-state threshold):
 * the check the driver's time travel makes ([[VacuumedFiles]]), with the files compared by Spark jobs. The files the
 * old version reads and the latest does not (neither its live entries nor files its live entries read), oldest
 * tombstone first (none: older than every tombstone), a few of them checked to exist: a vacuumed version is refused
 * with the driver's typed error before any scan.
 */
object DistributedVacuumCheck {
  /** Throws [[VacuumedFiles]]'s error when the files of `old` most likely vacuumed are gone. */
  def check(spark: SparkSession, log: TableLog, old: SnapshotHead, latest: SnapshotHead, conf: Configuration,
            zone: ZoneId): Unit = {
    // A pair of versions found readable is not checked again while the table's latest version is the same (VACUUM
    // commits, as Strata's and delta-spark's do, make a new latest version): repeated reads of one old version
    // cost no jobs. A file deleted outside any commit then fails the scan, naming it. Both versions' commit stamps
    // are in the key: a log replaced under the path is another pair, checked again.
    val key = Seq(log.tablePath, latest.metadata.id, spark.sparkContext.applicationId, old.version,
      old.segment.commitStamp.map(_.key), latest.version, latest.segment.commitStamp.map(_.key)).mkString("|")
    if (old.version != latest.version && !Passed.contains(key)) {
      failIfVacuumed(spark, log, old, latest, conf, zone)
      Passed.put(key, true)
    }
  }

  /** Pairs of versions found readable, the most recent few. */
  private val Passed = new RecentlyUsed[String, Boolean](max = 64)

  private def failIfVacuumed(spark: SparkSession, log: TableLog, old: SnapshotHead, latest: SnapshotHead,
                             conf: Configuration, zone: ZoneId): Unit = {
    val before = new DistributedFileState(spark, old, conf, zone)
    val now = new DistributedFileState(spark, latest, conf, zone)
    val candidates = before.run("files VACUUM may have deleted of") {
      val current = now.fileRefs
      val gone = before.fileRefs.join(current.select(col("key")).distinct(), Seq("key"), "left_anti")
        .join(current.select(col("file")).distinct(), Seq("file"), "left_anti")
      val timed = now.removedAt.fold(gone.withColumn("removedAt", lit(null).cast("long")))(r =>
        gone.join(r, Seq("key"), "left_outer"))
      timed.groupBy(col("file")).agg(min(col("removedAt")).as("removedAt"))
        .orderBy(col("removedAt").asc_nulls_first, col("file")).limit(VacuumedFiles.Checked).collect().toSeq
    }.map(r => (r.getString(0), if (r.isNullAt(1)) None else Some(r.getLong(1))))
      .sortBy(_._2.getOrElse(Long.MinValue))
    VacuumedFiles.failIfMissing(log, old.version, candidates, latest.version, latest.metadata)
  }
}
