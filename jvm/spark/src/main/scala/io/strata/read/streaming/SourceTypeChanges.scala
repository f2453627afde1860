package io.strata.read.streaming

import io.strata.log.Metadata
import io.strata.table.{PhysicalSchema, TableSchema, TypeWideningChanges}
import org.apache.spark.sql.types.{ArrayType, DataType, MapType, StructType}

/** A column (logical path after the change, array/map steps as ALTER COLUMN spells them) whose type was widened. */
final case class TypeWidening(column: String, from: DataType, to: DataType) {
  def describe: String = s"ALTER COLUMN $column TYPE ${to.sql} (was ${from.sql})"
}

/**
 * The type widenings (PROTOCOL.md "Type Widening", `ALTER COLUMN ... TYPE`, schema evolution) between two schemas of
 * a table, for the streaming source: a widening changes the schema a running query was planned with. Fields are
 * matched by physical name, so on a column-mapped table a column dropped and re-added with another type is a drop
 * and an add (as delta-spark counts it), not a type change. Other type changes are not listed here: the source's
 * schema check refuses them as before.
 */
object SourceTypeChanges {
  def between(from: Metadata, to: Metadata): Seq[TypeWidening] = {
    val logical = TableSchema.of(to).schema
    struct(physical(from), logical, PhysicalSchema.forWrite(logical), Nil)
  }

  /** Whether data of type `from` (an older file's) reads as `to`: the same type, or widened at some fields. */
  def readableAs(from: DataType, to: DataType): Boolean = (from, to) match {
    case (f: StructType, t: StructType) => t.fields.forall(tf =>
      f.fields.find(_.name.equalsIgnoreCase(tf.name)).forall(ff => readableAs(ff.dataType, tf.dataType))) &&
      f.fields.forall(ff => t.fields.exists(_.name.equalsIgnoreCase(ff.name)))
    case (f: ArrayType, t: ArrayType) => readableAs(f.elementType, t.elementType)
    case (f: MapType, t: MapType) => readableAs(f.keyType, t.keyType) && readableAs(f.valueType, t.valueType)
    case _ => from.catalogString == to.catalogString || TypeWideningChanges.supported(from, to)
  }

  private def physical(m: Metadata): StructType = PhysicalSchema.forWrite(TableSchema.of(m).schema)

  /** `logical` and `phys` are the new schema's fields in logical and physical names (the same order). */
  private def struct(old: StructType, logical: StructType, phys: StructType, path: List[String]): Seq[TypeWidening] =
    logical.fields.toSeq.zip(phys.fields).flatMap { case (l, p) =>
      old.fields.find(_.name.equalsIgnoreCase(p.name)).toSeq
        .flatMap(o => changes(o.dataType, l.dataType, p.dataType, path :+ l.name))
    }

  private def changes(old: DataType, logical: DataType, phys: DataType, path: List[String]): Seq[TypeWidening] =
    (old, logical, phys) match {
      case (o: StructType, l: StructType, p: StructType) => struct(o, l, p, path)
      case (o: ArrayType, l: ArrayType, p: ArrayType) =>
        changes(o.elementType, l.elementType, p.elementType, path :+ "element")
      case (o: MapType, l: MapType, p: MapType) => changes(o.keyType, l.keyType, p.keyType, path :+ "key") ++
        changes(o.valueType, l.valueType, p.valueType, path :+ "value")
      case (o, _, p) if o != p && TypeWideningChanges.supported(o, p) => Seq(TypeWidening(path.mkString("."), o, p))
      case _ => Nil
    }
}
