package io.strata.procedures

import io.strata.maintenance.{Vacuum, VacuumConf}
import io.strata.procedures.StrataProcedure.{optional, required}
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.types._

/**
 * `vacuum(table, retention_hours, dry_run)`: deletes the files below the table's root that no version within the
 * retention reads ([[Vacuum]] has the rules). One row per file deleted, or that would be with `dry_run`.
 */
object VacuumProcedure extends StrataProcedure {
  override def name(): String = "vacuum"
  override def description(): String =
    "Deletes files below the table's root that no version within the retention reads (dry_run: lists them)."

  val outputType: StructType = StructType(Seq(
    StructField("path", StringType, nullable = false),
    StructField("size_bytes", LongType, nullable = false),
    StructField("kind", StringType, nullable = false)))

  protected val params = Seq(
    required("table", StringType, "table name or path"),
    optional("retention_hours", DoubleType,
      "keep files that versions of the last this many hours read (default: delta.deletedFileRetentionDuration)"),
    optional("dry_run", BooleanType, "list what would be deleted, delete nothing", default = "false"))

  protected def run(spark: SparkSession, args: ProcedureArgs): Seq[Row] = {
    val retentionMs = args.hoursAsMillis("retention_hours",
      "a number of hours >= 0, or NULL for the table's delta.deletedFileRetentionDuration")
    val dryRun = args.boolean("dry_run").getOrElse(false)
    val table = ProcedureTable.resolve(spark, args.requiredString("table"))
    val settings = VacuumConf.settings(spark.conf.getOption, retentionMs, dryRun)
    Vacuum.run(spark, table.log, table.name, settings).targets.map(t => Row(t.path, t.size, t.kind))
  }
}
