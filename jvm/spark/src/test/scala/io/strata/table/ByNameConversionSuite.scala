package io.strata.table

import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.{CatalystTypeConverters, InternalRow}
import org.apache.spark.sql.catalyst.expressions.{BoundReference, Expression, UnsafeProjection}
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

/**
 * Data values turned into the table's type by name at every level ([[ByNameConversion]]), evaluated both
 * interpreted and through a generated projection (as the writers run them); no Spark session. What delta-spark's
 * writes do with the same data (measured in its peer, stop 38): nested fields by name in any order, a missing
 * nullable field null, inside arrays too.
 */
class ByNameConversionSuite extends AnyFunSuite {
  private def ddl(s: String): DataType = DataType.fromDDL(s)

  private def conversion(from: DataType, to: DataType): Expression =
    ByNameConversion(BoundReference(0, from, nullable = true), from, to, "c", "UTC")
      .fold(m => fail(s"refused: $m"), identity)

  /** `value` of type `from` converted to `to`, interpreted and generated: both must agree. */
  private def convert(value: Any, from: DataType, to: DataType): Any = {
    val e = conversion(from, to)
    val row = InternalRow(CatalystTypeConverters.createToCatalystConverter(from)(value))
    val back = CatalystTypeConverters.createToScalaConverter(to)
    val interpreted = back(e.eval(row))
    val generated = back(UnsafeProjection.create(Seq(e)).apply(row).get(0, to))
    assert(interpreted == generated, "interpreted and generated evaluation differ")
    interpreted
  }

  test("struct fields by name, in any order; a nullable field the data lacks is null; a null struct stays null") {
    val to = ddl("STRUCT<a: INT, b: STRING, c: DOUBLE>")
    assert(convert(Row("x", 1), ddl("STRUCT<b: STRING, a: INT>"), to) == Row(1, "x", null))
    assert(convert(Row(2, "y", 1.5), ddl("STRUCT<A: INT, B: STRING, C: DOUBLE>"), to) == Row(2, "y", 1.5))
    assert(convert(null, ddl("STRUCT<b: STRING, a: INT>"), to) == null)
  }

  test("inside arrays and map values, nested twice, with narrower leaves widened") {
    val to = ddl("ARRAY<STRUCT<x: BIGINT, y: INT, z: STRUCT<p: INT, q: STRING>>>")
    val from = ddl("ARRAY<STRUCT<y: INT, x: INT, z: STRUCT<q: STRING>>>")
    assert(convert(Seq(Row(3, 4, Row("q1")), null), from, to) == Seq(Row(4L, 3, Row(null, "q1")), null))
    val mapTo = ddl("MAP<STRING, STRUCT<a: INT, b: INT>>")
    assert(convert(Map("k" -> Row(1), "n" -> null), ddl("MAP<STRING, STRUCT<a: INT>>"), mapTo) ==
      Map("k" -> Row(1, null), "n" -> null))
    assert(convert(Map(1.toShort -> 2), ddl("MAP<SMALLINT, INT>"), ddl("MAP<INT, BIGINT>")) == Map(1 -> 2L))
  }

  test("the same type is the column itself: no expression at all") {
    val t = ddl("STRUCT<a: INT, s: ARRAY<STRUCT<b: STRING>>>")
    val in = BoundReference(0, t, nullable = true)
    assert(ByNameConversion(in, t, t, "c", "UTC") == Right(in))
  }

  test("refusals name the field: one the table lacks, a NOT NULL one the data lacks, a narrowing, a map key") {
    def refused(from: String, to: DataType): ByNameConversion.Mismatch =
      ByNameConversion(BoundReference(0, ddl(from), nullable = true), ddl(from), to, "c", "UTC")
        .fold(identity, e => fail(s"converted: $e"))
    assert(refused("STRUCT<a: INT, extra: INT>", ddl("STRUCT<a: INT>")) ==
      ByNameConversion.Mismatch("c", "field 'extra' is not in the table (use option mergeSchema to add it)"))
    val required = StructType(Seq(StructField("a", IntegerType), StructField("k", IntegerType, nullable = false)))
    assert(refused("STRUCT<a: INT>", required) == ByNameConversion.Mismatch("c.k", "the data lacks this NOT NULL field"))
    assert(refused("ARRAY<STRUCT<a: BIGINT>>", ddl("ARRAY<STRUCT<a: INT>>")) ==
      ByNameConversion.Mismatch("c.element.a", "bigint in the data cannot be written as int"))
    assert(refused("MAP<BIGINT, INT>", ddl("MAP<INT, INT>")).path == "c.key")
  }

  test("merged: the table's fields in their order, then the data's new ones, inside arrays and map values") {
    val table = ddl("STRUCT<a: INT, s: STRUCT<x: INT>, arr: ARRAY<STRUCT<e: INT>>, m: MAP<STRING, STRUCT<v: INT>>>")
    val data = ddl("STRUCT<n: STRING, s: STRUCT<y: STRING, x: INT>, arr: ARRAY<STRUCT<f: INT, e: INT>>, " +
      "m: MAP<STRING, STRUCT<w: INT, v: INT>>, a: INT>")
    val out = ByNameConversion.merged(table, data)
    assert(out.simpleString == "struct<a:int,s:struct<x:int,y:string>,arr:array<struct<e:int,f:int>>," +
      "m:map<string,struct<v:int,w:int>>,n:string>")
    // the data then converts into the merged type by name
    assert(convert(Row("new", Row("yy", 1), Seq(Row(2, 3)), Map("k" -> Row(4, 5)), 9), data, out) ==
      Row(9, Row(1, "yy"), Seq(Row(3, 2)), Map("k" -> Row(5, 4)), "new"))
  }
}
