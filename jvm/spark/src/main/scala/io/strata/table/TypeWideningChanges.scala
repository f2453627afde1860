package io.strata.table

import io.strata.log.{CheckConstraints, InvalidTableOperationException, Protocol, ProtocolSupport, TableFeatures}
import org.apache.spark.sql.types._

/**
 * ALTER TABLE ... ALTER COLUMN c TYPE t (PROTOCOL.md, "Type Widening"): metadata only. The files written before keep
 * their narrower type and are read back upcast; later writes (appends, DML, OPTIMIZE) write the new type because they
 * follow the table's schema. Each change is recorded in the field's `delta.typeChanges` metadata as delta-spark 4.x
 * records it (`fromType` / `toType` as Spark's type names, `tableVersion` only on tables with the preview feature).
 */
object TypeWideningChanges {
  val TypeChangesKey = "delta.typeChanges"

  /**
   * The schema with the field at `path` changed to `to`; the schema itself when the type is already `to`. `path` may
   * step into arrays (`element`) and maps (`key`, `value`), as Spark's ALTER COLUMN spells them: the change is then
   * recorded on the nearest struct field with PROTOCOL.md's `fieldPath` (`element`, `value`, `element.key`). Refuses a
   * change PROTOCOL.md does not list, a table without `delta.enableTypeWidening`, a partition column and a column a
   * CHECK constraint uses (as delta-spark does), each naming what would be allowed.
   */
  def widen(schema: StructType, path: Seq[String], to: DataType, conf: Map[String, String],
      partitionColumns: Seq[String], protocol: Protocol, commitVersion: Long, table: String): StructType = {
    val from = typeAt(schema, path.toList, path, table)
    if (from == to) return schema
    val column = path.mkString(".")
    def refuse(why: String): Nothing = throw InvalidTableOperationException("STRATA_UNSUPPORTED_TYPE_CHANGE",
      Map("column" -> column, "table" -> table, "from" -> from.sql, "to" -> to.sql, "reason" -> why))
    (from, to) match {
      case (f, t) if supported(f, t) =>
      case _ => refuse("it is not a widening Delta allows (byte -> short -> int -> long; float -> double; byte, " +
        "short or int -> double; date -> timestamp_ntz; decimal(p, s) -> decimal(p + k1, s + k2) with k1 >= k2 >= 0; " +
        "byte, short or int -> decimal(10 + k1, k2); long -> decimal(20 + k1, k2)). Spark's MERGE WITH SCHEMA " +
        s"EVOLUTION asks for this when a source column's type differs: cast it to the table's type " +
        s"(CAST(... AS ${from.sql}))")
    }
    if (!conf.get(ProtocolSupport.TypeWideningKey).exists(_.trim.equalsIgnoreCase("true")))
      refuse(s"type widening is not enabled on the table: run ALTER TABLE ... SET TBLPROPERTIES " +
        s"('${ProtocolSupport.TypeWideningKey}' = 'true') first (readers then need the table feature typeWidening)")
    if (path.length == 1 && partitionColumns.exists(_.equalsIgnoreCase(path.head)))
      refuse("it is a partition column (Strata widens data columns only)")
    // Inside an array or map, a constraint on the column that holds it (`size(arr) > 0`) depends on the change too.
    val owner = (1 to path.length).find(i => typeAt(schema, path.take(i).toList, path, table) match {
      case _: ArrayType | _: MapType => true
      case _ => false
    }).map(i => path.take(i).mkString(".")).getOrElse(column).toLowerCase(java.util.Locale.ROOT)
    CheckConstraints.of(conf).find(c => SqlPredicates.referencedColumns(c.predicate).exists { r =>
      val ref = r.toLowerCase(java.util.Locale.ROOT)
      ref == owner || ref.startsWith(owner + ".")
    }).foreach(c =>
      refuse(s"CHECK constraint ${c.name} (${c.predicate}) uses it; drop the constraint first"))
    val preview = TableFeatures.TypeWideningPreview.readBy(protocol) && !TableFeatures.TypeWidening.readBy(protocol)
    def record(field: StructField, inner: List[String]): StructField = {
      val change = new MetadataBuilder().putString("fromType", from.typeName).putString("toType", to.typeName)
      if (preview) change.putLong("tableVersion", commitVersion)
      if (inner.nonEmpty) change.putString("fieldPath", inner.mkString("."))
      val before = if (field.metadata.contains(TypeChangesKey)) field.metadata.getMetadataArray(TypeChangesKey).toSeq
        else Nil
      field.copy(metadata = new MetadataBuilder().withMetadata(field.metadata)
        .putMetadataArray(TypeChangesKey, (before :+ change.build()).toArray).build())
    }
    replace(schema, path.toList, to, record).asInstanceOf[StructType]
  }

  /**
   * Schema evolution (`mergeSchema`) on a table with `delta.enableTypeWidening`: every data column, nested struct
   * field, array element and map key or value whose type is a wider one of the table's widens the table's, each
   * recorded as ALTER COLUMN TYPE records it (on the nearest struct field, with `fieldPath` inside arrays and maps).
   * Which widenings apply is delta-spark's `typeWidening.allowAutomaticWidening` (`automatic`): `always` (its
   * default) any PROTOCOL.md lists, `same_family_type` those within a type family, `never` none. Partition columns
   * never widen; other type differences are left to [[TableSchema.matchColumns]] (a narrower type is cast, a wider
   * or unrelated one refused).
   */
  def evolve(table: StructType, data: StructType, meta: io.strata.log.Metadata, protocol: Protocol,
      commitVersion: Long, tableName: String, automatic: String = "always"): StructType =
    if (!ProtocolSupport.typeWideningEnabled(meta) || automatic == "never") table
    else {
      val dataColumns = StructType(data.fields.filterNot(d => meta.partitionColumns.exists(_.equalsIgnoreCase(d.name))))
      val allowed = widenings(table, dataColumns, Nil).filter { case (path, to) =>
        automatic == "always" || sameFamily(leaf(table, path), to)
      }
      allowed.foldLeft(table) { case (schema, (path, to)) =>
        widen(schema, path, to, meta.configuration, meta.partitionColumns, protocol, commitVersion, tableName)
      }
    }

  /**
   * The paths (as ALTER COLUMN spells them) where `data` holds a wider atomic type than `table`, in the order
   * delta-spark records them: fields in table order, a map's key before its value.
   */
  private def widenings(table: DataType, data: DataType, path: List[String]): Seq[(List[String], DataType)] =
    (table, data) match {
      case (t: StructType, d: StructType) => t.fields.toSeq.flatMap(f =>
        d.fields.find(_.name.equalsIgnoreCase(f.name)).toSeq.flatMap(g => widenings(f.dataType, g.dataType,
          path :+ f.name)))
      case (t: ArrayType, d: ArrayType) => widenings(t.elementType, d.elementType, path :+ "element")
      case (t: MapType, d: MapType) =>
        widenings(t.keyType, d.keyType, path :+ "key") ++ widenings(t.valueType, d.valueType, path :+ "value")
      case (from, to) if from != to && supported(from, to) => Seq(path -> to)
      case _ => Nil
    }

  /** A widening within one type family: what delta-spark's `same_family_type` lets schema evolution apply. */
  private def sameFamily(from: DataType, to: DataType): Boolean = (from, to) match {
    case (ByteType | ShortType | IntegerType | LongType, ByteType | ShortType | IntegerType | LongType) => true
    case (FloatType, DoubleType) | (DateType, TimestampNTZType) => true
    case (_: DecimalType, _: DecimalType) => true
    case _ => false
  }

  /** The type at `path` (as [[widenings]] spells it) inside `t`. */
  private def leaf(t: DataType, path: List[String]): DataType = (t, path) match {
    case (_, Nil) => t
    case (s: StructType, name :: rest) => leaf(s.fields.find(_.name.equalsIgnoreCase(name)).get.dataType, rest)
    case (a: ArrayType, "element" :: rest) => leaf(a.elementType, rest)
    case (m: MapType, "key" :: rest) => leaf(m.keyType, rest)
    case (m: MapType, "value" :: rest) => leaf(m.valueType, rest)
    case _ => throw new IllegalStateException(s"no field at ${path.mkString(".")} in ${t.simpleString}")
  }

  /** PROTOCOL.md's list of widenings (delta-spark's TypeWidening.isTypeChangeSupported). */
  def supported(from: DataType, to: DataType): Boolean = (from, to) match {
    case (ByteType, ShortType | IntegerType | LongType) | (ShortType, IntegerType | LongType) |
         (IntegerType, LongType) => true
    case (FloatType, DoubleType) | (ByteType | ShortType | IntegerType, DoubleType) => true
    case (DateType, TimestampNTZType) => true
    case (f: DecimalType, t: DecimalType) =>
      t.scale >= f.scale && t.precision - f.precision >= t.scale - f.scale && t != f
    case (ByteType | ShortType | IntegerType, t: DecimalType) => t.precision - 10 >= t.scale
    case (LongType, t: DecimalType) => t.precision - 20 >= t.scale
    case _ => false
  }

  /** Whether a schema records any type change (DROP FEATURE typeWidening needs none). */
  def hasTypeChanges(t: DataType): Boolean = t match {
    case s: StructType => s.fields.exists(f => f.metadata.contains(TypeChangesKey) || hasTypeChanges(f.dataType))
    case a: ArrayType => hasTypeChanges(a.elementType)
    case m: MapType => hasTypeChanges(m.keyType) || hasTypeChanges(m.valueType)
    case _ => false
  }

  /** The schema without any `delta.typeChanges` metadata. */
  def withoutTypeChanges(t: DataType): DataType = t match {
    case s: StructType => StructType(s.fields.map(f => f.copy(dataType = withoutTypeChanges(f.dataType),
      metadata = new MetadataBuilder().withMetadata(f.metadata).remove(TypeChangesKey).build())))
    case a: ArrayType => a.copy(elementType = withoutTypeChanges(a.elementType))
    case m: MapType => m.copy(keyType = withoutTypeChanges(m.keyType), valueType = withoutTypeChanges(m.valueType))
    case other => other
  }

  /** The container steps Spark's ALTER COLUMN uses for an array's element and a map's key and value. */
  private def step(t: DataType, name: String): Option[DataType] = (t, name.toLowerCase(java.util.Locale.ROOT)) match {
    case (a: ArrayType, "element") => Some(a.elementType)
    case (m: MapType, "key") => Some(m.keyType)
    case (m: MapType, "value") => Some(m.valueType)
    case (s: StructType, _) => s.fields.find(_.name.equalsIgnoreCase(name)).map(_.dataType)
    case _ => None
  }

  private def typeAt(t: DataType, path: List[String], whole: Seq[String], table: String): DataType = path match {
    case Nil => t
    case name :: more => typeAt(step(t, name).getOrElse(throw InvalidTableOperationException(
      "STRATA_COLUMN_NOT_FOUND", Map("column" -> whole.mkString("."), "table" -> table))), more, whole, table)
  }

  /**
   * `t` with the type at `path` replaced by `to`; `record` adds the change to the struct field that owns it, given
   * the array/map steps from that field down to the changed type (PROTOCOL.md's `fieldPath`).
   */
  private def replace(t: DataType, path: List[String], to: DataType,
                      record: (StructField, List[String]) => StructField): DataType = (t, path) match {
    case (_, Nil) => to
    case (s: StructType, name :: more) => StructType(s.fields.map { f =>
      if (!f.name.equalsIgnoreCase(name)) f
      else {
        val changed = f.copy(dataType = replace(f.dataType, more, to, record))
        if (throughStruct(f.dataType, more)) changed else record(changed, more.map(_.toLowerCase(java.util.Locale.ROOT)))
      }
    })
    case (a: ArrayType, _ :: more) => a.copy(elementType = replace(a.elementType, more, to, record))
    case (m: MapType, k :: more) if k.equalsIgnoreCase("key") => m.copy(keyType = replace(m.keyType, more, to, record))
    case (m: MapType, _ :: more) => m.copy(valueType = replace(m.valueType, more, to, record))
    case (other, _) => other
  }

  /** Whether `steps` below a field of type `t` pass through a struct (a deeper field then owns the change). */
  private def throughStruct(t: DataType, steps: List[String]): Boolean = steps match {
    case Nil => false
    case s :: more => t.isInstanceOf[StructType] || step(t, s).exists(throughStruct(_, more))
  }
}
