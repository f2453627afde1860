package io.strata.table

import io.strata.log.{ColumnMapping, Metadata}
import org.apache.spark.sql.sources
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

/** [[PhysicalSchema]]: logical schemas (pruned ones too) and pushed filters on a mapped table's physical columns. */
class PhysicalSchemaSuite extends AnyFunSuite {
  private def field(name: String, physical: String, id: Long, t: DataType) = StructField(name, t, nullable = true,
    new MetadataBuilder().putString(ColumnMapping.PhysicalNameKey, physical).putLong(ColumnMapping.IdKey, id).build())

  // an upgraded table whose `a` and `b` swapped names: logical `a` is in physical column `b` and the reverse
  private val logical = StructType(Seq(
    field("a", "b", 2, LongType), field("b", "a", 1, LongType),
    field("s", "col-s", 3, StructType(Seq(field("x y", "col-x", 4, IntegerType), field("z", "col-z", 5, StringType)))),
    field("arr", "col-arr", 6, ArrayType(StructType(Seq(field("e", "col-e", 7, IntegerType)))))))

  private def table(mode: String) = TableSchema.of(Metadata(id = "m", schemaString = logical.json,
    configuration = Map(ColumnMapping.ModeKey -> mode))).schema

  test("a pruned logical schema becomes the files' columns: physical names, nested ones too; ids in mode id") {
    val byName = PhysicalSchema.of(table("name")).get
    assert(!byName.byId)
    val pruned = StructType(Seq(StructField("b", LongType), StructField("s", StructType(Seq(
      StructField("z", StringType)))), StructField("arr", ArrayType(StructType(Seq(StructField("e", IntegerType)))))))
    val physical = byName.physical(pruned)
    assert(physical.simpleString == "struct<a:bigint,col-s:struct<col-z:string>,col-arr:array<struct<col-e:int>>>")
    assert(!physical.fields.exists(_.metadata.contains(ColumnMapping.ParquetFieldIdKey)))
    val byId = PhysicalSchema.of(table("id")).get
    assert(byId.byId)
    val withIds = byId.physical(pruned)
    assert(withIds.fields.map(_.metadata.getLong(ColumnMapping.ParquetFieldIdKey)).toSeq == Seq(1L, 3L, 6L))
    assert(withIds("col-s").dataType.asInstanceOf[StructType]("col-z").metadata
      .getLong(ColumnMapping.ParquetFieldIdKey) == 5L)
    // columns that are not the table's (the row index) keep their names
    assert(byName.physical(StructType(Seq(StructField("_tmp_row_index", LongType)))).fieldNames.toSeq ==
      Seq("_tmp_row_index"))
  }

  test("pushed filters name physical columns; a filter naming an unknown column is left out, never kept as is") {
    val m = PhysicalSchema.of(table("name")).get
    assert(m.filters(Seq(sources.EqualTo("a", 1L))) == Seq(sources.EqualTo("b", 1L)))
    assert(m.filters(Seq(sources.IsNotNull("s.`x y`"))) == Seq(sources.IsNotNull("col-s.col-x")))
    assert(m.filters(Seq(sources.Or(sources.EqualTo("a", 1L), sources.LessThan("b", 2L)))) ==
      Seq(sources.Or(sources.EqualTo("b", 1L), sources.LessThan("a", 2L))))
    assert(m.filters(Seq(sources.EqualTo("gone", 1), sources.Not(sources.EqualTo("gone", 2)))).isEmpty)
  }

  test("files are written with physical names and every id; users see no mapping keys") {
    val write = PhysicalSchema.forWrite(table("name"))
    assert(write.fieldNames.toSeq == Seq("b", "a", "col-s", "col-arr"))
    assert(write.fields.map(_.metadata.getLong(ColumnMapping.ParquetFieldIdKey)).toSeq == Seq(2L, 1L, 3L, 6L))
    val shown = PhysicalSchema.strip(table("id"))
    assert(shown.fieldNames.toSeq == Seq("a", "b", "s", "arr"))
    assert(!shown.json.contains("delta.columnMapping") && !shown.json.contains("parquet.field.id"))
    // without column mapping, leftover keys are dropped and nothing is renamed
    val none = table("none")
    assert(PhysicalSchema.of(none).isEmpty && PhysicalSchema.forWrite(none) == none)
    assert(PhysicalSchema.physicalName(none("a")) == "a")
  }

  test("withSchema gives new fields the next ids and fresh names, and keeps Spark's field ids out of the log") {
    val m = Metadata(id = "m", schemaString = logical.json, configuration = Map(ColumnMapping.ModeKey -> "id",
      ColumnMapping.MaxColumnIdKey -> "7"))
    val evolved = PhysicalSchema.withSchema(m, TableSchema.of(m).schema.add("new", StringType))
    assert(evolved.configuration(ColumnMapping.MaxColumnIdKey) == "8")
    val added = TableSchema.of(evolved).schema("new")
    assert(added.metadata.getLong(ColumnMapping.IdKey) == 8L)
    assert(added.metadata.getString(ColumnMapping.PhysicalNameKey).startsWith("col-"))
    assert(!evolved.schemaString.contains(ColumnMapping.ParquetFieldIdKey))
  }
}
