package io.strata.log

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.JsonNode

/** What Strata does with a table that supports a feature, on one side (reading it, or writing it). */
sealed trait FeatureSupport {
  /** What Strata does not do yet on this side (None: it follows the feature's rules). */
  def lacking: Option[String] = None
}

object FeatureSupport {
  /** Strata follows the feature's rules. */
  case object Full extends FeatureSupport

  /**
   * The feature's rules bind only a table that uses it (PROTOCOL.md, "Supported Features" and "Active Features"), and
   * Strata does not follow them yet (`what`): a table that supports the feature without using it is written as any
   * other; one that uses it is refused, naming `what`.
   */
  final case class WhileUnused(what: String) extends FeatureSupport {
    override def lacking: Option[String] = Some(what)
  }

  /** Strata cannot follow the feature's rules (`what`): a table that supports it is refused. */
  final case class NotYet(what: String) extends FeatureSupport {
    override def lacking: Option[String] = Some(what)
  }
}

/**
 * One table feature (PROTOCOL.md, "Table Features" and "Valid Feature Names in Table Features"): its name, whether
 * readers must know it (`readerWriter`), the legacy protocol versions that imply it (`legacy`: (reader, writer), for
 * the features older than table features), when a table's metadata uses it (`usedBy`, from the parsed schema and
 * configuration: [[SchemaUse]]), what Strata does with it when reading and writing, and whether Strata drops it
 * (DROP FEATURE; the connector removes its traces first). `previewOf`: the final name of a preview name delta-spark
 * wrote first (the same rules). The registry is [[TableFeatures]]; every protocol rule is a query over it.
 */
final class TableFeature(
    val name: String,
    val readerWriter: Boolean,
    val legacy: Option[(Int, Int)],
    val read: FeatureSupport,
    val write: FeatureSupport,
    usedBy: Metadata => Boolean = _ => false,
    val droppable: Boolean = false,
    val previewOf: Option[String] = None) {

  /** Whether `m` uses the feature: a table with this metadata needs it, and a writer must follow its rules. */
  def isUsedBy(m: Metadata): Boolean = usedBy(m)

  /** The protocol versions the feature needs alone: its legacy ones, else (3, 7) with reader rules, (1, 7) without. */
  def versions: (Int, Int) = legacy.getOrElse(if (readerWriter) (3, 7) else (1, 7))

  /** Whether a legacy protocol (`reader`, `writer` below 7) implies the feature: both versions reach the feature's. */
  def impliedBy(reader: Int, writer: Int): Boolean = legacy.exists { case (r, w) => reader >= r && writer >= w }

  /**
   * Whether a writer of `p` must follow the feature (PROTOCOL.md, "Supported Features"): in its writer features, or
   * implied by its legacy versions.
   */
  def supportedBy(p: Protocol): Boolean =
    if (p.supportsWriterFeatures) p.writerFeatures.exists(_(name))
    else impliedBy(p.minReaderVersion, p.minWriterVersion)

  /**
   * Whether a reader of `p` must follow the feature's reader rules: in its reader features (reader version 3), or
   * implied by its legacy versions (column mapping at reader 2).
   */
  def readBy(p: Protocol): Boolean = readerWriter && (
    if (p.minReaderVersion >= 3) p.readerFeatures.exists(_(name))
    else legacy.exists { case (r, _) => p.minReaderVersion >= r && (p.supportsWriterFeatures ||
      impliedBy(p.minReaderVersion, p.minWriterVersion)) })

  override def toString: String = name
}

/**
 * What a table's schema uses, from its parsed JSON (PROTOCOL.md, "Schema Serialization Format"): the primitive type
 * names anywhere in it (inside structs, arrays and maps too) and the column metadata keys of its fields at any depth.
 * Features are detected from this, never from the schema string (a column named "variant" is no variant column).
 */
final case class SchemaUse(types: Set[String], fieldMetadataKeys: Set[String]) {
  def usesType(name: String): Boolean = types(name)
  def hasFieldMetadata(key: String): Boolean = fieldMetadataKeys(key)
  def hasFieldMetadataPrefix(prefix: String): Boolean = fieldMetadataKeys.exists(_.startsWith(prefix))
}

object SchemaUse {
  def of(schemaJson: String): SchemaUse = {
    val types = Set.newBuilder[String]
    val keys = Set.newBuilder[String]
    def walk(t: JsonNode): Unit =
      if (t.isTextual) types += t.asText
      else t.path("type").asText("") match {
        case "struct" => t.path("fields").elements().asScala.foreach { f =>
          f.path("metadata").fieldNames().asScala.foreach(keys += _)
          walk(f.path("type"))
        }
        case "array" => walk(t.path("elementType"))
        case "map" => walk(t.path("keyType")); walk(t.path("valueType"))
        case _ =>
      }
    val root = try ActionCodec.mapper.readTree(schemaJson) catch {
      case e: Exception => throw CorruptLogException("STRATA_CORRUPT_LOG",
        s"The table's schema is not valid JSON ($e): ${schemaJson.take(200)}", e)
    }
    if (root != null) walk(root)
    SchemaUse(types.result(), keys.result())
  }
}
