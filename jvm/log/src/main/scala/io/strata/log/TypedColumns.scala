package io.strata.log

import java.math.{BigDecimal => JBigDecimal, BigInteger}
import java.nio.{ByteBuffer, ByteOrder}
import java.time.{Instant, LocalDate, LocalDateTime, OffsetDateTime, ZoneOffset}
import java.time.format.DateTimeFormatter

import com.fasterxml.jackson.databind.JsonNode
import com.fasterxml.jackson.databind.node.{JsonNodeFactory, ObjectNode}
import org.apache.parquet.example.data.Group
import org.apache.parquet.io.api.Binary
import org.apache.parquet.schema.{PrimitiveType, Type, Types}
import org.apache.parquet.schema.LogicalTypeAnnotation._
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName._

import scala.util.Try

/**
 * Typed values in checkpoint columns (`stats_parsed`, `partitionValues_parsed`): the Parquet type of a Delta
 * primitive type, a JSON statistics value or partition-value string written as that type, and a typed Parquet value
 * read back as the JSON value the `stats` column would hold. A value that does not convert exactly is left out (a
 * missing bound only costs skipping), never approximated.
 */
private[log] object TypedColumns {
  private val nodes = JsonNodeFactory.instance
  private val Micros = 1000000L
  private val tsMillis = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSXXX").withZone(ZoneOffset.UTC)
  private val tsMicros = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX").withZone(ZoneOffset.UTC)
  private val ntzMillis = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSS").withZone(ZoneOffset.UTC)
  private val ntzMicros = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSSSS").withZone(ZoneOffset.UTC)
  private val DecimalType = """decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)""".r

  /** The Parquet type of a Delta primitive type with min/max statistics, or None (booleans, binary, ...). */
  def boundType(deltaType: String, name: String): Option[Type] = deltaType match {
    case "byte" => Some(Types.optional(INT32).as(intType(8, true)).named(name))
    case "short" => Some(Types.optional(INT32).as(intType(16, true)).named(name))
    case "integer" => Some(Types.optional(INT32).named(name))
    case "long" => Some(Types.optional(INT64).named(name))
    case "float" => Some(Types.optional(FLOAT).named(name))
    case "double" => Some(Types.optional(DOUBLE).named(name))
    case "string" => Some(Types.optional(BINARY).as(stringType()).named(name))
    case "date" => Some(Types.optional(INT32).as(dateType()).named(name))
    case "timestamp" => Some(Types.optional(INT64).as(timestampType(true, TimeUnit.MICROS)).named(name))
    case "timestamp_ntz" => Some(Types.optional(INT64).as(timestampType(false, TimeUnit.MICROS)).named(name))
    case DecimalType(p, s) =>
      val (precision, scale) = (p.toInt, s.toInt)
      val annotation = decimalType(scale, precision)
      Some(if (precision <= 9) Types.optional(INT32).as(annotation).named(name)
        else if (precision <= 18) Types.optional(INT64).as(annotation).named(name)
        else Types.optional(FIXED_LEN_BYTE_ARRAY).length(decimalBytes(precision)).as(annotation).named(name))
    case _ => None
  }

  /** The Parquet type of a partition column: the bound types plus booleans. */
  def partitionType(deltaType: String, name: String): Option[Type] = deltaType match {
    case "boolean" => Some(Types.optional(BOOLEAN).named(name))
    case other => boundType(other, name)
  }

  private def decimalBytes(precision: Int): Int =
    Iterator.from(1).find(n => BigInteger.TWO.pow(8 * n - 1).compareTo(BigInteger.TEN.pow(precision)) >= 0).get

  /** Adds `v` (a statistics value as JSON) to field `f` of `g`; false when it does not convert exactly. */
  def addJson(g: Group, f: Int, t: PrimitiveType, v: JsonNode): Boolean = Try {
    val logical = t.getLogicalTypeAnnotation
    (t.getPrimitiveTypeName, logical) match {
      case (INT32, _: DateLogicalTypeAnnotation) => g.add(f, Math.toIntExact(LocalDate.parse(v.textValue).toEpochDay))
      case (_, d: DecimalLogicalTypeAnnotation) => addDecimal(g, f, t, d, requireNumber(v).decimalValue)
      case (INT32, i: IntLogicalTypeAnnotation) =>
        val n = Math.toIntExact(requireIntegral(v).longValue)
        require(n >= -(1 << (i.getBitWidth - 1)) && n < (1 << (i.getBitWidth - 1)))
        g.add(f, n)
      case (INT32, _) => g.add(f, Math.toIntExact(requireIntegral(v).longValue))
      case (INT64, ts: TimestampLogicalTypeAnnotation) =>
        val instant = if (ts.isAdjustedToUTC) OffsetDateTime.parse(v.textValue).toInstant
          else LocalDateTime.parse(v.textValue).toInstant(ZoneOffset.UTC)
        g.add(f, micros(instant))
      case (INT64, _) => g.add(f, requireIntegral(v).longValue)
      case (FLOAT, _) => g.add(f, requireNumber(v).floatValue)
      case (DOUBLE, _) => g.add(f, requireNumber(v).doubleValue)
      case (BINARY, _: StringLogicalTypeAnnotation) => g.add(f, requireText(v))
      case (BOOLEAN, _) => require(v.isBoolean); g.add(f, v.booleanValue)
      case _ => throw new IllegalArgumentException(s"no typed statistics for $t")
    }
  }.isSuccess

  /** Adds a partition value string (as the `partitionValues` map holds it) to field `f`; false when it cannot. */
  def addPartitionValue(g: Group, f: Int, t: PrimitiveType, deltaType: String, s: String): Boolean = Try {
    (t.getPrimitiveTypeName, t.getLogicalTypeAnnotation) match {
      case (INT64, ts: TimestampLogicalTypeAnnotation) =>
        // Only values naming an instant (`Z` or an offset); a zone-less one is a local time of the reading session.
        val instant = if (ts.isAdjustedToUTC) OffsetDateTime.parse(s.trim.replace(' ', 'T')).toInstant
          else LocalDateTime.parse(s.trim.replace(' ', 'T')).toInstant(ZoneOffset.UTC)
        g.add(f, micros(instant))
      case (BOOLEAN, _) => g.add(f, s.trim.toLowerCase match {
        case "true" => true; case "false" => false; case _ => throw new IllegalArgumentException(s)
      })
      case (_, _: DecimalLogicalTypeAnnotation) | (FLOAT, _) | (DOUBLE, _) =>
        if (!addJson(g, f, t, nodes.numberNode(new JBigDecimal(s.trim)))) throw new IllegalArgumentException(s)
      case (INT32, _: DateLogicalTypeAnnotation) | (BINARY, _) =>
        if (!addJson(g, f, t, nodes.textNode(s))) throw new IllegalArgumentException(s)
      case _ => if (!addJson(g, f, t, nodes.numberNode(s.trim.toLong))) throw new IllegalArgumentException(s)
    }
  }.isSuccess

  private def requireNumber(v: JsonNode): JsonNode = { require(v.isNumber, s"not a number: $v"); v }
  private def requireIntegral(v: JsonNode): JsonNode = { require(v.isIntegralNumber, s"not a whole number: $v"); v }
  private def requireText(v: JsonNode): String = { require(v.isTextual, s"not a string: $v"); v.textValue }
  private def micros(i: Instant): Long = Math.addExact(Math.multiplyExact(i.getEpochSecond, Micros), i.getNano / 1000L)

  private def addDecimal(g: Group, f: Int, t: PrimitiveType, d: DecimalLogicalTypeAnnotation, v: JBigDecimal): Unit = {
    val unscaled = v.setScale(d.getScale, java.math.RoundingMode.UNNECESSARY).unscaledValue
    require(unscaled.abs.compareTo(BigInteger.TEN.pow(d.getPrecision)) < 0, s"$v exceeds decimal(${d.getPrecision})")
    t.getPrimitiveTypeName match {
      case INT32 => g.add(f, unscaled.intValueExact)
      case INT64 => g.add(f, unscaled.longValueExact)
      case _ =>
        val bytes = unscaled.toByteArray
        val out = Array.fill[Byte](t.getTypeLength)(if (unscaled.signum < 0) -1 else 0)
        System.arraycopy(bytes, 0, out, out.length - bytes.length, bytes.length)
        g.add(f, Binary.fromConstantByteArray(out))
    }
  }

  // ---- reading ---------------------------------------------------------------------------------------------------

  /** A typed group (a `stats_parsed` row or one of its structs) as the JSON the `stats` column holds. */
  def groupToStatsJson(g: Group): ObjectNode = {
    val t = g.getType
    val o = nodes.objectNode()
    var f = 0
    while (f < t.getFieldCount) {
      if (g.getFieldRepetitionCount(f) > 0) {
        val ft = t.getType(f)
        if (!ft.isPrimitive) o.set[JsonNode](ft.getName, groupToStatsJson(g.getGroup(f, 0)))
        else valueJson(g, f, ft.asPrimitiveType).foreach(v => o.set[JsonNode](ft.getName, v))
      }
      f += 1
    }
    o
  }

  private def valueJson(g: Group, f: Int, t: PrimitiveType): Option[JsonNode] = {
    (t.getPrimitiveTypeName, t.getLogicalTypeAnnotation) match {
      case (INT32, _: DateLogicalTypeAnnotation) => Some(nodes.textNode(LocalDate.ofEpochDay(g.getInteger(f, 0).toLong).toString))
      case (INT32, d: DecimalLogicalTypeAnnotation) =>
        Some(nodes.numberNode(JBigDecimal.valueOf(g.getInteger(f, 0).toLong, d.getScale)))
      case (INT64, d: DecimalLogicalTypeAnnotation) => Some(nodes.numberNode(JBigDecimal.valueOf(g.getLong(f, 0), d.getScale)))
      case (BINARY | FIXED_LEN_BYTE_ARRAY, d: DecimalLogicalTypeAnnotation) =>
        Some(nodes.numberNode(new JBigDecimal(new BigInteger(g.getBinary(f, 0).getBytes), d.getScale)))
      case (INT64, ts: TimestampLogicalTypeAnnotation) =>
        val v = g.getLong(f, 0)
        val us = ts.getUnit match {
          case TimeUnit.MILLIS => Math.multiplyExact(v, 1000L)
          case TimeUnit.MICROS => v
          case TimeUnit.NANOS => Math.floorDiv(v, 1000L)
        }
        Some(nodes.textNode(timestamp(us, ts.isAdjustedToUTC)))
      case (INT96, _) => Some(nodes.textNode(timestamp(int96Micros(g.getInt96(f, 0)), utc = true)))
      case (INT32, _) => Some(nodes.numberNode(g.getInteger(f, 0)))
      case (INT64, _) => Some(nodes.numberNode(g.getLong(f, 0)))
      case (FLOAT, _) => Some(g.getFloat(f, 0)).filterNot(v => v.isNaN || v.isInfinite).map(v => nodes.numberNode(v))
      case (DOUBLE, _) => Some(g.getDouble(f, 0)).filterNot(v => v.isNaN || v.isInfinite).map(v => nodes.numberNode(v))
      case (BOOLEAN, _) => Some(nodes.booleanNode(g.getBoolean(f, 0)))
      case (BINARY, _: StringLogicalTypeAnnotation) => Some(nodes.textNode(g.getString(f, 0)))
      case _ => None
    }
  }

  /** Milliseconds when the value has no finer part (what writers keep), microseconds otherwise. */
  private def timestamp(us: Long, utc: Boolean): String = {
    val i = Instant.ofEpochSecond(Math.floorDiv(us, Micros), Math.floorMod(us, Micros) * 1000L)
    val fine = Math.floorMod(us, 1000L) != 0
    (if (utc) { if (fine) tsMicros else tsMillis } else { if (fine) ntzMicros else ntzMillis }).format(i)
  }

  /** INT96 (Spark's legacy timestamps): nanoseconds of the day, then the Julian day, little-endian. */
  private def int96Micros(b: Binary): Long = {
    val buf = ByteBuffer.wrap(b.getBytes).order(ByteOrder.LITTLE_ENDIAN)
    val nanos = buf.getLong
    val julianDay = buf.getInt
    (julianDay - 2440588L) * 86400L * Micros + nanos / 1000L
  }
}
