package io.strata.log

import java.nio.charset.StandardCharsets.UTF_8
import java.time.{LocalDate, LocalDateTime, OffsetDateTime, ZoneOffset}
import java.time.format.DateTimeFormatter

import com.fasterxml.jackson.core.{JsonParser, JsonToken}

import scala.util.control.NonFatal

/**
 * The one parser of a file's statistics JSON (PROTOCOL.md, "Per-file Statistics"; a checkpoint's `stats_parsed`
 * reaches it as the JSON it stands for): `numRecords`, `tightBounds`, and for the columns asked for (nested paths
 * too) `minValues`, `maxValues` and `nullCount`. A streaming parse (no tree) that skips every field not asked for.
 * Values are converted as [[StatsColumn.Kind]] says, or left absent; malformed JSON leaves the whole file unknown:
 * the parse reads to the end of the object even when no column is asked for (`numRecords` alone, for a count), so a
 * corrupt statistics string never yields a number.
 */
object StatsParser {
  /** One file's parsed statistics. */
  final class Parsed(n: Int) extends StatsValues {
    var records: Long = -1L
    var tight: Int = -1
    val nullCounts: Array[Long] = Array.fill(n)(-1L)
    val mins: Array[AnyRef] = new Array[AnyRef](n)
    val maxs: Array[AnyRef] = new Array[AnyRef](n)
    def length: Int = 1
    def numRecords(i: Int): Long = records
    def tightBounds(i: Int): Int = tight
    def nullCount(c: Int, i: Int): Long = nullCounts(c)
    def min(c: Int, i: Int): AnyRef = mins(c)
    def max(c: Int, i: Int): AnyRef = maxs(c)
  }

  /** The column paths asked for, as a tree of field names: a leaf holds the column's index. */
  private final class Node {
    var leaf: Int = -1
    val children = new java.util.HashMap[String, Node]()
  }

  /** A parser for `columns` (reusable, thread-safe). */
  final class For(val columns: IndexedSeq[StatsColumn]) {
    private val root = new Node
    columns.zipWithIndex.foreach { case (c, i) =>
      val node = c.path.foldLeft(root)((n, name) => n.children.computeIfAbsent(name, _ => new Node))
      node.leaf = i
    }

    /** The statistics `json` says for the columns; every value absent when it is null or malformed. */
    def parse(json: String): Parsed =
      if (json == null) new Parsed(columns.length) else parsed(ActionCodec.mapper.getFactory.createParser(json))

    /**
     * The same for JSON held as UTF-8 (`length` bytes of `utf8` from `offset`; null: no statistics), as the table
     * state keeps it: no `String` is decoded, and values of fields not asked for are skipped without being built.
     */
    def parse(utf8: Array[Byte], offset: Int, length: Int): Parsed =
      if (utf8 == null) new Parsed(columns.length)
      else parsed(ActionCodec.mapper.getFactory.createParser(utf8, offset, length))

    private def parsed(open: => JsonParser): Parsed =
      try {
        val p = open
        try read(p) finally p.close()
      } catch { case NonFatal(_) => new Parsed(columns.length) }

    private def read(p: JsonParser): Parsed = {
      val out = new Parsed(columns.length)
      if (p.nextToken() != JsonToken.START_OBJECT) return new Parsed(columns.length)
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        val name = p.currentName()
        val t = p.nextToken()
        name match {
          case "numRecords" if t == JsonToken.VALUE_NUMBER_INT && p.getNumberType != JsonParser.NumberType.BIG_INTEGER =>
            out.records = p.getLongValue
          case "tightBounds" if t == JsonToken.VALUE_TRUE || t == JsonToken.VALUE_FALSE =>
            out.tight = if (t == JsonToken.VALUE_TRUE) 1 else 0
          case "nullCount" | "minValues" | "maxValues" if t == JsonToken.START_OBJECT && columns.nonEmpty =>
            section(p, name, root, out)
          case _ => p.skipChildren()
        }
      }
      out
    }

    /** The fields of one section object under `node` (the parser is at its START_OBJECT). */
    private def section(p: JsonParser, name: String, node: Node, out: Parsed): Unit =
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        val child = node.children.get(p.currentName())
        val t = p.nextToken()
        if (child == null) p.skipChildren()
        else if (t == JsonToken.START_OBJECT) { if (child.children.isEmpty) p.skipChildren() else section(p, name, child, out) }
        else if (child.leaf < 0) p.skipChildren()
        else {
          val c = child.leaf
          name match {
            case "nullCount" =>
              if (t == JsonToken.VALUE_NUMBER_INT && p.getNumberType != JsonParser.NumberType.BIG_INTEGER)
                out.nullCounts(c) = p.getLongValue
            case "minValues" => out.mins(c) = value(p, t, columns(c).kind)
            case _ => out.maxs(c) = value(p, t, columns(c).kind)
          }
        }
      }
  }

  def forColumns(columns: IndexedSeq[StatsColumn]): For = new For(columns)

  /**
   * `numRecords` alone (and `tightBounds`): every byte of the JSON is still read, so malformed statistics give no
   * number (-1), as in a parse for columns. The table state reads it as each file enters ([[FileColumns]]).
   */
  val recordsOnly: For = forColumns(IndexedSeq.empty)

  private val Micros = 1000000L

  /** A scalar statistics value (the parser is at token `t`) as `kind` holds it, or null. */
  private def value(p: JsonParser, t: JsonToken, kind: StatsColumn.Kind): AnyRef = try {
    import StatsColumn._
    kind match {
      case Integral(bits) if t == JsonToken.VALUE_NUMBER_INT &&
        p.getNumberType != JsonParser.NumberType.BIG_INTEGER =>
        val l = p.getLongValue
        if (bits >= 64 || (l >= -(1L << (bits - 1)) && l < (1L << (bits - 1)))) java.lang.Long.valueOf(l) else null
      case Floating(single) if t == JsonToken.VALUE_NUMBER_INT || t == JsonToken.VALUE_NUMBER_FLOAT =>
        val d = if (single) p.getFloatValue.toDouble else p.getDoubleValue
        if (d.isNaN) null else java.lang.Double.valueOf(d)
      case Decimal(precision, scale) if t == JsonToken.VALUE_NUMBER_INT || t == JsonToken.VALUE_NUMBER_FLOAT =>
        // The exact text of the number (never through a double), at the column's scale without rounding.
        val d = p.getDecimalValue.setScale(scale, java.math.RoundingMode.UNNECESSARY)
        if (d.precision <= precision) d else null
      case Str if t == JsonToken.VALUE_STRING => p.getText.getBytes(UTF_8)
      case Date if t == JsonToken.VALUE_STRING =>
        java.lang.Long.valueOf(LocalDate.parse(p.getText, DateTimeFormatter.ISO_LOCAL_DATE).toEpochDay)
      case Timestamp if t == JsonToken.VALUE_STRING =>
        java.lang.Long.valueOf(micros(OffsetDateTime.parse(p.getText).toInstant))
      case TimestampNtz if t == JsonToken.VALUE_STRING =>
        java.lang.Long.valueOf(micros(LocalDateTime.parse(p.getText).toInstant(ZoneOffset.UTC)))
      case Bool if t == JsonToken.VALUE_TRUE || t == JsonToken.VALUE_FALSE =>
        java.lang.Boolean.valueOf(t == JsonToken.VALUE_TRUE)
      case _ => null
    }
  } catch { case NonFatal(_) => null }

  private def micros(i: java.time.Instant): Long =
    Math.addExact(Math.multiplyExact(i.getEpochSecond, Micros), i.getNano / 1000L)
}
