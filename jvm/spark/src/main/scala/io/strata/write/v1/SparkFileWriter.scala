package io.strata.write.v1

import io.strata.table.PhysicalSchema
import io.strata.write.StrataParquetFormat
import org.apache.spark.internal.io.FileCommitProtocol
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.util.DateTimeUtils
import org.apache.spark.sql.execution.datasources.FileFormatWriter
import org.apache.spark.sql.strata.SparkInternals
import org.apache.spark.sql.types.StructType

/** Spark's file writer (FileFormatWriter) with Strata's Parquet format and a Strata commit protocol. */
object SparkFileWriter {
  /**
   * Runs Spark's file writer over `data`: our Parquet format, our commit protocol, Hive-style partition directories
   * under `outputPath`. Spark's writer chooses single, dynamic-partition or concurrent output writers and honours
   * maxRecordsPerFile; the commit protocol collects the files. Spark renders partition directory values in the
   * write's `timeZone` option, else the session zone; Strata sets UTC, so that a directory value names one instant
   * (01:30 in New York on a DST fall-back day names two) and the commit protocol reads it back exactly.
   */
  def write(
      data: DataFrame,
      outputPath: String,
      partitionColumns: Seq[String],
      committer: FileCommitProtocol,
      options: Map[String, String],
      tableSchema: StructType): Unit = {
    val spark = data.sparkSession
    val plan = physical(data, tableSchema).queryExecution.executedPlan
    val partAttrs = PhysicalSchema.physicalColumns(tableSchema, partitionColumns).map(c => plan.output.find(_.name == c).getOrElse(
      throw new IllegalArgumentException(s"Partition column $c is not among ${plan.output.map(_.name).mkString(", ")}")))
    FileFormatWriter.write(
      sparkSession = SparkInternals.classic(spark),
      plan = plan,
      fileFormat = new StrataParquetFormat,
      committer = committer,
      outputSpec = FileFormatWriter.OutputSpec(outputPath, Map.empty, plan.output),
      hadoopConf = SparkInternals.hadoopConf(spark, options),
      partitionColumns = partAttrs,
      bucketSpec = None,
      statsTrackers = Nil,
      options = options + (DateTimeUtils.TIMEZONE_OPTION -> "UTC"))
  }

  /**
   * `data` (columns of `tableSchema`, by name) as the files of a table with column mapping hold it: physical names,
   * field ids (top-level in the attribute's metadata, nested in the struct types a positional cast renames to).
   */
  private def physical(data: DataFrame, tableSchema: StructType): DataFrame =
    if (PhysicalSchema.of(tableSchema).isEmpty) data else {
      val target = PhysicalSchema(PhysicalSchema.withFieldIds(tableSchema), byId = true).physical(data.schema)
      data.select(data.columns.toSeq.zip(target.fields).map { case (c, f) =>
        data.col("`" + c.replace("`", "``") + "`").cast(f.dataType).as(f.name, f.metadata)
      }: _*)
    }
}
