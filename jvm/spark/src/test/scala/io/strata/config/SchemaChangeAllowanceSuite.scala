package io.strata.config

import io.strata.log.{InvalidTableOperationException, Metadata}
import io.strata.read.streaming.ColumnChangeGuard
import org.apache.spark.sql.types.StructType
import org.scalatest.funsuite.AnyFunSuite

/**
 * The streaming source's `allowSourceColumn*` options and delta-spark's session confs for them: `always` or the
 * version of one change ([[SchemaChangeAllowance]]), and how [[ColumnChangeGuard]] applies them (no Spark session).
 */
class SchemaChangeAllowanceSuite extends AnyFunSuite {
  private def parse(options: (String, String)*) = StreamReadOptions.parse(options.toMap)
  private def refused(e: => Any): String = intercept[InvalidTableOperationException](e).getMessage

  test("options: always / true / false or a version; anything else refused naming option, value and what is allowed") {
    assert(parse().allowColumnTypeChange == SchemaChangeAllowance.Never)
    assert(parse("allowSourceColumnTypeChange" -> "ALWAYS").allowColumnTypeChange == SchemaChangeAllowance.Always)
    assert(parse("allowSourceColumnTypeChange" -> "true").allowColumnTypeChange == SchemaChangeAllowance.Always)
    assert(parse("allowSourceColumnTypeChange" -> "false").allowColumnTypeChange == SchemaChangeAllowance.Never)
    val at3 = parse("allowSourceColumnTypeChange" -> " 3 ").allowColumnTypeChange
    assert(at3.allows(3) && !at3.allows(4) && !at3.always)
    val both = parse("allowSourceColumnRenameAndDrop" -> "7", "allowSourceColumnDrop" -> "9")
    assert(both.allowColumnRename.allows(7) && !both.allowColumnRename.allows(9))
    assert(both.allowColumnDrop.allows(7) && both.allowColumnDrop.allows(9))
    for (bad <- Seq("maybe", "-1", "3.0", "", "99999999999999999999")) {
      val m = refused(parse("allowSourceColumnTypeChange" -> bad))
      assert(m.contains("allowSourceColumnTypeChange") && m.contains(s"'$bad'") && m.contains("always, true, false") &&
        m.contains("table version"), m)
    }
    // An unknown option is still refused, with the closest name.
    assert(refused(parse("allowSourceColumnTypeChanges" -> "3")).contains("allowSourceColumnTypeChange"))
  }

  test("session confs: delta-spark's names, global always or per checkpoint hash; bad values refused naming the conf") {
    val location = "file:/tmp/chk/sources/0"
    val hash = location.hashCode
    val prefix = "spark.databricks.delta.streaming"
    def withConfs(confs: (String, String)*) = parse().withSessionConfs(confs.toMap.get, location)
    def allowances(o: StreamReadOptions) = Seq(o.allowColumnRename, o.allowColumnDrop, o.allowColumnTypeChange)
    val none = Seq.fill(3)(SchemaChangeAllowance.Never)
    assert(allowances(withConfs()) == none)
    assert(withConfs().streamConf("allowSourceColumnTypeChange").contains(
      s"$prefix.allowSourceColumnTypeChange.ckpt_$hash"))
    assert(withConfs(s"$prefix.allowSourceColumnTypeChange" -> "always").allowColumnTypeChange.always)
    val one = withConfs(s"$prefix.allowSourceColumnTypeChange.ckpt_$hash" -> "5").allowColumnTypeChange
    assert(one.allows(5) && !one.allows(6))
    // Another stream's conf (another hash) allows nothing here.
    assert(allowances(withConfs(s"$prefix.allowSourceColumnTypeChange.ckpt_${hash + 1}" -> "always")) == none)
    val renameDrop = withConfs(s"$prefix.allowSourceColumnRenameAndDrop.ckpt_$hash" -> "always")
    assert(renameDrop.allowColumnRename.always && renameDrop.allowColumnDrop.always &&
      !renameDrop.allowColumnTypeChange.allows(0))
    // Options and confs add up: either allows.
    val mixed = parse("allowSourceColumnTypeChange" -> "2")
      .withSessionConfs(Map(s"$prefix.allowSourceColumnTypeChange.ckpt_$hash" -> "4").get, location)
    assert(mixed.allowColumnTypeChange.allows(2) && mixed.allowColumnTypeChange.allows(4))
    val global = refused(withConfs(s"$prefix.allowSourceColumnTypeChange" -> "3"))
    assert(global.contains(s"Session conf '$prefix.allowSourceColumnTypeChange'") && global.contains("ckpt_<hash>"),
      global)
    val perStream = refused(withConfs(s"$prefix.allowSourceColumnTypeChange.ckpt_$hash" -> "soon"))
    assert(perStream.contains(s"ckpt_$hash") && perStream.contains("'soon'"), perStream)
  }

  test("the guard: a version allows its own commit's widening only; a restart's overall check needs always") {
    def meta(ddl: String) = Metadata(id = "t", schemaString = StructType.fromDDL(ddl).json)
    val (v1, v3, v5) = (meta("id INT, s STRUCT<f: FLOAT>"), meta("id BIGINT, s STRUCT<f: FLOAT>"),
      meta("id BIGINT, s STRUCT<f: DOUBLE>"))
    val guard = new ColumnChangeGuard("t", v5, 5, parse("allowSourceColumnTypeChange" -> "3"))
    assert(guard.refused(v1, v3, 3).isEmpty)
    assert(guard.refused(v3, v5, 5).describe == "ALTER COLUMN s.f TYPE DOUBLE (was FLOAT)")
    assert(guard.refusedOnRestart(v1).widenings.size == 2)
    val always = new ColumnChangeGuard("t", v5, 5, parse("allowSourceColumnTypeChange" -> "always"))
    assert(always.refusedOnRestart(v1).isEmpty)
    // A running query stops at the commit; the remedy names both values of the option.
    val running = new ColumnChangeGuard("t", v1, 1, parse())
    val stop = intercept[io.strata.log.StreamSourceChangeException](running.checkCommit(3, v3)).getMessage
    assert(stop.contains("allowSourceColumnTypeChange=always (or allowSourceColumnTypeChange=3 for this version's " +
      "change only)"), stop)
  }
}
