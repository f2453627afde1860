package io.strata.read

import java.util.OptionalLong

import com.fasterxml.jackson.core.JsonToken
import io.strata.log.ActionCodec
import org.apache.spark.sql.connector.metric.{CustomMetric, CustomTaskMetric}
import org.apache.spark.sql.connector.read.{Batch, Scan, Statistics, SupportsReportStatistics}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.internal.connector.SupportsMetadata
import org.apache.spark.sql.types.StructType

import scala.util.Try

/**
 * A batch scan of a snapshot's files that reports its statistics from the log: the size of the files it selected
 * (`files`: the index Spark's scan lists, already pruned by the scan's filters) and, when every one of them has
 * `numRecords` in its statistics, their rows less those their deletion vectors delete (no row count otherwise).
 * Everything else is `inner`'s. Spark sizes joins (broadcast or not) and cost-based plans by these numbers.
 */
final class LogStatisticsScan(val inner: Scan, files: LogFileIndex) extends Scan with SupportsReportStatistics
    with SupportsMetadata {
  override def readSchema(): StructType = inner.readSchema()
  override def description(): String = inner.description()
  override def toBatch: Batch = inner.toBatch
  override def columnarSupportMode(): Scan.ColumnarSupportMode = inner.columnarSupportMode()
  override def supportedCustomMetrics(): Array[CustomMetric] = inner.supportedCustomMetrics()
  override def reportDriverMetrics(): Array[CustomTaskMetric] = inner.reportDriverMetrics()
  override def getMetaData(): Map[String, String] = inner match {
    case m: SupportsMetadata => m.getMetaData()
    case other => Map("Scan" -> other.description())
  }

  override def estimateStatistics(): Statistics = {
    // Spark's file sources scale file sizes by this factor (1.0 unless set) to estimate the data's size in memory.
    val bytes = (SQLConf.get.fileCompressionFactor * files.sizeInBytes).toLong
    val rows = LogStatisticsScan.rows(files)
    new Statistics {
      override def sizeInBytes(): OptionalLong = OptionalLong.of(bytes)
      override def numRows(): OptionalLong = rows.fold(OptionalLong.empty())(OptionalLong.of)
    }
  }

  override def equals(other: Any): Boolean = other match {
    case s: LogStatisticsScan => s.inner == inner
    case _ => false
  }
  override def hashCode(): Int = inner.hashCode()
}

object LogStatisticsScan {
  /** The rows a reader sees in the index's files, when every file's statistics give `numRecords`. */
  def rows(index: LogFileIndex): Option[Long] = {
    var total = 0L
    val it = index.files
    while (it.hasNext) {
      val f = it.next()
      numRecords(f.stats) match {
        case Some(n) => total += n - f.deletionVector.fold(0L)(_.cardinality)
        case None => return None
      }
    }
    Some(total)
  }

  /** `numRecords` of a statistics JSON object (read as a stream: the rest of the object is skipped, not built). */
  def numRecords(stats: Option[String]): Option[Long] = stats.flatMap { json =>
    Try {
      val p = ActionCodec.mapper.getFactory.createParser(json)
      try {
        var found: Option[Long] = None
        if (p.nextToken() == JsonToken.START_OBJECT) {
          while (found.isEmpty && p.nextToken() == JsonToken.FIELD_NAME) {
            val name = p.currentName()
            val token = p.nextToken()
            if (name == "numRecords") found = Some(if (token == JsonToken.VALUE_NUMBER_INT) p.getLongValue else -1L)
            else p.skipChildren()
          }
        }
        found.filter(_ >= 0)
      } finally p.close()
    }.toOption.flatten
  }
}
