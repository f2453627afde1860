package io.strata.table

import io.strata.log.{ColumnMapping, CorruptLogException, InvalidTableOperationException, Metadata}
import org.apache.spark.sql.types._

import java.util.Locale

/** A table's Spark schema and partitioning, read from its metadata, and the checks writes make against them. */
final case class TableSchema(schema: StructType, partitionColumns: Seq[String]) {
  def partitionSchema: StructType = StructType(partitionColumns.map(c => schema(c)))
}

object TableSchema {
  /**
   * The table's schema with its column mapping ([[PhysicalSchema]]): mode `name` keeps each field's physical name and
   * id in its metadata, mode `id` also gives each field its id as Parquet field id, and without column mapping any
   * mapping keys left in the metadata are dropped (the protocol says to ignore them then).
   */
  def of(m: Metadata): TableSchema = {
    val mode = ColumnMapping.mode(m)
    val parsed = try DataType.fromJson(m.schemaString).asInstanceOf[StructType] catch {
      case e: Exception => throw CorruptLogException("STRATA_CORRUPT_LOG",
        s"The table schema in metaData ${m.id} is unreadable: $e", e)
    }
    ColumnMapping.checkComplete(m)
    val schema = mode match {
      case "none" => if (m.schemaString.contains(ColumnMapping.PhysicalNameKey)) PhysicalSchema.strip(parsed) else parsed
      case "id" => PhysicalSchema.withFieldIds(parsed)
      case _ => parsed
    }
    m.partitionColumns.foreach { c =>
      if (!schema.fieldNames.contains(c)) throw CorruptLogException("STRATA_CORRUPT_LOG",
        s"Partition column '$c' of metaData ${m.id} is not in the table schema.")
    }
    TableSchema(schema, m.partitionColumns)
  }

  /** Validates partition columns for a new table and returns them with the schema's spelling. */
  def resolvePartitionColumns(schema: StructType, columns: Seq[String]): Seq[String] = {
    val resolved = columns.map { c =>
      val f = schema.fields.find(_.name.equalsIgnoreCase(c)).getOrElse(throw InvalidTableOperationException("STRATA_INVALID_PARTITIONING",
        s"Partition column '$c' is not a column of the data; columns are ${schema.fieldNames.mkString(", ")}."))
      f.dataType match {
        case _: StructType | _: ArrayType | _: MapType | _: VariantType => throw InvalidTableOperationException("STRATA_INVALID_PARTITIONING",
          s"Partition column '${f.name}' has type ${f.dataType.simpleString}; partition columns must be of an atomic type.")
        case _ => f.name
      }
    }
    if (resolved.distinct.size != resolved.size) throw InvalidTableOperationException("STRATA_INVALID_PARTITIONING",
      s"Partition columns ${columns.mkString(", ")} name a column twice.")
    if (resolved.size == schema.size && schema.nonEmpty) throw InvalidTableOperationException(
      "STRATA_INVALID_PARTITIONING",
      "Cannot partition by every column: at least one column must hold data.")
    resolved
  }

  /**
   * One table column fed by a write: the data column that feeds it (None: the data lacks the nullable column, which
   * is written as nulls, as delta-spark does) and whether it must be converted to the table's type.
   */
  final case class ColumnFeed(table: StructField, source: Option[String], cast: Boolean)

  /** The outcome of matching a write's data against a table schema. */
  final case class SchemaMatch(feeds: Seq[ColumnFeed], newSchema: Option[StructType])

  /**
   * Matches `data` against table schema `table`: columns by name (case-insensitively, as Spark resolves names), types
   * equal or safely widened to the table's (int into bigint, float into double, ...), nullable columns the data lacks
   * written as nulls. With `merge`, data columns the table lacks are appended to the schema. Anything else is an error
   * listing every problem.
   */
  def matchColumns(table: StructType, data: StructType, tableName: String, merge: Boolean = false): SchemaMatch = {
    val byLower = data.fields.groupBy(_.name.toLowerCase(Locale.ROOT))
    byLower.collectFirst { case (_, fs) if fs.length > 1 => fs.map(_.name) }.foreach { names =>
      throw InvalidTableOperationException("STRATA_DUPLICATE_COLUMNS", Map("columns" -> names.mkString(" and ")))
    }
    val problems = Seq.newBuilder[String]
    val feeds = table.fields.toSeq.flatMap { f =>
      byLower.get(f.name.toLowerCase(Locale.ROOT)).map(_.head) match {
        case None if f.nullable => Some(ColumnFeed(f, None, cast = false))
        case None =>
          problems += s"column '${f.name}' (${f.dataType.simpleString}) is NOT NULL but missing from the data"; None
        case Some(d) if sameType(f.dataType, d.dataType) && ByNameConversion.isIdentity(d.dataType, f.dataType) =>
          Some(ColumnFeed(f, Some(d.name), cast = false))
        case Some(d) =>
          // Nested fields by name, as delta-spark's writes resolve them; with merge, the data's new ones added.
          val target = if (merge) f.copy(dataType = ByNameConversion.merged(f.dataType, d.dataType)) else f
          ByNameConversion.mismatch(d.dataType, target.dataType, f.name) match {
            case None => Some(ColumnFeed(target, Some(d.name), cast = true))
            case Some(m) if m.path == f.name && !isNested(f.dataType) =>
              problems += s"column '${f.name}' is ${f.dataType.simpleString} in the table but " +
                s"${d.dataType.simpleString} in the data"
              None
            case Some(m) =>
              problems += s"${if (m.path == f.name) "column" else "field"} '${m.path}': ${m.problem}"
              None
          }
      }
    }
    val tableLower = table.fieldNames.map(_.toLowerCase(Locale.ROOT)).toSet
    val extra = data.fields.filterNot(d => tableLower(d.name.toLowerCase(Locale.ROOT)))
    if (!merge) extra.foreach { d =>
      problems += s"column '${d.name}' (${d.dataType.simpleString}) is not in the table (use option mergeSchema " +
        "to add it)"
    }
    val all = problems.result()
    if (all.nonEmpty) throw InvalidTableOperationException("STRATA_SCHEMA_MISMATCH", Map("table" -> tableName,
      "problems" -> all.mkString("; "), "tableSchema" -> table.toDDL, "dataSchema" -> data.toDDL))
    val evolved = feeds.map(_.table)
    if (merge && (extra.nonEmpty || evolved != table.fields.toSeq)) {
      val added = extra.map(d => StructField(d.name, asNullable(d.dataType), nullable = true, d.metadata))
      SchemaMatch(feeds ++ added.map(f => ColumnFeed(f, Some(f.name), cast = false)), Some(StructType(evolved ++ added)))
    } else SchemaMatch(feeds, None)
  }

  private def isNested(t: DataType): Boolean = t match {
    case _: StructType | _: ArrayType | _: MapType => true
    case _ => false
  }

  /**
   * Widening that never loses information, done by casting the data to the table's type. Inside structs (the same
   * fields in the same order: a cast goes by position), arrays and maps each leaf is the same type or widens.
   */
  def canWiden(from: DataType, to: DataType): Boolean = (from, to) match {
    case (f: StructType, t: StructType) => f.length == t.length && f.fields.zip(t.fields).forall { case (a, b) =>
      a.name.equalsIgnoreCase(b.name) && sameOrWider(a.dataType, b.dataType)
    }
    case (f: ArrayType, t: ArrayType) => sameOrWider(f.elementType, t.elementType)
    case (f: MapType, t: MapType) => sameOrWider(f.keyType, t.keyType) && sameOrWider(f.valueType, t.valueType)
    case (ByteType, ShortType | IntegerType | LongType) => true
    case (ShortType, IntegerType | LongType) => true
    case (IntegerType, LongType) => true
    case (FloatType, DoubleType) => true
    case (ByteType | ShortType | IntegerType, DoubleType) => true
    case (DateType, TimestampType) => false // changes meaning with the session time zone: refuse
    case (DateType, TimestampNTZType) => true // midnight of that day, whatever the zone
    case (f: DecimalType, t: DecimalType) => t.scale >= f.scale && (t.precision - t.scale) >= (f.precision - f.scale)
    case (ByteType, t: DecimalType) => t.precision - t.scale >= 3
    case (ShortType, t: DecimalType) => t.precision - t.scale >= 5
    case (IntegerType, t: DecimalType) => t.precision - t.scale >= 10
    case (LongType, t: DecimalType) => t.precision - t.scale >= 20
    case (NullType, _) => true
    case _ => false
  }

  private def sameOrWider(from: DataType, to: DataType): Boolean = sameType(from, to) || canWiden(from, to)

  /** The same type with every field, element and value nullable (how path writes store a DataFrame's schema). */
  def asNullable(dt: DataType): DataType = dt match {
    case s: StructType => StructType(s.fields.map(f => f.copy(dataType = asNullable(f.dataType), nullable = true)))
    case a: ArrayType => ArrayType(asNullable(a.elementType), containsNull = true)
    case m: MapType => MapType(asNullable(m.keyType), asNullable(m.valueType), valueContainsNull = true)
    case other => other
  }

  /** Type equality ignoring nullability (the table's nullability is enforced separately). */
  private def sameType(a: DataType, b: DataType): Boolean = (a, b) match {
    case (x: StructType, y: StructType) =>
      x.length == y.length && x.fields.zip(y.fields).forall { case (f, g) =>
        f.name.equalsIgnoreCase(g.name) && sameType(f.dataType, g.dataType)
      }
    case (x: ArrayType, y: ArrayType) => sameType(x.elementType, y.elementType)
    case (x: MapType, y: MapType) => sameType(x.keyType, y.keyType) && sameType(x.valueType, y.valueType)
    case _ => a == b
  }
}
