package io.strata.log

import org.scalatest.funsuite.AnyFunSuite

import scala.jdk.CollectionConverters._

/** [[ColumnMapping]]: ids and physical names in the schema JSON, on their own (no Spark). */
class ColumnMappingSuite extends AnyFunSuite {
  private val nested =
    """{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},""" +
      """{"name":"s","type":{"type":"struct","fields":[{"name":"a","type":"integer","nullable":true,"metadata":{}}]},""" +
      """"nullable":true,"metadata":{}},{"name":"arr","type":{"type":"array","elementType":{"type":"struct",""" +
      """"fields":[{"name":"e","type":"integer","nullable":true,"metadata":{}}]},"containsNull":true},""" +
      """"nullable":true,"metadata":{}},{"name":"p","type":"string","nullable":true,"metadata":{}}]}"""

  private def meta(schema: String, conf: Map[String, String]) =
    Metadata(id = "m", schemaString = schema, partitionColumns = Seq("p"), configuration = conf)

  private def physicalNames(json: String): Seq[String] = {
    def walk(n: com.fasterxml.jackson.databind.JsonNode): Seq[String] =
      if (n == null) Nil
      else if (n.path("type").asText == "struct") n.get("fields").elements().asScala.toSeq.flatMap { f =>
        f.path("metadata").path(ColumnMapping.PhysicalNameKey).asText("") +: walk(f.get("type"))
      } else if (n.path("type").asText == "array") walk(n.get("elementType")) else Nil
    walk(ActionCodec.mapper.readTree(json))
  }

  test("assign gives every field, nested ones too, the next ids and fresh col- names; maxColumnId follows") {
    val (json, max) = ColumnMapping.assign(nested, 10L, keepNames = false)
    assert(max == 16L)
    val names = physicalNames(json)
    assert(names.size == 6 && names.forall(_.startsWith("col-")) && names.distinct.size == 6, names)
    val m = meta(json, Map(ColumnMapping.ModeKey -> "name", ColumnMapping.MaxColumnIdKey -> "16"))
    ColumnMapping.checkComplete(m)
    assert(ColumnMapping.maxColumnId(m) == 16L)
    // assigning again changes nothing: every field has its id and name
    assert(ColumnMapping.assign(json, 16L, keepNames = false) == ((ActionCodec.mapper.writeValueAsString(
      ActionCodec.mapper.readTree(json)), 16L)))
    assert(ColumnMapping.physicalPartitionColumns(m) == Seq(names.last))
  }

  test("an upgrade keeps the current names as physical names (the files already hold them so)") {
    val (json, max) = ColumnMapping.assign(nested, 0L, keepNames = true)
    assert(max == 6L)
    assert(physicalNames(json) == Seq("id", "s", "a", "arr", "e", "p"))
  }

  test("maxColumnId never goes below an id in the schema, and a stated larger one stays") {
    val (json, _) = ColumnMapping.assign(nested, 0L, keepNames = false)
    assert(ColumnMapping.maxColumnId(meta(json, Map(ColumnMapping.MaxColumnIdKey -> "2"))) == 6L)
    assert(ColumnMapping.maxColumnId(meta(json, Map(ColumnMapping.MaxColumnIdKey -> "40"))) == 40L)
  }

  test("a mapped table whose field lacks its physical name, or an unknown mode, is a corrupt log") {
    val e = intercept[CorruptLogException](ColumnMapping.checkComplete(meta(nested,
      Map(ColumnMapping.ModeKey -> "id"))))
    assert(e.getMessage.contains("'id'") && e.getMessage.contains(ColumnMapping.PhysicalNameKey), e.getMessage)
    val m = intercept[CorruptLogException](ColumnMapping.mode(meta(nested, Map(ColumnMapping.ModeKey -> "names"))))
    assert(m.getMessage.contains("none, name, id"), m.getMessage)
    // without column mapping nothing is required, and partition values are keyed by the logical names
    ColumnMapping.checkComplete(meta(nested, Map.empty))
    assert(ColumnMapping.physicalPartitionColumns(meta(nested, Map.empty)) == Seq("p"))
  }

  test("strip removes the mapping keys and Spark's field id key, nothing else") {
    val (json, _) = ColumnMapping.assign(nested, 0L, keepNames = false)
    val stripped = ColumnMapping.strip(json.replace("\"metadata\":{\"delta.columnMapping.id\":1,",
      "\"metadata\":{\"comment\":\"c\",\"parquet.field.id\":1,\"delta.columnMapping.id\":1,"))
    assert(!stripped.contains("delta.columnMapping") && !stripped.contains("parquet.field.id"), stripped)
    assert(stripped.contains("\"comment\":\"c\""), stripped)
  }
}
