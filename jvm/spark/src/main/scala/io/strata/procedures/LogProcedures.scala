package io.strata.procedures

import io.strata.config.LogCleanupConf
import io.strata.log.{LogCleanup, ProtocolSupport}
import io.strata.procedures.StrataProcedure.{optional, required}
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.types._

/** `checkpoint(table)`: writes a checkpoint of the latest version now (and points `_last_checkpoint` at it). */
object CheckpointProcedure extends StrataProcedure {
  override def name(): String = "checkpoint"
  override def description(): String = "Writes a checkpoint of the table's latest version."

  val outputType: StructType = StructType(Seq(
    StructField("version", LongType, nullable = false),
    StructField("checkpoint_file", StringType, nullable = false)))

  protected val params = Seq(required("table", StringType, "table name or path"))

  protected def run(spark: SparkSession, args: ProcedureArgs): Seq[Row] = {
    val table = ProcedureTable.resolve(spark, args.requiredString("table"))
    val snapshot = table.log.snapshot()
    // A checkpoint must carry every action the table's features need; Strata's carries those of the features it writes.
    ProtocolSupport.checkWritable(snapshot.protocol, snapshot.metadata, table.name)
    Seq(Row(snapshot.version, table.log.checkpoint(snapshot).toString))
  }
}

/**
 * `cleanup_log(table, retention_hours)`: deletes the commits and checkpoints that only versions older than the
 * retention need ([[LogCleanup]]), keeping every version committed within it rebuildable. The retention is the
 * table's `delta.logRetentionDuration` (30 days by default); a shorter `retention_hours` is refused unless
 * `spark.strata.logCleanup.retentionCheck.enabled=false`.
 */
object CleanupLogProcedure extends StrataProcedure {
  override def name(): String = "cleanup_log"
  override def description(): String =
    "Deletes log files older than the log retention that no retained version needs."

  val outputType: StructType = StructType(Seq(
    StructField("commits_deleted", LongType, nullable = false),
    StructField("checkpoints_deleted", LongType, nullable = false),
    StructField("oldest_version", LongType, nullable = false)))

  protected val params = Seq(
    required("table", StringType, "table name or path"),
    optional("retention_hours", DoubleType, "keep the versions committed within this many hours (default: the " +
      "table's delta.logRetentionDuration, 30 days)"))

  private val HourMillis = 3600L * 1000

  protected def run(spark: SparkSession, args: ProcedureArgs): Seq[Row] = {
    val table = ProcedureTable.resolve(spark, args.requiredString("table"))
    val tableRetention = LogCleanup.retentionMillis(table.log.snapshot().metadata)
    val retention = args.hoursAsMillis("retention_hours", "a number of hours >= 0").getOrElse(tableRetention)
    if (retention < tableRetention && LogCleanupConf.retentionCheck(spark)) {
      throw args.invalid("retention_hours", s"is ${args.double("retention_hours").get}, shorter than the table's " +
        s"${LogCleanup.RetentionKey} (${tableRetention.toDouble / HourMillis} hours): time travel, restore and " +
        "readers that started earlier could lose versions they need",
        s"at least ${tableRetention.toDouble / HourMillis}, or set ${LogCleanupConf.RetentionCheckKey}=false in the " +
          s"session to allow it, or lower the table's ${LogCleanup.RetentionKey}")
    }
    val result = LogCleanup.run(table.log, retention, System.currentTimeMillis())
    Seq(Row(result.commitsDeleted, result.checkpointsDeleted, result.oldestVersion))
  }
}
