package io.strata.table

import io.strata.log.ColumnMapping
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute
import org.apache.spark.sql.sources
import org.apache.spark.sql.types._

/**
 * Column mapping on Spark's side: `table` is a table schema as [[TableSchema.of]] reads it from a mapped table (each
 * field's metadata has its physical name, and in mode `id` its Parquet field id, see [[ColumnMapping]]). Any schema
 * of logical names that is part of it (a pruned one, with nested fields left out) becomes the schema of the same
 * columns in the files: physical names, and field ids when `byId`. Columns that are not the table's (row index,
 * metadata columns) keep their names. Rows are positional, so a reader asked for the physical schema returns the
 * logical one's rows.
 */
final case class PhysicalSchema(table: StructType, byId: Boolean) {
  def physical(logical: StructType): StructType = PhysicalSchema.mapStruct(logical, Some(table))

  /** Spark's pushed filters on logical names, on physical ones; a filter naming a column not found is left out. */
  def filters(fs: Seq[sources.Filter]): Seq[sources.Filter] = fs.flatMap(filter)

  private def column(name: String): Option[String] = {
    val parts = UnresolvedAttribute.parseAttributeName(name)
    var t: DataType = table
    val mapped = parts.map { p =>
      t match {
        case s: StructType => s.fields.find(_.name == p) match {
          case Some(f) => t = f.dataType; PhysicalSchema.physicalName(f)
          case None => return None
        }
        case _ => return None
      }
    }
    Some(mapped.map(p => if (p.contains(".") || p.contains("`")) "`" + p.replace("`", "``") + "`" else p)
      .mkString("."))
  }

  private def filter(f: sources.Filter): Option[sources.Filter] = {
    import org.apache.spark.sql.sources._
    f match {
      case EqualTo(a, v) => column(a).map(EqualTo(_, v))
      case EqualNullSafe(a, v) => column(a).map(EqualNullSafe(_, v))
      case GreaterThan(a, v) => column(a).map(GreaterThan(_, v))
      case GreaterThanOrEqual(a, v) => column(a).map(GreaterThanOrEqual(_, v))
      case LessThan(a, v) => column(a).map(LessThan(_, v))
      case LessThanOrEqual(a, v) => column(a).map(LessThanOrEqual(_, v))
      case In(a, vs) => column(a).map(In(_, vs))
      case IsNull(a) => column(a).map(IsNull(_))
      case IsNotNull(a) => column(a).map(IsNotNull(_))
      case StringStartsWith(a, v) => column(a).map(StringStartsWith(_, v))
      case StringEndsWith(a, v) => column(a).map(StringEndsWith(_, v))
      case StringContains(a, v) => column(a).map(StringContains(_, v))
      case And(l, r) => for (x <- filter(l); y <- filter(r)) yield And(x, y)
      case Or(l, r) => for (x <- filter(l); y <- filter(r)) yield Or(x, y)
      case Not(c) => filter(c).map(Not(_))
      case AlwaysTrue() | AlwaysFalse() => Some(f)
      case _ => None
    }
  }
}

object PhysicalSchema {
  /** The mapping of a table schema read by [[TableSchema.of]], or None when the table does not map columns. */
  def of(table: StructType): Option[PhysicalSchema] =
    if (!table.fields.exists(_.metadata.contains(ColumnMapping.PhysicalNameKey))) None
    else Some(PhysicalSchema(table, byId = table.fields.exists(_.metadata.contains(ColumnMapping.ParquetFieldIdKey))))

  /**
   * The schema data files are written with: physical names and, in both modes, each field's id as its Parquet field
   * id (as delta-spark writes them); `table` itself without column mapping. Types and nullability are `table`'s.
   */
  def forWrite(table: StructType): StructType = of(table).fold(table) { _ =>
    PhysicalSchema(withFieldIds(table), byId = true).physical(table)
  }

  /**
   * `m` with schema `schema` (columns of the table's schema, and new ones): on a table with column mapping each new
   * field (nested too) gets the next id and a fresh `col-<uuid>` physical name, and maxColumnId follows; the log
   * schema never holds Spark's Parquet field id keys.
   */
  def withSchema(m: io.strata.log.Metadata, schema: StructType): io.strata.log.Metadata =
    if (!ColumnMapping.enabled(m)) m.copy(schemaString = schema.json) else {
      val (json, max) = ColumnMapping.assign(withoutFieldIds(schema).json, ColumnMapping.maxColumnId(m),
        keepNames = false)
      m.copy(schemaString = json, configuration = m.configuration + (ColumnMapping.MaxColumnIdKey -> max.toString))
    }

  private def withoutFieldIds(s: StructType): StructType = StructType(s.fields.map { f =>
    val m = if (f.metadata.contains(ColumnMapping.ParquetFieldIdKey))
      new MetadataBuilder().withMetadata(f.metadata).remove(ColumnMapping.ParquetFieldIdKey).build() else f.metadata
    f.copy(dataType = mapType(f.dataType, withoutFieldIds), metadata = m)
  })

  /** `logical` (part of `table`) with physical names; itself when `table` does not map columns. */
  def renamed(table: StructType, logical: StructType): StructType = of(table).fold(logical)(_.physical(logical))

  /** The names of `columns` (top-level, logical) in the log and in data files. */
  def physicalColumns(table: StructType, columns: Seq[String]): Seq[String] =
    columns.map(c => table.fields.find(_.name == c).fold(c)(physicalName))

  /** The name a column has in data files, `partitionValues` and statistics. */
  def physicalName(f: StructField): String =
    if (f.metadata.contains(ColumnMapping.PhysicalNameKey)) f.metadata.getString(ColumnMapping.PhysicalNameKey)
    else f.name

  /** In mode `id`: the schema with each field's column mapping id as its Parquet field id (Spark's key). */
  def withFieldIds(s: StructType): StructType = StructType(s.fields.map { f =>
    val withId = if (f.metadata.contains(ColumnMapping.IdKey)) new MetadataBuilder().withMetadata(f.metadata)
      .putLong(ColumnMapping.ParquetFieldIdKey, f.metadata.getLong(ColumnMapping.IdKey)).build() else f.metadata
    f.copy(dataType = mapType(f.dataType, withFieldIds), metadata = withId)
  })

  /** The schema without column mapping keys: what users see (a DataFrame read from the table carries no mapping). */
  def strip(s: StructType): StructType = StructType(s.fields.map { f =>
    val m = if (Seq(ColumnMapping.PhysicalNameKey, ColumnMapping.IdKey, ColumnMapping.ParquetFieldIdKey)
      .exists(f.metadata.contains)) new MetadataBuilder().withMetadata(f.metadata)
      .remove(ColumnMapping.PhysicalNameKey).remove(ColumnMapping.IdKey).remove(ColumnMapping.ParquetFieldIdKey).build()
      else f.metadata
    f.copy(dataType = mapType(f.dataType, strip), metadata = m)
  })

  /** `f` applied to every struct inside `t` (through arrays and maps). */
  private def mapType(t: DataType, f: StructType => StructType): DataType = t match {
    case s: StructType => f(s)
    case a: ArrayType => a.copy(elementType = mapType(a.elementType, f))
    case m: MapType => m.copy(keyType = mapType(m.keyType, f), valueType = mapType(m.valueType, f))
    case other => other
  }

  private def mapStruct(logical: StructType, table: Option[StructType]): StructType = StructType(logical.fields.map { f =>
    table.flatMap(_.fields.find(_.name == f.name)) match {
      case None => f
      case Some(t) =>
        val meta = new MetadataBuilder().withMetadata(f.metadata)
        if (t.metadata.contains(ColumnMapping.ParquetFieldIdKey))
          meta.putLong(ColumnMapping.ParquetFieldIdKey, t.metadata.getLong(ColumnMapping.ParquetFieldIdKey))
        StructField(physicalName(t), mapData(f.dataType, Some(t.dataType)), f.nullable, meta.build())
    }
  })

  private def mapData(logical: DataType, table: Option[DataType]): DataType = (logical, table) match {
    case (s: StructType, Some(t: StructType)) => mapStruct(s, Some(t))
    case (a: ArrayType, Some(t: ArrayType)) => a.copy(elementType = mapData(a.elementType, Some(t.elementType)))
    case (m: MapType, Some(t: MapType)) =>
      m.copy(keyType = mapData(m.keyType, Some(t.keyType)), valueType = mapData(m.valueType, Some(t.valueType)))
    case (other, _) => other
  }
}
