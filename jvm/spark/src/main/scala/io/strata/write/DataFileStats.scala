package io.strata.write

import java.math.{BigInteger, BigDecimal => JBigDecimal}
import java.time.{Instant, LocalDate, ZoneOffset}
import java.time.format.DateTimeFormatter

import com.fasterxml.jackson.databind.JsonNode
import com.fasterxml.jackson.databind.node.{JsonNodeFactory, ObjectNode}
import io.strata.log.ActionCodec
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.FileStatus
import org.apache.parquet.ParquetReadOptions
import org.apache.parquet.column.statistics.Statistics
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.metadata.ParquetMetadata
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.apache.parquet.io.api.Binary
import org.apache.parquet.schema.{LogicalTypeAnnotation, MessageType, PrimitiveType, Type}
import org.apache.parquet.schema.LogicalTypeAnnotation.{DateLogicalTypeAnnotation, DecimalLogicalTypeAnnotation, StringLogicalTypeAnnotation, TimeUnit, TimestampLogicalTypeAnnotation}
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName._

import scala.jdk.CollectionConverters._

/** The per-file statistics of an add action: row count plus the stats JSON (PROTOCOL.md, "Per-file Statistics"). */
final case class FileStats(numRecords: Long, json: String)

/**
 * Statistics taken from the footer the Parquet writer already built: no second pass over the rows.
 * Min/max/nullCount cover the first `numIndexedCols` leaf columns (delta.dataSkippingNumIndexedCols, default 32);
 * strings are truncated to 32 characters, with maxima kept an upper bound.
 */
object DataFileStats {
  val StringPrefixLength = 32
  private val nodes = JsonNodeFactory.instance
  private val tsFormat = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSXXX").withZone(ZoneOffset.UTC)
  private val ntzFormat = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSS").withZone(ZoneOffset.UTC)
  private val MaxCodePoint = new String(Character.toChars(Character.MAX_CODE_POINT))

  def read(file: FileStatus, conf: Configuration, options: ParquetReadOptions, numIndexedCols: Int): FileStats = {
    val reader = ParquetFileReader.open(HadoopInputFile.fromStatus(file, conf), options)
    try fromFooter(reader.getFooter, numIndexedCols) finally reader.close()
  }

  def fromFooter(footer: ParquetMetadata, numIndexedCols: Int): FileStats = {
    val blocks = footer.getBlocks.asScala.toSeq
    val numRecords = blocks.map(_.getRowCount).sum
    val root = nodes.objectNode().put("numRecords", numRecords)
    val mins = nodes.objectNode(); val maxs = nodes.objectNode(); val nulls = nodes.objectNode()
    val schema = footer.getFileMetaData.getSchema
    val leaves = schema.getColumns.asScala.take(numIndexedCols)
    val variants = variantGroups(schema)
    leaves.foreach { col =>
      val path = col.getPath.toSeq
      val repeated = col.getMaxRepetitionLevel > 0 // inside an array or map: no per-value bounds
      // A variant's value/metadata binaries: the protocol's variant statistics are not theirs; none is written.
      val inVariant = variants.exists(v => path.startsWith(v))
      if (!repeated && !inVariant) {
        val chunks = blocks.map(_.getColumns.asScala.find(_.getPath.toArray.sameElements(col.getPath)))
        val stats = chunks.map(_.map(_.getStatistics))
        if (stats.nonEmpty && stats.forall(s => s.isDefined && !s.get.isEmpty)) {
          val all = stats.map(_.get)
          if (all.forall(_.isNumNullsSet)) put(nulls, path, nodes.numberNode(all.map(_.getNumNulls).sum))
          val withValues = all.filter(_.hasNonNullValue)
          // Bounds only when every row group with non-null values reported them (writers may omit huge values).
          val complete = all.zip(blocks).forall { case (s, b) =>
            s.hasNonNullValue || (s.isNumNullsSet && s.getNumNulls == b.getRowCount)
          }
          if (withValues.nonEmpty && complete) {
            bounds(col.getPrimitiveType, withValues).foreach { case (lo, hi) => put(mins, path, lo); put(maxs, path, hi) }
          }
        } else if (numRecords == 0) put(nulls, path, nodes.numberNode(0L))
      }
    }
    root.set[JsonNode]("minValues", mins)
    root.set[JsonNode]("maxValues", maxs)
    root.set[JsonNode]("nullCount", nulls)
    FileStats(numRecords, ActionCodec.mapper.writeValueAsString(root))
  }

  /**
   * Paths of the groups that hold variant values (Parquet's variant annotation, or the unshredded layout Spark
   * writes: exactly the binaries `value` and `metadata`). A struct of just those two binaries is taken for one too:
   * it then goes without statistics, which costs skipping, never a wrong answer.
   */
  private def variantGroups(schema: MessageType): Seq[Seq[String]] = {
    def walk(t: Type, path: Seq[String]): Seq[Seq[String]] = if (t.isPrimitive) Nil else {
      val g = t.asGroupType()
      val names = g.getFields.asScala.map(_.getName).toSet
      val annotated = Option(g.getLogicalTypeAnnotation).exists(_.getClass.getSimpleName.startsWith("Variant"))
      val layout = names == Set("value", "metadata") &&
        g.getFields.asScala.forall(f => f.isPrimitive && f.asPrimitiveType.getPrimitiveTypeName == BINARY)
      if (path.nonEmpty && (annotated || layout || names("typed_value") && names("metadata"))) Seq(path)
      else g.getFields.asScala.toSeq.flatMap(f => walk(f, path :+ f.getName))
    }
    walk(schema, Nil)
  }

  private def put(obj: ObjectNode, path: Seq[String], value: JsonNode): Unit = {
    val parent = path.init.foldLeft(obj) { (o, k) =>
      Option(o.get(k)).collect { case n: ObjectNode => n }.getOrElse(o.putObject(k))
    }
    parent.set[JsonNode](path.last, value)
  }

  /** Overall (min, max) as JSON, or None when this type has no bounds Strata records. */
  private def bounds(t: PrimitiveType, stats: Seq[Statistics[_]]): Option[(JsonNode, JsonNode)] = {
    val cmp = stats.head.comparator().asInstanceOf[java.util.Comparator[Any]]
    val lo = stats.map(_.genericGetMin.asInstanceOf[Any]).reduce((a, b) => if (cmp.compare(a, b) <= 0) a else b)
    val hi = stats.map(_.genericGetMax.asInstanceOf[Any]).reduce((a, b) => if (cmp.compare(a, b) >= 0) a else b)
    for { l <- toJson(t, lo, upper = false); h <- toJson(t, hi, upper = true) } yield (l, h)
  }

  private def toJson(t: PrimitiveType, v: Any, upper: Boolean): Option[JsonNode] = {
    val logical: LogicalTypeAnnotation = t.getLogicalTypeAnnotation
    (t.getPrimitiveTypeName, logical) match {
      case (INT32, _: DateLogicalTypeAnnotation) =>
        Some(nodes.textNode(LocalDate.ofEpochDay(v.asInstanceOf[Int].toLong).toString))
      case (INT32 | INT64, d: DecimalLogicalTypeAnnotation) =>
        val unscaled = v match { case i: Int => BigInteger.valueOf(i.toLong); case l: Long => BigInteger.valueOf(l) }
        Some(nodes.numberNode(new JBigDecimal(unscaled, d.getScale)))
      case (BINARY | FIXED_LEN_BYTE_ARRAY, d: DecimalLogicalTypeAnnotation) =>
        Some(nodes.numberNode(new JBigDecimal(new BigInteger(v.asInstanceOf[Binary].getBytes), d.getScale)))
      case (INT64, ts: TimestampLogicalTypeAnnotation) =>
        val micros = ts.getUnit match {
          case TimeUnit.MILLIS => v.asInstanceOf[Long] * 1000
          case TimeUnit.MICROS => v.asInstanceOf[Long]
          case TimeUnit.NANOS => Math.floorDiv(v.asInstanceOf[Long], 1000L)
        }
        // Stats keep milliseconds: round the minimum down and the maximum up so they stay bounds.
        val millis = if (upper) Math.floorDiv(micros + 999, 1000L) else Math.floorDiv(micros, 1000L)
        val fmt = if (ts.isAdjustedToUTC) tsFormat else ntzFormat
        Some(nodes.textNode(fmt.format(Instant.ofEpochMilli(millis))))
      case (INT32, _) => Some(nodes.numberNode(v.asInstanceOf[Int]))
      case (INT64, null) => Some(nodes.numberNode(v.asInstanceOf[Long]))
      case (INT64, _: LogicalTypeAnnotation.IntLogicalTypeAnnotation) => Some(nodes.numberNode(v.asInstanceOf[Long]))
      case (FLOAT, _) => Option(v.asInstanceOf[Float]).filterNot(f => f.isNaN).map(f => nodes.numberNode(f))
      case (DOUBLE, _) => Option(v.asInstanceOf[Double]).filterNot(d => d.isNaN).map(d => nodes.numberNode(d))
      case (BINARY, _: StringLogicalTypeAnnotation) => Some(nodes.textNode(truncate(v.asInstanceOf[Binary].toStringUsingUTF8, upper)))
      case _ => None // booleans, plain binary, INT96 and others: null counts only
    }
  }

  private def truncate(s: String, upper: Boolean): String = {
    if (s.codePointCount(0, s.length) <= StringPrefixLength) s
    else {
      val prefix = s.substring(0, s.offsetByCodePoints(0, StringPrefixLength))
      if (upper) prefix + MaxCodePoint else prefix
    }
  }
}
