package io.strata.procedures

import io.strata.log.InvalidTableOperationException
import org.scalatest.funsuite.AnyFunSuite

/** delta-spark's OPTIMIZE statement as the CALL it means (no Spark: the text alone; ClusteringSuite runs one). */
class OptimizeSqlSuite extends AnyFunSuite {
  private def call(sql: String) = OptimizeSql.toCall(sql, "strata")

  test("OPTIMIZE <table> [FULL] [WHERE ...] [ZORDER BY (...)] becomes the optimize CALL; other statements do not") {
    assert(call("optimize db.t") == Some("CALL `strata`.system.optimize(table => 'db.t')"))
    assert(call("  OPTIMIZE strata.`/tmp/a b` FULL ;") ==
      Some("CALL `strata`.system.optimize(table => 'strata.`/tmp/a b`', full => true)"))
    assert(call("OPTIMIZE '/tmp/it\\'s' WHERE p = 'x' AND q > 1 ZORDER BY (a, `b c`)") == Some("CALL `strata`.system" +
      ".optimize(table => '`/tmp/it\\'s`', where => 'p = \\'x\\' AND q > 1', zorder_by => array('a', 'b c'))"))
    assert(call("OPTIMIZE t ZORDER BY (a)") == Some("CALL `strata`.system.optimize(table => 't', zorder_by => " +
      "array('a'))"))
    // The words ZORDER BY inside a predicate's string literal are part of the predicate.
    assert(call("OPTIMIZE t WHERE p = 'ZORDER BY (x)' OR q = \"zorder by\" ZORDER BY (a)") == Some("CALL `strata`" +
      ".system.optimize(table => 't', where => 'p = \\'ZORDER BY (x)\\' OR q = \"zorder by\"', zorder_by => array('a'))"))
    assert(call("OPTIMIZE t WHERE p = 'ZORDER BY (x)'") == Some("CALL `strata`.system.optimize(table => 't', " +
      "where => 'p = \\'ZORDER BY (x)\\'')"))
    assert(call("SELECT 1").isEmpty && call("OPTIMIZED t").isEmpty)
    val e = intercept[InvalidTableOperationException](call("OPTIMIZE t PLEASE"))
    assert(e.getMessage.contains("'PLEASE' is neither FULL, WHERE nor ZORDER BY") && e.getMessage.contains(
      "expected OPTIMIZE table [FULL] [WHERE partition-predicate] [ZORDER BY (col, ...)]"))
    assert(intercept[InvalidTableOperationException](call("OPTIMIZE t ZORDER BY (a,)")).getMessage
      .contains("empty column name"))
  }
}
