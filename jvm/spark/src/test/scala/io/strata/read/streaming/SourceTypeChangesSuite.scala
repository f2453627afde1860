package io.strata.read.streaming

import io.strata.log.{ColumnMapping, Metadata}
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

/** [[SourceTypeChanges]]: which widenings between two metadata the streaming source stops at (no Spark session). */
class SourceTypeChangesSuite extends AnyFunSuite {
  private def field(name: String, physical: String, id: Int, tpe: String) =
    s"""{"name":"$name","type":$tpe,"nullable":true,"metadata":{"${ColumnMapping.PhysicalNameKey}":"$physical",""" +
      s""""${ColumnMapping.IdKey}":$id}}"""
  private def struct(fields: String*) = s"""{"type":"struct","fields":[${fields.mkString(",")}]}"""
  private def mapped(schema: String) =
    Metadata(id = "t", schemaString = schema, configuration = Map(ColumnMapping.ModeKey -> "name"))
  private def plain(schema: StructType) = Metadata(id = "t", schemaString = schema.json)

  test("top-level, nested, array element and map value widenings, named by path; equal schemas have none") {
    val before = StructType.fromDDL(
      "id INT, s STRUCT<f: FLOAT, g: STRING>, a ARRAY<SHORT>, m MAP<STRING, DECIMAL(5,2)>")
    val after = StructType.fromDDL(
      "id BIGINT, s STRUCT<f: DOUBLE, g: STRING>, a ARRAY<INT>, m MAP<STRING, DECIMAL(8,3)>")
    assert(SourceTypeChanges.between(plain(before), plain(before)).isEmpty)
    val changes = SourceTypeChanges.between(plain(before), plain(after))
    assert(changes == Seq(TypeWidening("id", IntegerType, LongType), TypeWidening("s.f", FloatType, DoubleType),
      TypeWidening("a.element", ShortType, IntegerType),
      TypeWidening("m.value", DecimalType(5, 2), DecimalType(8, 3))))
    assert(changes.head.describe == "ALTER COLUMN id TYPE BIGINT (was INT)")
    // Not a widening (the schema check refuses it as before): not listed.
    assert(SourceTypeChanges.between(plain(after), plain(before)).isEmpty)
  }

  test("mapped: matched by physical name; a renamed widened column is named by its new name; a re-added one is none") {
    val base = mapped(struct(field("id", "col-1", 1, "\"integer\""), field("v", "col-2", 2, "\"float\"")))
    val renamed = mapped(struct(field("key", "col-1", 1, "\"long\""), field("v", "col-2", 2, "\"float\"")))
    assert(SourceTypeChanges.between(base, renamed) == Seq(TypeWidening("key", IntegerType, LongType)))
    // v dropped and added again as DOUBLE: a new physical column, so a drop and an add, no type change.
    val readded = mapped(struct(field("id", "col-1", 1, "\"integer\""), field("v", "col-3", 3, "\"double\"")))
    assert(SourceTypeChanges.between(base, readded).isEmpty)
  }

  test("readableAs: older files read as the stream's type when it is the same or a widening, nested too") {
    assert(SourceTypeChanges.readableAs(IntegerType, LongType))
    assert(!SourceTypeChanges.readableAs(LongType, IntegerType))
    assert(!SourceTypeChanges.readableAs(IntegerType, StringType))
    assert(SourceTypeChanges.readableAs(StructType.fromDDL("f FLOAT"), StructType.fromDDL("f DOUBLE, g INT")))
    assert(!SourceTypeChanges.readableAs(StructType.fromDDL("f FLOAT, h INT"), StructType.fromDDL("f DOUBLE")))
    assert(SourceTypeChanges.readableAs(ArrayType(ShortType), ArrayType(LongType)))
  }
}
