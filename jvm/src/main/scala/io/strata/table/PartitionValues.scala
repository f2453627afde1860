package io.strata.table

import java.time.{Instant, LocalDateTime, ZoneId, ZoneOffset}
import java.time.format.DateTimeFormatter

import org.apache.spark.sql.types._

/**
 * Partition values as the log stores them (PROTOCOL.md, "Partition Value Serialization"): strings, None for null.
 * Spark hands writers the value rendered as in a Hive directory name; this turns that into the log's form.
 */
object PartitionValues {
  /** Spark's directory name for a null (or empty string) partition value. */
  val HiveDefaultPartition = "__HIVE_DEFAULT_PARTITION__"

  private val isoUtc = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'").withZone(ZoneOffset.UTC)
  private val sparkLocal = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss[.SSSSSS][.SSSSS][.SSSS][.SSS][.SS][.S]")

  /**
   * The log value for a partition value Spark rendered as `raw` (unescaped directory value) in time zone `tz`.
   * Timestamps become ISO-8601 in UTC so that every reader agrees on the instant; the rest keep Spark's rendering,
   * which is already the protocol's (dates `yyyy-MM-dd`, decimals plain, booleans `true`/`false`).
   */
  def fromDirectoryValue(raw: String, dataType: DataType, tz: ZoneId): Option[String] =
    if (raw == null || raw.isEmpty || raw == HiveDefaultPartition) None
    else dataType match {
      case TimestampType => Some(isoUtc.format(LocalDateTime.parse(raw, sparkLocal).atZone(tz).toInstant))
      case _ => Some(raw)
    }

  /**
   * A log value in a form Spark's string-to-type cast reads back exactly. Zone-less timestamps are read as UTC, as
   * delta-rs reads them; ISO-8601 values carry their zone.
   */
  def toCastableString(value: String, dataType: DataType): String = dataType match {
    case TimestampType if !value.contains('T') && !value.endsWith("Z") =>
      isoUtc.format(LocalDateTime.parse(value, sparkLocal).atZone(ZoneOffset.UTC).toInstant)
    case _ => value
  }

  /** ISO-8601 UTC form of an instant, as used for timestamp partition values. */
  def formatTimestamp(instant: Instant): String = isoUtc.format(instant)
}
