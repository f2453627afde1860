package io.strata.maintenance

import io.strata.log._
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.strata.SparkInternals

/**
 * VACUUM: deletes the files below a table's root that no version within the retention reads, as delta-spark's
 * VacuumCommand decides (its rules, our code): the current version's files and deletion vectors stay; so do those
 * of tombstones newer than now - retention; files of older tombstones go once their own modification time is older
 * than that too; files no log entry names (a failed job's output, orphan deletion vectors, change data files) and
 * empty directories go only when older than both the retention and [[Vacuum.Settings.orphanMinAgeMs]], so a write
 * that has written its files but not committed yet keeps them even with a zero retention.
 *
 * Only files found by listing below the root are ever deleted, and each is checked to lie strictly below it right
 * before its delete: paths in the log can keep files, never choose one to delete, so a log naming `../x`, an
 * absolute path elsewhere or another scheme cannot make VACUUM touch anything outside the table.
 */
object Vacuum {
  final case class Settings(
      retentionMs: Option[Long],
      dryRun: Boolean,
      retentionCheck: Boolean = true,
      orphanMinAgeMs: Long = Vacuum.DefaultOrphanMinAgeMs,
      logCommits: Boolean = true)

  val DefaultOrphanMinAgeMs: Long = 3600L * 1000

  /** What one run found: the targets (deleted, or to delete on a dry run) and what the listing saw. */
  final case class Outcome(targets: Seq[VacuumTarget], listedEntries: Long, listedDirectories: Long)

  def run(spark: SparkSession, log: TableLog, name: String, settings: Settings): Outcome = {
    val snapshot = log.snapshot()
    // vacuumProtocolCheck (PROTOCOL.md): check the write protocol before a vacuum, whatever the table's features.
    ProtocolSupport.checkWritable(snapshot.protocol, snapshot.metadata, name)
    val tableRetentionMs = TableLog.tombstoneRetentionMillis(snapshot.metadata.configuration)
    val retentionMs = settings.retentionMs.getOrElse(tableRetentionMs)
    if (settings.retentionCheck && retentionMs < tableRetentionMs) throw InvalidTableOperationException(
      "STRATA_VACUUM_RETENTION_TOO_SHORT",
      s"Refusing to vacuum $name with a retention of ${hours(retentionMs)} hours: the table keeps removed files for " +
        s"${hours(tableRetentionMs)} hours (delta.deletedFileRetentionDuration), and a shorter retention can delete " +
        "files that readers of older versions or writes still in progress need. Use retention_hours >= " +
        s"${hours(tableRetentionMs)}, or set ${VacuumConf.RetentionCheck}=false if no reader or writer needs them.")

    val now = System.currentTimeMillis()
    val cutoff = now - retentionMs
    val orphanCutoff = math.min(cutoff, now - settings.orphanMinAgeMs)
    val root = snapshot.tablePath
    val tombstones = snapshot.tombstones ++
      (if (retentionMs > tableRetentionMs) checkpointedTombstones(log, snapshot, cutoff) else Nil)
    val hidden = HiddenNames(snapshot.metadata.partitionColumns, icebergMetadata(snapshot.metadata))
    val guard = InsideRoot(root, hidden)
    val selector = VacuumSelector(VacuumRules.retainedKeys(root, snapshot.files, tombstones, cutoff),
      VacuumRules.expiredKeys(root, tombstones, cutoff), cutoff, orphanCutoff, guard)
    val conf = SparkInternals.hadoopConf(spark, Map.empty)
    val (found, stats) = ParallelFiles.list(spark, root, conf, hidden, selector, s"Strata VACUUM $name: listing files")

    // A version committed since the listing started may name a file again (a RESTORE): keep what it reads too. So
    // does a log replaced under the table since (the same version number, another commit file: another history).
    val latest = log.snapshot()
    val unchanged = latest.version == snapshot.version &&
      FileStamp.same(latest.segment.commitStamp, snapshot.segment.commitStamp)
    val targets = (if (unchanged) found else {
      val again = VacuumRules.retainedKeys(root, latest.files, latest.tombstones, cutoff)
      found.filterNot(t => again.contains(VacuumRules.key(new org.apache.hadoop.fs.Path(t.path))))
    }).sortBy(_.path)
    if (settings.dryRun) return Outcome(targets, stats.entries, stats.directories)

    val log2 = settings.logCommits
    if (log2) commit(log, Operation("VACUUM START", Map(
      "retentionCheckEnabled" -> settings.retentionCheck.toString,
      "defaultRetentionMillis" -> tableRetentionMs.toString) ++
      settings.retentionMs.map(r => "specifiedRetentionMillis" -> r.toString),
      Map("numFilesToDelete" -> targets.size.toLong, "sizeOfDataToDelete" -> targets.map(_.size).sum)))
    val outcomes = try {
      // Directories were listed empty (never deleted recursively: one a writer has used since stays).
      ParallelFiles.delete(spark, root, conf, targets.map(_.path), guard, s"Strata VACUUM $name: deleting files")
    } catch {
      case e: Throwable =>
        if (log2) commit(log, Operation("VACUUM END", Map("status" -> "FAILED")))
        throw e
    }
    val byPath = outcomes.toMap
    val (gone, notGone) = targets.partition(t =>
      byPath.get(t.path).exists(o => o == ParallelFiles.Deleted || o == ParallelFiles.Missing))
    val failed = notGone.filter(_.kind != "directory")
    if (log2) commit(log, Operation("VACUUM END", Map("status" -> (if (failed.isEmpty) "COMPLETED" else "FAILED")),
      Map("numDeletedFiles" -> gone.size.toLong, "numVacuumedDirectories" -> stats.directories)))
    if (failed.nonEmpty) throw StrataException("STRATA_VACUUM_INCOMPLETE",
      s"VACUUM of $name deleted ${gone.size} of ${targets.size} files " +
      s"and directories; ${failed.size} could not be deleted, e.g. " + failed.take(5).map(t => s"${t.path} (" +
      (byPath.get(t.path) match {
        case Some(ParallelFiles.Failed(why)) => why
        case Some(ParallelFiles.Refused) => "outside the table root"
        case other => other.toString
      }) + ")").mkString(", ") + ". Run it again to retry.")
    Outcome(gone, stats.entries, stats.directories)
  }

  private def commit(log: TableLog, op: Operation): Unit = log.startTransaction().commit(Nil, op)

  private def hours(ms: Long): String = {
    val h = ms / 3600000.0
    if (h == math.rint(h)) h.toLong.toString else f"$h%.3f".reverse.dropWhile(_ == '0').reverse
  }

  private def icebergMetadata(m: Metadata): Boolean =
    m.configuration.get("delta.universalFormat.enabledFormats").exists(_.toLowerCase.contains("iceberg"))

  /**
   * Tombstones a checkpoint no longer carries although they are within the retention. A checkpoint drops the
   * tombstones older than the table's retention at the time it is written; a vacuum asked to keep more than that
   * reads them back from the commits the checkpoint covers that were made within the retention (while the log
   * still has them).
   */
  private def checkpointedTombstones(log: TableLog, snapshot: Snapshot, cutoff: Long): Seq[RemoveFile] =
    snapshot.segment.checkpointVersion.toSeq.flatMap { cp =>
      log.commitTimestamps().collect { case (v, ts) if v <= cp && ts >= cutoff => v }.flatMap { v =>
        try log.readCommit(v) catch { case _: MissingLogFileException => Nil } // cleaned up since: nothing to add
      }.collect { case r: RemoveFile if r.deletionTimestamp.getOrElse(0L) >= cutoff => r }
    }
}

/** The session confs of VACUUM. */
object VacuumConf {
  /** `false` allows a retention below the table's delta.deletedFileRetentionDuration (default true). */
  val RetentionCheck = "spark.strata.vacuum.retentionCheck.enabled"
  /** Files no log entry names are deleted only when older than this many hours, whatever the retention (default 1). */
  val OrphanMinAgeHours = "spark.strata.vacuum.orphanMinAgeHours"
  /** `false`: no VACUUM START / VACUUM END commits (default true, as delta-spark on file systems it trusts). */
  val Logging = "spark.strata.vacuum.logging.enabled"
  /** delta-spark's confs for the same two switches, read when Strata's are not set (a session moved over as it is). */
  val DeltaConfs: Map[String, String] = Map(RetentionCheck -> "spark.databricks.delta.retentionDurationCheck.enabled",
    Logging -> "spark.databricks.delta.vacuum.logging.enabled")

  def settings(session: String => Option[String], retentionMs: Option[Long], dryRun: Boolean): Vacuum.Settings = {
    def bool(strata: String): Boolean = {
      val (key, value) = (Seq(strata) ++ DeltaConfs.get(strata)).iterator.map(k => k -> session(k))
        .collectFirst { case (k, Some(v)) => k -> v }.getOrElse(strata -> "true")
      value.trim.toLowerCase match {
        case "true" => true
        case "false" => false
        case v => throw InvalidTableOperationException("STRATA_INVALID_CONF_VALUE",
          Map("setting" -> s"Session conf $key", "value" -> v, "allowed" -> "true or false"))
      }
    }
    val orphanMs = session(OrphanMinAgeHours).map { v =>
      v.trim.toDoubleOption.filter(h => h >= 0 && !h.isInfinite).map(h => math.round(h * 3600000)).getOrElse(
        throw InvalidTableOperationException("STRATA_INVALID_CONF_VALUE",
          Map("setting" -> s"Session conf $OrphanMinAgeHours", "value" -> v, "allowed" -> "a number of hours >= 0")))
    }.getOrElse(Vacuum.DefaultOrphanMinAgeMs)
    Vacuum.Settings(retentionMs, dryRun, bool(RetentionCheck), orphanMs, bool(Logging))
  }
}
