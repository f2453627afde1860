package io.strata.read

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.connector.expressions.filter.Predicate
import io.strata.config.ReadConf
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation
import org.apache.spark.sql.connector.read.{Scan, ScanBuilder, SupportsPushDownAggregates,
  SupportsPushDownRequiredColumns}
import org.apache.spark.sql.execution.datasources.PartitioningAwareFileIndex
import org.apache.spark.sql.internal.connector.SupportsPushDownCatalystFilters
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/**
 * Spark's Parquet scan builder over a log file index, with the file column when a query asks for it. Filters and the
 * required columns go to a builder over the plain index (so that the plan reports them); only when the required
 * columns include [[FileColumn]] does [[build]] replay them on a builder whose index carries the column.
 * `checkBatchOptions` runs before a batch scan is built: only then is it known that `options` are a batch read's
 * (a streaming read's are checked by its own scan).
 */
final class StrataScanBuilder(spark: SparkSession, index: Boolean => PartitioningAwareFileIndex, schema: StructType,
                              dataSchema: StructType, options: CaseInsensitiveStringMap,
                              streamScan: Option[(() => Scan) => Scan] = None,
                              checkBatchOptions: () => Unit = () => ())
    extends ScanBuilder with SupportsPushDownCatalystFilters with SupportsPushDownRequiredColumns
    with SupportsPushDownAggregates {
  private val plainIndex = index(false)
  private val plain = ParquetScans.builder(spark, plainIndex, schema, dataSchema, options)
  private var filters: Seq[Expression] = Nil
  private var required: StructType = schema

  override def pushFilters(fs: Seq[Expression]): Seq[Expression] = { filters = fs; plain.pushFilters(fs) }
  override def pushedFilters: Array[Predicate] = plain.pushedFilters
  override def pruneColumns(s: StructType): Unit = { required = s; pruned = true }
  /** Spark's batch planning always prunes columns; a streaming read builds its scan without (see [[build]]). */
  private var pruned = false

  /** The conditions Spark pushed (what a row-level operation's scan selects, for its read set). */
  def pushedConditions: Seq[Expression] = filters

  /**
   * The batch scan; or, when Spark builds without pruning columns or pushing filters (what it does for a streaming
   * read, once, at query start) and the table streams, `streamScan` of it.
   */
  // Aggregates answered from the log (LogAggregateScan); Spark pushes them only when every filter was pushed.
  private var aggregated: Option[LogAggregateScan] = None
  private var asked: Option[(Aggregation, Option[LogAggregateScan])] = None // Spark asks up to 4 times
  private def logAggregate(a: Aggregation): Option[LogAggregateScan] = asked.collect { case (b, s) if b eq a => s }
    .getOrElse {
      val scan = plainIndex match {
        case index: LogFileIndex if ReadConf.aggregatePushdown(spark) => LogAggregateScan.pushed(index, filters, a)
        case _ => None
      }
      asked = Some(a -> scan)
      scan
    }
  override def supportCompletePushDown(a: Aggregation): Boolean = logAggregate(a).isDefined
  override def pushAggregation(a: Aggregation): Boolean = { aggregated = logAggregate(a); aggregated.isDefined }

  override def build(): Scan = aggregated match {
    case Some(scan) => checkBatchOptions(); scan
    case None => buildScan()
  }

  private def buildScan(): Scan = streamScan match {
    case Some(stream) if !pruned && filters.isEmpty => stream(() => batchScan())
    case _ => batchScan()
  }

  private def batchScan(): Scan = {
    checkBatchOptions()
    val withFile = FileColumn.requested(required)
    val idx = if (withFile) index(true) else plainIndex
    val b = if (!withFile && !RowIndexColumn.requested(required)) plain else {
      val fresh = ParquetScans.builder(spark, idx, schema, dataSchema, options, RowIndexColumn.requested(required))
      fresh.pushFilters(filters)
      fresh
    }
    withLogStatistics(ParquetScans.build(b, idx, required))
  }

  /** The scan reporting the size and rows of the files it selected, from the log ([[LogStatisticsScan]]). */
  private def withLogStatistics(scan: Scan): Scan =
    ParquetScans.scannedIndex(scan).fold(scan)(new LogStatisticsScan(scan, _))
}
