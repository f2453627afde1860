package io.strata.procedures

import io.strata.optimize.{OptimizeRequest, OptimizeResult, Optimizer}
import io.strata.procedures.StrataProcedure.{optional, required}
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.types._

/**
 * `optimize(table, where, zorder_by, target_file_size, min_input_files, full)`: compacts small files (bin-packing) or
 * clusters the rows of the selected partitions by Z-order, in `dataChange=false` commits ([[Optimizer]]); a
 * clustered table is clustered incrementally, `full => true` being delta-spark's `OPTIMIZE t FULL`.
 */
object OptimizeProcedure extends StrataProcedure {
  override def name(): String = "optimize"
  override def description(): String = "Rewrites small files into files of about target_file_size bytes (or, with " +
    "zorder_by, clusters the rows of the selected partitions by the Z-order of those columns), without changing rows."

  val outputType: StructType = StructType(Seq(
    StructField("files_removed", LongType, nullable = false),
    StructField("files_added", LongType, nullable = false),
    StructField("bytes_removed", LongType, nullable = false),
    StructField("bytes_added", LongType, nullable = false),
    StructField("partitions_optimized", LongType, nullable = false),
    StructField("groups_committed", IntegerType, nullable = false),
    StructField("groups_conflicted", IntegerType, nullable = false),
    StructField("versions", ArrayType(LongType, containsNull = false), nullable = false)))

  protected val params = Seq(
    required("table", StringType, "table name or path"),
    optional("where", StringType, "SQL predicate over partition columns choosing the partitions (default: all)"),
    optional("zorder_by", ArrayType(StringType), "data columns to cluster the rows by (Z-order)"),
    optional("target_file_size", LongType, "bytes per output file (default: delta.targetFileSize, else 128 MiB)"),
    optional("min_input_files", IntegerType, "bin-packing rewrites groups of at least this many files (default 2)"),
    optional("full", BooleanType, "a clustered table: also recluster the files clustered by other columns " +
      "(OPTIMIZE FULL; default false)"))

  protected def run(spark: SparkSession, args: ProcedureArgs): Seq[Row] = {
    val target = args.long("target_file_size")
    target.filter(_ <= 0).foreach(t => throw args.invalid("target_file_size", s"is $t",
      "a number of bytes > 0 (e.g. 134217728 for 128 MiB), or NULL for the table's delta.targetFileSize"))
    val minFiles = args.int("min_input_files").getOrElse(2)
    if (minFiles < 1) throw args.invalid("min_input_files", s"is $minFiles", "a number >= 1 (default 2)")
    val zOrder = args.strings("zorder_by").getOrElse(Nil)
    zOrder.find(_.trim.isEmpty).foreach(_ => throw args.invalid("zorder_by", "holds an empty name", "column names"))
    val table = ProcedureTable.resolve(spark, args.requiredString("table"))
    Seq(row(Optimizer.run(spark, table.log, OptimizeRequest(args.string("where"), zOrder, target, minFiles,
      full = args.boolean("full").getOrElse(false)))))
  }

  def row(r: OptimizeResult): Row = Row(r.filesRemoved, r.filesAdded, r.bytesRemoved, r.bytesAdded,
    r.partitionsOptimized, r.groupsCommitted, r.groupsConflicted, r.versions)
}
