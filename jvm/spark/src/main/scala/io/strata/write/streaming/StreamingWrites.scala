package io.strata.write.streaming

import java.util.Locale

import io.strata.log.{CommitResult, InvalidTableOperationException}
import io.strata.write.WriteMode
import org.apache.spark.sql.streaming.OutputMode

import scala.jdk.CollectionConverters._

/**
 * What the streaming sink (path and catalog tables alike) accepts, checked when the query starts (its write options:
 * [[io.strata.config.WriteConf]], entries PathStream / CatalogStream).
 */
object StreamingWrites {
  /** The table-level meaning of an output mode; update mode is refused with the modes that work. */
  def writeMode(mode: OutputMode, table: String): WriteMode =
    if (mode == OutputMode.Append()) WriteMode.Append
    else if (mode == OutputMode.Complete()) WriteMode.Overwrite
    else throw InvalidTableOperationException("STRATA_UNSUPPORTED_STREAMING_MODE",
      s"Strata's streaming sink (table $table) supports the output " +
      s"modes 'append' (each micro-batch's rows are added) and 'complete' (each micro-batch replaces all rows of the " +
      s"table), not '${mode.toString.toLowerCase(Locale.ROOT)}'. To update rows by key, write each micro-batch with " +
      "foreachBatch and MERGE INTO, made idempotent by txnAppId/txnVersion.")

  def continuousRefused(table: String): InvalidTableOperationException = InvalidTableOperationException(
    "STRATA_UNSUPPORTED_STREAMING_MODE",
    s"Strata's streaming sink (table $table) runs micro-batches (triggers processingTime, availableNow, once); " +
      "continuous processing is not supported.")

  /** The output mode's name in commitInfo (delta-spark's spelling). */
  def outputModeName(mode: WriteMode): String = if (mode == WriteMode.Overwrite) "Complete" else "Append"
}

/**
 * The sink's numbers for StreamingQueryProgress (`sink.metrics`, through ReportsSinkMetrics): those of the last
 * micro-batch: its id, the table version it committed, files, rows and bytes it added, whether it was skipped
 * because the table already held it (a replay). Also remembers whether this run of the query committed a batch yet:
 * the first one cleans up after an earlier attempt that may have died.
 */
final class SinkProgress {
  @volatile private var last: Map[String, String] = Map.empty
  @volatile private var committedThisRun = false

  /** True until the first micro-batch of this run commits. */
  def firstCommitOfRun: Boolean = !committedThisRun

  /** `result`: None when the batch was skipped before writing (its version was already in the table). */
  def record(batchId: Long, result: Option[CommitResult]): Unit = {
    val skipped = result.forall(_.alreadyCommitted)
    if (!skipped) committedThisRun = true
    val metrics = result.filterNot(_.alreadyCommitted).flatMap(r => Option(r.commitInfo.json.get("operationMetrics")))
    def count(name: String) = metrics.flatMap(m => Option(m.get(name))).map(_.asText).getOrElse("0")
    last = Map("batchId" -> batchId.toString, "skipped" -> skipped.toString,
      "numFiles" -> count("numFiles"), "numOutputRows" -> count("numOutputRows"),
      "numOutputBytes" -> count("numOutputBytes")) ++
      result.filterNot(_.alreadyCommitted).map(r => "tableVersion" -> r.version.toString)
  }

  def metrics: java.util.Map[String, String] = last.asJava
}
