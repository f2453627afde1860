package io.strata.table

import io.strata.log.{Metadata, Protocol}
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

/**
 * Schema evolution's widenings ([[TypeWideningChanges.evolve]]) inside structs, arrays and maps, and the casts of
 * narrower nested data ([[TableSchema.canWiden]]); no Spark session. tests/test_type_widening_evolution.py compares
 * the same with delta-spark.
 */
class TypeWideningEvolutionSuite extends AnyFunSuite {
  private val protocol = Protocol(3, 7, Some(Set("typeWidening")), Some(Set("typeWidening")))
  private val table = StructType.fromDDL("id INT, s STRUCT<x: INT, d: DATE, t: STRING>, arr ARRAY<INT>, " +
    "m MAP<SMALLINT, INT>, sa ARRAY<STRUCT<z: TINYINT>>, p SMALLINT")
  private def meta(enabled: Boolean, conf: Map[String, String] = Map.empty) = Metadata(id = "t",
    schemaString = table.json, partitionColumns = Seq("p"),
    configuration = conf ++ (if (enabled) Map("delta.enableTypeWidening" -> "true") else Map.empty))
  private def evolve(data: String, m: Metadata = meta(enabled = true)) =
    TypeWideningChanges.evolve(table, StructType.fromDDL(data), m, protocol, 5, "t")
  private def changes(s: StructType, column: String): Seq[(String, String, Option[String])] = {
    val f = s(column)
    if (!f.metadata.contains("delta.typeChanges")) Nil
    else f.metadata.getMetadataArray("delta.typeChanges").toSeq.map(c => (c.getString("fromType"),
      c.getString("toType"), Option.when(c.contains("fieldPath"))(c.getString("fieldPath"))))
  }

  test("every wider leaf widens, recorded on its nearest struct field with fieldPath, a map's key before its value") {
    val out = evolve("ID BIGINT, s STRUCT<x: BIGINT, d: TIMESTAMP_NTZ, t: STRING>, arr ARRAY<DOUBLE>, " +
      "m MAP<INT, BIGINT>, sa ARRAY<STRUCT<z: SMALLINT>>, p INT")
    assert(out.toDDL == StructType.fromDDL("id BIGINT, s STRUCT<x: BIGINT, d: TIMESTAMP_NTZ, t: STRING>, " +
      "arr ARRAY<DOUBLE>, m MAP<INT, BIGINT>, sa ARRAY<STRUCT<z: SMALLINT>>, p SMALLINT").toDDL)
    assert(changes(out, "id") == Seq(("integer", "long", None)))
    assert(changes(out, "arr") == Seq(("integer", "double", Some("element")))) // no "same family" limit (4.4)
    assert(changes(out, "m") == Seq(("short", "integer", Some("key")), ("integer", "long", Some("value"))))
    assert(changes(out, "s").isEmpty && changes(out, "sa").isEmpty && changes(out, "p").isEmpty)
    val s = out("s").dataType.asInstanceOf[StructType]
    assert(changes(s, "x") == Seq(("integer", "long", None)) && changes(s, "d") ==
      Seq(("date", "timestamp_ntz", None)) && changes(s, "t").isEmpty)
    val z = out("sa").dataType.asInstanceOf[ArrayType].elementType.asInstanceOf[StructType]
    assert(changes(z, "z") == Seq(("byte", "short", None)))
  }

  test("delta-spark's allowAutomaticWidening: same_family_type keeps int to double out, never widens nothing") {
    val data = StructType.fromDDL("ID BIGINT, arr ARRAY<DOUBLE>, m MAP<INT, BIGINT>, s STRUCT<x: BIGINT, d: " +
      "TIMESTAMP_NTZ>")
    val family = TypeWideningChanges.evolve(table, data, meta(enabled = true), protocol, 5, "t", "same_family_type")
    assert(family.toDDL == StructType.fromDDL("id BIGINT, s STRUCT<x: BIGINT, d: TIMESTAMP_NTZ, t: STRING>, " +
      "arr ARRAY<INT>, m MAP<INT, BIGINT>, sa ARRAY<STRUCT<z: TINYINT>>, p SMALLINT").toDDL)
    assert(changes(family, "arr").isEmpty && changes(family, "id") == Seq(("integer", "long", None)))
    assert(TypeWideningChanges.evolve(table, data, meta(enabled = true), protocol, 5, "t", "never") == table)
  }

  test("narrower, unrelated or missing leaves and a table without type widening change nothing") {
    assert(evolve("s STRUCT<x: TINYINT, d: DATE, t: STRING>, arr ARRAY<STRING>, m MAP<SMALLINT, DECIMAL(5, 1)>") ==
      table)
    assert(evolve("s STRUCT<x: BIGINT>, arr ARRAY<BIGINT>", meta(enabled = false)) == table)
    // Only the field the data holds: s.d keeps DATE when the data's struct lacks it.
    val partial = evolve("s STRUCT<x: BIGINT>")
    assert(partial("s").dataType.simpleString == "struct<x:bigint,d:date,t:string>")
  }

  test("canWiden: nested narrower data casts leaf by leaf, fields in the table's order only") {
    def can(from: String, to: String) = TableSchema.canWiden(DataType.fromDDL(from), DataType.fromDDL(to))
    assert(can("STRUCT<x: INT, d: DATE>", "STRUCT<X: BIGINT, d: TIMESTAMP_NTZ>"))
    assert(can("ARRAY<STRUCT<z: TINYINT>>", "ARRAY<STRUCT<z: SMALLINT>>"))
    assert(can("MAP<SMALLINT, INT>", "MAP<INT, DOUBLE>"))
    assert(!can("STRUCT<d: DATE, x: INT>", "STRUCT<x: BIGINT, d: TIMESTAMP_NTZ>")) // by position: refused
    assert(!can("STRUCT<x: INT>", "STRUCT<x: BIGINT, y: INT>"))
    assert(!can("ARRAY<BIGINT>", "ARRAY<INT>") && !can("MAP<STRING, INT>", "MAP<INT, INT>"))
    assert(!can("STRUCT<d: DATE>", "STRUCT<d: TIMESTAMP>")) // the session zone would change its meaning
  }
}
