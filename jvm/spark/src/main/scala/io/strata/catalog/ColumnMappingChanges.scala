package io.strata.catalog

import io.strata.log.{CheckConstraints, ColumnMapping, InvalidTableOperationException, Metadata}
import io.strata.table.SqlPredicates
import org.apache.spark.sql.types.{ArrayType, DataType, MapType, StructType}

/**
 * RENAME COLUMN, DROP COLUMN and column mapping mode changes (ALTER TABLE): metadata only, as in delta-spark. With
 * column mapping the files keep each column under its physical name, so a rename changes only the logical name and
 * a drop only forgets the field (its id is never given again, so a column re-added under the name reads as new).
 * Nested fields are named by their path (`s.f`, `arr.element.f`, `m.value.f`).
 */
object ColumnMappingChanges {
  /** Refuses `what` on a table without column mapping, saying how to turn it on. */
  def requireMapping(mode: String, what: String, table: String): Unit = if (mode == "none")
    throw InvalidTableOperationException("STRATA_UNSUPPORTED_ALTER", s"$what on $table needs column mapping: run " +
      s"ALTER TABLE ... SET TBLPROPERTIES ('${ColumnMapping.ModeKey}' = 'name') first (no data is rewritten; " +
      "readers then need reader version 2). Nothing was changed.")

  def rename(schema: StructType, path: Seq[String], newName: String, table: String): StructType =
    update(schema, path.toList, table) { (s, name) =>
      if (!name.equalsIgnoreCase(newName) && s.fieldNames.exists(_.equalsIgnoreCase(newName)))
        throw InvalidTableOperationException("STRATA_COLUMN_ALREADY_EXISTS",
          Map("column" -> (path.init :+ newName).mkString("."), "table" -> table))
      StructType(s.fields.map(f => if (f.name.equalsIgnoreCase(name)) f.copy(name = newName) else f))
    }

  /** The schema without the field at `path`; None when it does not exist and `ifExists`. */
  def drop(schema: StructType, path: Seq[String], ifExists: Boolean, table: String): Option[StructType] =
    try Some(update(schema, path.toList, table) { (s, name) =>
      if (s.fields.count(!_.name.equalsIgnoreCase(name)) == 0) throw InvalidTableOperationException(
        "STRATA_UNSUPPORTED_ALTER", s"Cannot drop ${path.mkString(".")} of $table: it is the only field of its " +
          "struct (drop the struct instead). Nothing was changed.")
      StructType(s.fields.filterNot(_.name.equalsIgnoreCase(name)))
    }) catch {
      case e: InvalidTableOperationException if ifExists && e.getMessage.contains("STRATA_COLUMN_NOT_FOUND") => None
    }

  /**
   * The metadata after a mode change `from` → `to` (delta-spark's rules): `none` → `name` gives every column its
   * current name as physical name (the files already hold them so) and an id; everything else but no change is
   * refused (`id` needs ids in files written before; leaving column mapping needs a rewrite).
   */
  def changeMode(m: Metadata, from: String, to: String, table: String): Metadata = (from, to) match {
    case (a, b) if a == b => m
    case ("none", "name") =>
      val (json, max) = ColumnMapping.assign(m.schemaString, 0L, keepNames = true)
      m.copy(schemaString = json, configuration = m.configuration + (ColumnMapping.MaxColumnIdKey -> max.toString))
    case _ => throw InvalidTableOperationException("STRATA_UNSUPPORTED_ALTER", s"Cannot change " +
      s"${ColumnMapping.ModeKey} of $table from '$from' to '$to': an existing table can only go from 'none' to " +
      "'name' (a new table may start in 'id'). Nothing was changed.")
  }

  /** Applies `f` to the struct holding the last name of `path`, with that name as the schema spells it. */
  private def update(schema: StructType, path: List[String], table: String)(f: (StructType, String) => StructType)
      : StructType = {
    def notFound = InvalidTableOperationException("STRATA_COLUMN_NOT_FOUND", Map("column" -> path.mkString("."),
      "table" -> table))
    def in(t: DataType, rest: List[String]): DataType = (t, rest) match {
      case (s: StructType, name :: Nil) =>
        f(s, s.fields.find(_.name.equalsIgnoreCase(name)).getOrElse(throw notFound).name)
      case (s: StructType, name :: more) =>
        val field = s.fields.find(_.name.equalsIgnoreCase(name)).getOrElse(throw notFound)
        StructType(s.fields.map(g => if (g eq field) g.copy(dataType = in(g.dataType, more)) else g))
      case (a: ArrayType, "element" :: more) if more.nonEmpty => a.copy(elementType = in(a.elementType, more))
      case (m: MapType, "key" :: more) if more.nonEmpty => m.copy(keyType = in(m.keyType, more))
      case (m: MapType, "value" :: more) if more.nonEmpty => m.copy(valueType = in(m.valueType, more))
      case _ => throw notFound
    }
    in(schema, path).asInstanceOf[StructType]
  }

  /**
   * Refuses to rename or drop a column a CHECK constraint names (as delta-spark does): the constraint's text would
   * name a column that is gone, and every later write would fail on it.
   */
  def requireUnconstrained(conf: Map[String, String], path: Seq[String], what: String, table: String): Unit = {
    val column = path.mkString(".")
    CheckConstraints.of(conf).find(c => SqlPredicates.referencedColumns(c.predicate).exists(r =>
      r.equalsIgnoreCase(column) || r.toLowerCase(java.util.Locale.ROOT).startsWith(column.toLowerCase(
        java.util.Locale.ROOT) + "."))).foreach { c =>
      throw InvalidTableOperationException("STRATA_UNSUPPORTED_ALTER", s"Cannot $what $column of $table: CHECK " +
        s"constraint ${c.name} (${c.predicate}) uses it; drop the constraint first. Nothing was changed.")
    }
  }
}
