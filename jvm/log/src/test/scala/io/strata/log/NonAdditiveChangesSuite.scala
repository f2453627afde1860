package io.strata.log

import org.scalatest.funsuite.AnyFunSuite

/** [[NonAdditiveChanges]]: which metadata changes of a mapped table the streaming source must stop at (no Spark). */
class NonAdditiveChangesSuite extends AnyFunSuite {
  private def field(name: String, physical: String, id: Int, tpe: String = "\"long\"") =
    s"""{"name":"$name","type":$tpe,"nullable":true,"metadata":{"${ColumnMapping.PhysicalNameKey}":"$physical",""" +
      s""""${ColumnMapping.IdKey}":$id}}"""
  private def struct(fields: String*) = s"""{"type":"struct","fields":[${fields.mkString(",")}]}"""
  private def meta(schema: String, mode: String = "name") =
    Metadata(id = "t", schemaString = schema, configuration = Map(ColumnMapping.ModeKey -> mode))

  private val base = meta(struct(field("id", "col-1", 1), field("s", "col-2", 2, struct(field("a", "col-3", 3))),
    field("v", "col-4", 4)))

  test("an added column (top level or nested) is additive; the same schema has no change") {
    assert(NonAdditiveChanges.between(base, base).isEmpty)
    val added = meta(struct(field("id", "col-1", 1), field("s", "col-2", 2, struct(field("a", "col-3", 3),
      field("b", "col-6", 6))), field("v", "col-4", 4), field("w", "col-5", 5)))
    assert(NonAdditiveChanges.between(base, added).isEmpty)
  }

  test("a rename keeps the physical column under another name; a nested rename names its path") {
    val renamed = meta(struct(field("id", "col-1", 1), field("t", "col-2", 2, struct(field("z", "col-3", 3))),
      field("v", "col-4", 4)))
    // s -> t is reported once; s.a -> t.z because the field's own name changed too
    assert(NonAdditiveChanges.between(base, renamed) ==
      Seq(NonAdditiveChange("s", Some("t")), NonAdditiveChange("s.a", Some("t.z"))))
    val change = NonAdditiveChanges.between(base, renamed).head
    assert(change.isRename && !change.isDrop && change.describe == "RENAME COLUMN s TO t")
    // a renamed struct whose fields keep their names: only the struct
    val structOnly = meta(struct(field("id", "col-1", 1), field("t", "col-2", 2, struct(field("a", "col-3", 3))),
      field("v", "col-4", 4)))
    assert(NonAdditiveChanges.between(base, structOnly) == Seq(NonAdditiveChange("s", Some("t"))))
  }

  test("a drop is reported outermost only; dropped and re-added under the old name is still a drop") {
    val dropped = meta(struct(field("id", "col-1", 1), field("v", "col-4", 4)))
    assert(NonAdditiveChanges.between(base, dropped) == Seq(NonAdditiveChange("s", None)))
    assert(NonAdditiveChanges.between(base, dropped).head.describe == "DROP COLUMN s")
    val readded = meta(struct(field("id", "col-1", 1), field("s", "col-2", 2, struct(field("a", "col-3", 3))),
      field("v", "col-9", 9)))
    assert(NonAdditiveChanges.between(base, readded) == Seq(NonAdditiveChange("v", None)))
    val nestedDrop = meta(struct(field("id", "col-1", 1), field("s", "col-2", 2, struct(field("b", "col-5", 5))),
      field("v", "col-4", 4)))
    assert(NonAdditiveChanges.between(base, nestedDrop) == Seq(NonAdditiveChange("s.a", None)))
  }

  test("mode id compares physical columns too; without column mapping on either side nothing is reported") {
    val idMode = meta(base.schemaString, "id")
    assert(NonAdditiveChanges.between(idMode, meta(struct(field("id", "col-1", 1)), "id")).map(_.column) ==
      Seq("s", "v"))
    val plain = Metadata(id = "t", schemaString = struct("""{"name":"x","type":"long","nullable":true,"metadata":{}}"""))
    assert(NonAdditiveChanges.between(base, plain).isEmpty && NonAdditiveChanges.between(plain, base).isEmpty)
  }
}
