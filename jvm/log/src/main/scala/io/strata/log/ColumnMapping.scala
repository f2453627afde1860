package io.strata.log

import java.util.UUID

import com.fasterxml.jackson.databind.JsonNode
import com.fasterxml.jackson.databind.node.ObjectNode

import scala.jdk.CollectionConverters._

/**
 * Column mapping (PROTOCOL.md, "Column Mapping"), Spark-free: with `delta.columnMapping.mode` `name` or `id`, every
 * field of the schema, nested ones too, carries a physical name (`delta.columnMapping.physicalName`, the name in the
 * Parquet files, in `partitionValues` and in statistics) and an id (`delta.columnMapping.id`, the Parquet field id;
 * mode `id` resolves columns by it). `delta.columnMapping.maxColumnId` is the largest id ever given, so a column
 * dropped and re-added gets a new id and physical name, and its old files' values never come back.
 *
 * The mapping lives in the schema JSON itself: each field's metadata says where its data is. This class reads and
 * extends that JSON; the connector turns it into Spark's physical schema.
 */
object ColumnMapping {
  val ModeKey = "delta.columnMapping.mode"
  val MaxColumnIdKey = "delta.columnMapping.maxColumnId"
  val PhysicalNameKey = "delta.columnMapping.physicalName"
  val IdKey = "delta.columnMapping.id"
  /** The Parquet field id key Spark's Parquet reader and writer use for a StructField's metadata. */
  val ParquetFieldIdKey = "parquet.field.id"
  val Modes: Seq[String] = Seq("none", "name", "id")

  /** The table's mode: `none`, `name` or `id`; anything else is a corrupt log (no reader could place its columns). */
  def mode(m: Metadata): String = m.configuration.get(ModeKey).map(_.trim.toLowerCase(java.util.Locale.ROOT)) match {
    case None => "none"
    case Some(v) if Modes.contains(v) => v
    case Some(v) => throw CorruptLogException("STRATA_CORRUPT_LOG",
      s"metaData ${m.id} has $ModeKey = '$v'; the protocol allows ${Modes.mkString(", ")}.")
  }

  def enabled(m: Metadata): Boolean = mode(m) != "none"

  /** The largest column id the table has given (the property, or the largest id in the schema when it is lower). */
  def maxColumnId(m: Metadata): Long = {
    val stated = m.configuration.get(MaxColumnIdKey).flatMap(v => scala.util.Try(v.trim.toLong).toOption).getOrElse(0L)
    math.max(stated, ids(ActionCodec.mapper.readTree(m.schemaString)).foldLeft(0L)(math.max))
  }

  /** Every field (nested too) lacks or has a physical name and id: throws naming the first field without them. */
  def checkComplete(m: Metadata): Unit = if (enabled(m)) {
    fields(ActionCodec.mapper.readTree(m.schemaString), "").foreach { case (path, meta) =>
      if (meta == null || !meta.hasNonNull(PhysicalNameKey) || !meta.hasNonNull(IdKey))
        throw CorruptLogException("STRATA_CORRUPT_LOG", s"metaData ${m.id} uses column mapping (mode " +
          s"${mode(m)}) but field '$path' has no $PhysicalNameKey and $IdKey in its metadata.")
    }
  }

  /**
   * The schema JSON with a physical name and id for every field that has none, ids counting up from `maxColumnId`;
   * returns it with the new largest id. `keepNames`: physical name = the field's current name (upgrading a table
   * whose files are already written under those names, as delta-spark does); otherwise `col-<uuid>`.
   */
  def assign(schemaJson: String, maxColumnId: Long, keepNames: Boolean): (String, Long) = {
    val root = ActionCodec.mapper.readTree(schemaJson)
    var next = math.max(maxColumnId, ids(root).foldLeft(0L)(math.max))
    walk(root) { field =>
      val meta = field.get("metadata") match {
        case o: ObjectNode => o
        case _ => field.asInstanceOf[ObjectNode].putObject("metadata")
      }
      if (!meta.hasNonNull(IdKey)) { next += 1; meta.put(IdKey, next) }
      if (!meta.hasNonNull(PhysicalNameKey))
        meta.put(PhysicalNameKey, if (keepNames) field.get("name").asText else s"col-${UUID.randomUUID()}")
    }
    (ActionCodec.mapper.writeValueAsString(root), next)
  }

  /** The schema JSON without any column mapping keys (for a table that does not use column mapping). */
  def strip(schemaJson: String): String = {
    val root = ActionCodec.mapper.readTree(schemaJson)
    walk(root) { field =>
      field.get("metadata") match {
        case o: ObjectNode => o.remove(Seq(PhysicalNameKey, IdKey, ParquetFieldIdKey).asJava)
        case _ =>
      }
    }
    ActionCodec.mapper.writeValueAsString(root)
  }

  /** The names `partitionValues` keys the partition columns by: their physical names with column mapping. */
  def physicalPartitionColumns(m: Metadata): Seq[String] = if (!enabled(m)) m.partitionColumns else {
    val top = ActionCodec.mapper.readTree(m.schemaString).path("fields").elements().asScala.toSeq
    m.partitionColumns.map { c =>
      top.find(_.path("name").asText == c).map(_.path("metadata").path(PhysicalNameKey).asText(c)).getOrElse(c)
    }
  }

  /**
   * Every field (nested too) as (physical path, logical path, id): where its data is in the files and what readers
   * call it. Path segments of arrays and maps are `element`, `key`, `value` in both. Empty without column mapping.
   */
  def physicalFields(m: Metadata): Seq[(Seq[String], Seq[String], Long)] = if (!enabled(m)) Nil else {
    def walkPaths(t: JsonNode, phys: Seq[String], logical: Seq[String]): Seq[(Seq[String], Seq[String], Long)] = t match {
      case null => Nil
      case o if o.isObject && o.path("type").asText == "struct" && o.has("fields") =>
        o.get("fields").elements().asScala.toSeq.flatMap { f =>
          val name = f.get("name").asText
          val meta = f.path("metadata")
          val p = phys :+ meta.path(PhysicalNameKey).asText(name)
          val l = logical :+ name
          (p, l, meta.path(IdKey).asLong(0L)) +: walkPaths(f.get("type"), p, l)
        }
      case o if o.isObject && o.path("type").asText == "array" =>
        walkPaths(o.get("elementType"), phys :+ "element", logical :+ "element")
      case o if o.isObject && o.path("type").asText == "map" =>
        walkPaths(o.get("keyType"), phys :+ "key", logical :+ "key") ++
          walkPaths(o.get("valueType"), phys :+ "value", logical :+ "value")
      case _ => Nil
    }
    walkPaths(ActionCodec.mapper.readTree(m.schemaString), Vector.empty, Vector.empty)
  }

  private def ids(root: JsonNode): Seq[Long] =
    fields(root, "").flatMap { case (_, meta) => Option(meta).flatMap(m => Option(m.get(IdKey))).map(_.asLong) }

  /** (dotted path, metadata) of every struct field, nested ones (in structs, arrays, maps) too. */
  private def fields(t: JsonNode, prefix: String): Seq[(String, JsonNode)] = t match {
    case null => Nil
    case o if o.isObject && o.path("type").asText == "struct" && o.has("fields") =>
      o.get("fields").elements().asScala.toSeq.flatMap { f =>
        val path = prefix + f.get("name").asText
        (path, f.get("metadata")) +: fields(f.get("type"), path + ".")
      }
    case o if o.isObject && o.path("type").asText == "array" => fields(o.get("elementType"), prefix + "element.")
    case o if o.isObject && o.path("type").asText == "map" =>
      fields(o.get("keyType"), prefix + "key.") ++ fields(o.get("valueType"), prefix + "value.")
    case _ => Nil
  }

  /** Calls `f` on every struct field node, outer fields before their nested ones. */
  private def walk(t: JsonNode)(f: JsonNode => Unit): Unit = t match {
    case null =>
    case o if o.isObject && o.path("type").asText == "struct" && o.has("fields") =>
      o.get("fields").elements().asScala.foreach { field => f(field); walk(field.get("type"))(f) }
    case o if o.isObject && o.path("type").asText == "array" => walk(o.get("elementType"))(f)
    case o if o.isObject && o.path("type").asText == "map" => walk(o.get("keyType"))(f); walk(o.get("valueType"))(f)
    case _ =>
  }
}
