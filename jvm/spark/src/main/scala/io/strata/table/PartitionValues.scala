package io.strata.table

import java.time.{Instant, LocalDate, LocalDateTime, ZoneId, ZoneOffset, ZonedDateTime}
import java.time.format.DateTimeFormatter
import java.util.Locale

import org.apache.spark.sql.types._

/**
 * Partition values as the log stores them (PROTOCOL.md, "Partition Value Serialization"): strings, None for null.
 * Writers produce them from the written values themselves (days since the epoch, microseconds since the epoch in
 * UTC), never from a session-zone rendering, which is ambiguous in a DST fall-back hour:
 *  - date `yyyy-MM-dd`; timestamp ISO-8601 in UTC with microseconds (`1970-01-01T00:00:00.123456Z`);
 *  - timestamp_ntz `yyyy-MM-dd HH:mm:ss[.SSSSSS]`; decimals plain (no exponent); the rest as Spark renders them.
 * Readers accept every form the protocol allows ([[parse]]): another engine may spell the same value differently.
 * A zone-less timestamp (`2024-03-10 01:30:00`, as older delta-spark and delta-spark with
 * `spark.databricks.delta.write.utcTimestampPartitionValues=false` write it) is read as delta-spark reads it: as a
 * local time in the session time zone ([[parseTimestamp]]).
 */
object PartitionValues {
  /** Spark's directory name for a null (or empty string) partition value. */
  val HiveDefaultPartition = "__HIVE_DEFAULT_PARTITION__"

  private val isoUtc = DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSSSSS'Z'", Locale.ROOT)
    .withZone(ZoneOffset.UTC)
  private val localSeconds = DateTimeFormatter.ofPattern("uuuu-MM-dd HH:mm:ss", Locale.ROOT)
  private val localMicros = DateTimeFormatter.ofPattern("uuuu-MM-dd HH:mm:ss.SSSSSS", Locale.ROOT)
  private val date = DateTimeFormatter.ofPattern("uuuu-MM-dd", Locale.ROOT)

  private val DatePattern = """([+-]?\d{4,})-(\d{1,2})-(\d{1,2})"""
  private val TimestampForm =
    (DatePattern + """[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{0,9}))?)?\s*(Z|UTC|[+-]\d{2}(?::?\d{2}(?::?\d{2})?)?)?""").r
  private val DateForm = DatePattern.r

  // ---- writing: internal values to the log's form ----

  /** The log form of a date given as days since 1970-01-01. */
  def formatDate(days: Int): String = date.format(LocalDate.ofEpochDay(days.toLong))

  /** The log form of a timestamp given as microseconds since the epoch (UTC): ISO-8601 in UTC. */
  def formatTimestamp(micros: Long): String = isoUtc.format(instant(micros))

  /** ISO-8601 UTC form of an instant, as used for timestamp partition values. */
  def formatTimestamp(instant: Instant): String = isoUtc.format(instant)

  /** The log form of a timestamp_ntz given as local microseconds since 1970-01-01 00:00:00. */
  def formatTimestampNtz(micros: Long): String = {
    val local = LocalDateTime.ofInstant(instant(micros), ZoneOffset.UTC)
    (if (local.getNano == 0) localSeconds else localMicros).format(local)
  }

  /** The log form of a decimal: plain digits, never an exponent. */
  def formatDecimal(value: java.math.BigDecimal): String = value.toPlainString

  private def instant(micros: Long): Instant =
    Instant.ofEpochSecond(Math.floorDiv(micros, 1000000L), Math.floorMod(micros, 1000000L) * 1000L)

  /**
   * The log value for a partition value Spark rendered as `raw` (unescaped directory value). Writers have Spark
   * render directories in UTC, so a zone-less timestamp here is UTC; it becomes the ISO-8601 UTC form. Other values
   * are normalized to the forms [[formatDate]] etc. produce.
   */
  def fromDirectoryValue(raw: String, dataType: DataType): Option[String] =
    if (raw == null || raw.isEmpty || raw == HiveDefaultPartition) None
    else Some(dataType match {
      case DateType => formatDate(parseDate(raw))
      case TimestampType => formatTimestamp(parseTimestamp(raw, ZoneOffset.UTC))
      case TimestampNTZType => formatTimestampNtz(parseTimestampNtz(raw))
      case _: DecimalType => formatDecimal(new java.math.BigDecimal(raw))
      case _ => raw
    })

  // ---- reading: every form the protocol allows ----

  /** Days since 1970-01-01 of a `yyyy-MM-dd` date. */
  def parseDate(value: String): Int = value.trim match {
    case DateForm(y, m, d) => try LocalDate.of(y.toInt, m.toInt, d.toInt).toEpochDay.toInt catch {
      case e: java.time.DateTimeException => throw invalid(value, DateType, s"yyyy-MM-dd (${e.getMessage})")
    }
    case _ => throw invalid(value, DateType, "yyyy-MM-dd")
  }

  /**
   * Microseconds since the epoch of a timestamp: ISO-8601 with a zone (`1970-01-01T00:00:00.123456Z`, `...+05:30`)
   * is that instant; zone-less `yyyy-MM-dd HH:mm:ss[.SSSSSS]` is a local time in `zone`. Digits past microseconds
   * are dropped.
   *
   * Readers pass the session time zone: delta-spark casts the log's string to a timestamp in the session zone
   * (older delta-spark wrote zone-less values rendered in the writer's session zone), so this is how the value must
   * read for Strata and delta-spark to return the same rows. A local time the zone skips (a DST spring-forward gap)
   * moves forward by the gap, and one it repeats (fall-back) takes the earlier offset, as Spark's cast does.
   * delta-rs reads zone-less values as UTC instead; they only agree in a UTC session.
   */
  def parseTimestamp(value: String, zone: ZoneId): Long = {
    val (local, micros, explicit) = localTimestampOf(value, TimestampType, zoneAllowed = true)
    val seconds = explicit.fold(ZonedDateTime.of(local, zone).toEpochSecond)(local.toEpochSecond)
    Math.addExact(Math.multiplyExact(seconds, 1000000L), micros)
  }

  /** Local microseconds since 1970-01-01 00:00:00 of a timestamp_ntz `yyyy-MM-dd HH:mm:ss[.SSSSSS]`. */
  def parseTimestampNtz(value: String): Long = {
    val (local, micros, _) = localTimestampOf(value, TimestampNTZType, zoneAllowed = false)
    Math.addExact(Math.multiplyExact(local.toEpochSecond(ZoneOffset.UTC), 1000000L), micros)
  }

  /** Whether a timestamp value names its zone (`Z`, `UTC` or an offset); zone-less ones depend on the reader's. */
  private def hasExplicitZone(value: String): Boolean =
    localTimestampOf(value, TimestampType, zoneAllowed = true)._3.isDefined

  /** The local date-time to the second, the microseconds past it, and the explicit offset if the value has one. */
  private def localTimestampOf(value: String, dataType: DataType, zoneAllowed: Boolean)
      : (LocalDateTime, Long, Option[ZoneOffset]) = value.trim match {
    case TimestampForm(y, mo, d, h, mi, s, frac, zone) if zoneAllowed || zone == null =>
      val local = try LocalDateTime.of(y.toInt, mo.toInt, d.toInt, h.toInt, mi.toInt, Option(s).fold(0)(_.toInt))
        catch { case e: java.time.DateTimeException => throw invalid(value, dataType, s"a real time (${e.getMessage})") }
      val offset = zone match {
        case null => None
        case "Z" | "UTC" => Some(ZoneOffset.UTC)
        case z => Some(ZoneOffset.of(if (z.length == 3) z + ":00" else z))
      }
      (local, Option(frac).filter(_.nonEmpty).fold(0L)(f => (f + "00000").take(6).toLong), offset)
    case _ => throw invalid(value, dataType,
      if (zoneAllowed) "yyyy-MM-dd HH:mm:ss[.SSSSSS] (a local time in the session time zone) or ISO-8601 such as " +
        "1970-01-01T00:00:00.123456Z"
      else "yyyy-MM-dd HH:mm:ss[.SSSSSS]")
  }

  private def invalid(value: String, dataType: DataType, expected: String) = new IllegalArgumentException(
    s"'$value' is not a valid ${dataType.simpleString} partition value: expected $expected.")

  /**
   * The value a log partition value stands for, comparable with `==` whatever its spelling: dates as days,
   * timestamps as UTC microseconds, numbers as numbers, booleans case-insensitively. Throws a clear error for a
   * value that is not of the column's type. `zone`: see [[typedKey]].
   */
  def parse(value: String, dataType: DataType, zone: Option[ZoneId]): Any = dataType match {
    case DateType => parseDate(value)
    case TimestampType => zone match {
      case Some(z) => parseTimestamp(value, z)
      case None if hasExplicitZone(value) => parseTimestamp(value, ZoneOffset.UTC)
      case None => LocalTimestamp(parseTimestampNtz(value))
    }
    case TimestampNTZType => parseTimestampNtz(value)
    case ByteType | ShortType | IntegerType | LongType =>
      value.trim.toLongOption.getOrElse(throw invalid(value, dataType, "an integer"))
    case _: DecimalType => try new java.math.BigDecimal(value.trim).stripTrailingZeros() catch {
      case _: NumberFormatException => throw invalid(value, dataType, "a decimal number")
    }
    case FloatType | DoubleType => value.trim.toDoubleOption.getOrElse(throw invalid(value, dataType, "a number"))
    case BooleanType => value.trim.toLowerCase(Locale.ROOT).toBooleanOption
      .getOrElse(throw invalid(value, dataType, "true or false"))
    case _ => value
  }

  /** A zone-less timestamp kept as its local time: equal only to the same local time, never to an instant. */
  private final case class LocalTimestamp(localMicros: Long)

  /**
   * A file's partition, comparable across spellings: one element per column of `partitionSchema`, None for null
   * (an empty string is null too, as the protocol says). A value that does not parse stays its raw string, so it
   * only equals the very same spelling (a foreign or damaged log value must not break an unrelated write).
   *
   * `zone`: Some(session zone) compares timestamps as that session reads them ([[parseTimestamp]]), for a write
   * that replaces the partitions it writes. None compares them so that equal keys read alike in every session zone
   * (a zone-less value only equals the same zone-less local time), for rewrites such as OPTIMIZE that must not
   * change what any reader sees.
   */
  def typedKey(values: Map[String, Option[String]], partitionSchema: StructType, zone: Option[ZoneId]): Seq[Option[Any]] =
    partitionSchema.fields.toSeq.map { f =>
      val key = PhysicalSchema.physicalName(f)
      val raw = values.get(key).orElse(values.collectFirst { case (k, v) if k.equalsIgnoreCase(key) => v })
      raw.flatten.filter(_.nonEmpty).map { v =>
        try parse(v, f.dataType, zone) catch { case _: IllegalArgumentException => Unparsed(v) }
      }
    }

  private final case class Unparsed(raw: String)

  /** A set of partitions (log values), matched by value: see [[typedKey]]. */
  final class KeySet(partitions: Iterable[Map[String, Option[String]]], partitionSchema: StructType,
                     zone: Option[ZoneId]) {
    private val keys = partitions.iterator.map(typedKey(_, partitionSchema, zone)).toSet
    def size: Int = keys.size
    def contains(values: Map[String, Option[String]]): Boolean = keys.contains(typedKey(values, partitionSchema, zone))
  }

  /** The partitions of `partitions` as a set matched by value, not spelling ([[typedKey]] explains `zone`). */
  def keySet(partitions: Iterable[Map[String, Option[String]]], partitionSchema: StructType,
             zone: Option[ZoneId]): KeySet =
    new KeySet(partitions, partitionSchema, zone)
}
