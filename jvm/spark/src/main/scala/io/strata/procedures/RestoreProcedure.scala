package io.strata.procedures

import java.time.{Instant, ZoneId}
import java.time.format.DateTimeFormatter

import io.strata.log.{InvalidTableOperationException, Operation, TableRestore}
import io.strata.procedures.StrataProcedure.{optional, required}
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.strata.SparkInternals
import org.apache.spark.sql.types._

/**
 * `restore(table, version | timestamp)`: commits a new version whose live files (and metadata, when it differs) are
 * those of the given older version, as delta-spark's RESTORE does ([[TableRestore]]). A timestamp is read in the
 * session time zone (a string is cast by Spark, as for `TIMESTAMP AS OF`) and picks the last version committed at or
 * before it. Refused, with nothing committed, when a file the old version needs is gone. Restoring to the current
 * version, or to one with the same files and metadata, commits nothing (delta-spark refuses the former).
 */
object RestoreProcedure extends StrataProcedure {
  override def name(): String = "restore"
  override def description(): String =
    "Makes the table what it was at an older version (or timestamp) in a new commit; returns what changed."

  val outputType: StructType = StructType(Seq(
    StructField("version", LongType, nullable = false),
    StructField("restored_version", LongType, nullable = false),
    StructField("files_removed", LongType, nullable = false),
    StructField("files_added", LongType, nullable = false),
    StructField("bytes_removed", LongType, nullable = false),
    StructField("bytes_added", LongType, nullable = false)))

  protected val params = Seq(
    required("table", StringType, "table name or path"),
    optional("version", LongType, "the version to restore (or give timestamp)"),
    optional("timestamp", TimestampType, "restore the last version committed at or before this time (session time " +
      "zone); or give version"))

  protected def run(spark: SparkSession, args: ProcedureArgs): Seq[Row] = {
    val table = ProcedureTable.resolve(spark, args.requiredString("table"))
    val log = table.log
    // A TIMESTAMP argument arrives as microseconds since the epoch (strings are cast in the session time zone).
    val (version, micros) = (args.long("version"), args.long("timestamp"))
    if (version.isDefined == micros.isDefined) throw InvalidTableOperationException(
      "STRATA_CONFLICTING_OPTIONS", s"CALL $name: " +
      (if (version.isDefined) "arguments version and timestamp are both given" else "neither version nor timestamp " +
        "is given") + "; expected exactly one, e.g. version => 3 or timestamp => '2026-01-31 12:00:00'.")
    version.filter(_ < 0).foreach(v => throw args.invalid("version", s"is $v", "a version number >= 0"))
    val target = version.map(log.snapshotAt).getOrElse(log.snapshotAsOf(Math.floorDiv(micros.get, 1000L)))

    val txn = log.startTransaction()
    val current = txn.readSnapshot.get
    if (target.version > current.version) throw InvalidTableOperationException(
      "STRATA_TIME_TRAVEL_OUT_OF_RANGE",
      s"Cannot restore ${table.name} to version ${target.version}: the table's latest version is ${current.version}.")
    val plan = TableRestore.plan(current, target)
    if (target.version == current.version || plan.isEmpty) return Seq(Row(current.version, target.version, 0L, 0L, 0L, 0L))

    val missing = TableRestore.missingFiles(log, plan.restored)
    if (missing.nonEmpty) throw InvalidTableOperationException("STRATA_VERSION_NOT_AVAILABLE",
      s"Cannot restore ${table.name} to version ${target.version}: ${missing.size} file(s) that version needs are " +
        s"gone (deleted by VACUUM or by hand), e.g. ${missing.take(5).mkString(", ")}" +
        (if (missing.size > 5) ", ..." else "") + ". Nothing was committed; restore a version whose files are all " +
        "still there.")

    val param = version.map(v => "version" -> v.toString)
      .getOrElse("timestamp" -> text(micros.get, SparkInternals.sessionTimeZone(spark)))
    val result = txn.commit(plan.operation, Nil, Operation("RESTORE", Map(param), plan.metrics))
    val m = plan.metrics
    Seq(Row(result.version, target.version, m("numRemovedFiles"), m("numRestoredFiles"), m("removedFilesSize"),
      m("restoredFilesSize")))
  }

  private val wallClock = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss")

  /** `yyyy-MM-dd HH:mm:ss[.f...]` in the session time zone: the timestamp as the user's session shows it. */
  private def text(micros: Long, zone: String): String = {
    val t = Instant.ofEpochSecond(Math.floorDiv(micros, 1000000L), Math.floorMod(micros, 1000000L) * 1000L)
      .atZone(ZoneId.of(zone))
    val fraction = Math.floorMod(micros, 1000000L)
    wallClock.format(t) + (if (fraction == 0) "" else "." + f"$fraction%06d".reverse.dropWhile(_ == '0').reverse)
  }
}
