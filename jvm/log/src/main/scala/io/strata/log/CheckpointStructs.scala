package io.strata.log

import com.fasterxml.jackson.databind.JsonNode
import org.apache.parquet.example.data.Group
import org.apache.parquet.schema.{GroupType, Type, Types}
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName._

import scala.jdk.CollectionConverters._
import scala.util.Try

/**
 * The typed copies of an add's `stats` and `partitionValues` a checkpoint may carry (PROTOCOL.md, "Checkpoint
 * Schema"; `delta.checkpoint.writeStatsAsStruct`): `stats_parsed` with numRecords, minValues / maxValues (columns
 * with bounds, by physical name, nested structs as groups), nullCount and tightBounds, and `partitionValues_parsed`,
 * typed per the table schema. Built once per checkpoint from the table's metadata; [[fill]] adds a file's values.
 *
 * `partitionValues_parsed` is written only when every partition value of the table converts exactly (`typedOk`):
 * a zone-less timestamp value is a local time of the reading session, which a checkpoint cannot know.
 */
final class CheckpointStructs private[log] (val statsType: Option[GroupType], val partitionType: Option[GroupType],
                                           partitionTypes: Map[String, String]) {
  def fields: Seq[Type] = statsType.toSeq ++ partitionType.toSeq

  /** Adds `add`'s typed statistics and partition values to `row` (the checkpoint's add group of type `t`). */
  private[log] def fill(row: Group, t: GroupType, add: AddFile): Unit = {
    for (st <- statsType; json <- add.stats; stats <- Try(CheckpointStructs.statsReader.readTree(json)).toOption
         if stats != null && stats.isObject) {
      fillStruct(row.addGroup(t.getFieldIndex(st.getName)), st, stats)
    }
    for (pt <- partitionType) {
      val g = row.addGroup(t.getFieldIndex(pt.getName))
      pt.getFields.asScala.zipWithIndex.foreach { case (f, i) =>
        add.partitionValues.get(f.getName).flatten.foreach { v =>
          if (!TypedColumns.addPartitionValue(g, i, f.asPrimitiveType, partitionTypes(f.getName), v))
            throw new IllegalStateException(s"partition value '$v' of ${f.getName} was checked convertible")
        }
      }
    }
  }

  private def fillStruct(g: Group, t: GroupType, json: JsonNode): Unit =
    t.getFields.asScala.zipWithIndex.foreach { case (f, i) =>
      val v = json.get(f.getName)
      if (v != null && !v.isNull) {
        if (!f.isPrimitive) { if (v.isObject) fillStruct(g.addGroup(i), f.asGroupType, v) }
        else TypedColumns.addJson(g, i, f.asPrimitiveType, v)
      }
    }
}

object CheckpointStructs {
  val WriteStatsAsStructKey = "delta.checkpoint.writeStatsAsStruct"
  val WriteStatsAsJsonKey = "delta.checkpoint.writeStatsAsJson"
  private val PhysicalName = "delta.columnMapping.physicalName"
  /** Decimals as written (a double would lose digits a decimal(38) bound has, and then the bound). */
  private val statsReader = ActionCodec.mapper.reader(com.fasterxml.jackson.databind.DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)

  /** What a checkpoint of a table with `metadata`, holding `partitionValues` (its distinct maps), adds to `add`. */
  private[log] def of(metadata: Metadata, partitionValues: => Iterable[Map[String, Option[String]]]): CheckpointStructs =
    forTable(metadata, partitionValuesConvert(metadata, partitionValues.iterator))

  /**
   * What a checkpoint of a table with `metadata` adds to `add`; `typedPartitions`: whether every partition value of
   * the checkpointed version converts exactly ([[partitionValuesConvert]]), which `partitionValues_parsed` needs.
   */
  def forTable(metadata: Metadata, typedPartitions: Boolean): CheckpointStructs = {
    val top = topFields(metadata)
    val data = top.filterNot(f => metadata.partitionColumns.contains(f.logical))
    val stats = {
      val bounds = data.flatMap(boundField)
      val nulls = data.flatMap(nullCountField)
      val parts = Seq(Some(Types.optional(INT64).named("numRecords")),
        group("minValues", bounds), group("maxValues", bounds), group("nullCount", nulls),
        Some(Types.optional(BOOLEAN).named("tightBounds"))).flatten
      new GroupType(Type.Repetition.OPTIONAL, "stats_parsed", parts.asJava)
    }
    val partCols = metadata.partitionColumns.flatMap(c => top.find(_.logical == c))
    val partitionType = partitionTyping(metadata).filter(_ => typedPartitions)
      .map(typed => new GroupType(Type.Repetition.OPTIONAL, "partitionValues_parsed", typed.map(_._2).asJava))
    new CheckpointStructs(Some(stats), partitionType, partCols.map(c => c.physical -> c.deltaType.asText("")).toMap)
  }

  /**
   * Whether each of `partitionValues` (partition-value maps of a table with `metadata`, keyed by physical name)
   * converts exactly to the typed partition columns (false when some column has no typed form). Callers holding
   * the values in pieces (Spark tasks) ask per piece: the answer for all is the conjunction.
   */
  def partitionValuesConvert(metadata: Metadata, partitionValues: Iterator[Map[String, Option[String]]]): Boolean =
    partitionTyping(metadata).exists { typed =>
      val probeType = new GroupType(Type.Repetition.OPTIONAL, "p", typed.map(_._2).asJava)
      def probe = new org.apache.parquet.example.data.simple.SimpleGroup(probeType) // a field takes one value
      partitionValues.forall(_.forall {
        case (k, Some(v)) => typed.indexWhere(_._1.physical == k) match {
          case -1 => true
          case i => TypedColumns.addPartitionValue(probe, i, typed(i)._2.asPrimitiveType, typed(i)._1.deltaType.asText, v)
        }
        case _ => true
      })
    }

  private def topFields(metadata: Metadata): Seq[Field] =
    Try(ActionCodec.mapper.readTree(metadata.schemaString)).toOption.filter(_ != null)
      .map(s => structFields(s)).getOrElse(Nil)

  /**
   * The typed columns of the partition columns (named in the map by their physical name, column mapping), when the
   * table has partition columns and each has a typed form.
   */
  private def partitionTyping(metadata: Metadata): Option[Seq[(Field, Type)]] = {
    val top = topFields(metadata)
    val partCols = metadata.partitionColumns.flatMap(c => top.find(_.logical == c))
    val typed = partCols.flatMap(c => TypedColumns.partitionType(c.deltaType.asText(""), c.physical).map(c -> _))
    if (partCols.isEmpty || typed.size != partCols.size) None else Some(typed)
  }

  private final case class Field(logical: String, physical: String, deltaType: JsonNode)

  private def structFields(struct: JsonNode): Seq[Field] =
    Option(struct.get("fields")).map(_.elements.asScala.toSeq).getOrElse(Nil).map { f =>
      val physical = Option(f.get("metadata")).flatMap(m => Option(m.get(PhysicalName))).map(_.asText)
      Field(f.get("name").asText, physical.getOrElse(f.get("name").asText), f.get("type"))
    }

  private def group(name: String, fields: Seq[Type]): Option[Type] =
    if (fields.isEmpty) None else Some(new GroupType(Type.Repetition.OPTIONAL, name, fields.asJava))

  private def boundField(f: Field): Option[Type] =
    if (f.deltaType.isTextual) TypedColumns.boundType(f.deltaType.asText, f.physical)
    else if (f.deltaType.path("type").asText == "struct") group(f.physical, structFields(f.deltaType).flatMap(boundField))
    else None

  private def nullCountField(f: Field): Option[Type] =
    if (f.deltaType.path("type").asText == "struct") group(f.physical, structFields(f.deltaType).flatMap(nullCountField))
    else Some(Types.optional(INT64).named(f.physical))
}
