package io.strata.procedures

import io.strata.dml.DmlTestSupport
import io.strata.log._
import org.apache.spark.sql.Row
import org.scalatest.funsuite.AnyFunSuite

/**
 * `drop_feature` on what tests/test_drop_feature.py (against delta-spark) leaves out: a writer-only feature, and the
 * refusals. Each refusal commits nothing.
 */
class DropFeatureSuite extends AnyFunSuite with DmlTestSupport {
  private def drop(t: String, feature: String, extra: String = ""): Row =
    spark.sql(s"CALL strata.system.drop_feature(table => '$t', feature => '$feature'$extra)").head()

  test("inCommitTimestamp: turned off, its enablement forgotten, one commit back to the legacy protocol") {
    val t = freshTable("dropf", "(id INT) USING strata TBLPROPERTIES ('delta.enableInCommitTimestamps' = 'true')")
    spark.sql(s"INSERT INTO $t VALUES (1)")
    val before = log(t).snapshot()
    assert(before.protocol.writerFeatures.exists(_("inCommitTimestamp")))
    val r = drop(t, "inCommitTimestamp")
    val after = log(t).snapshot()
    // Writer-only: no barrier checkpoints and no checkpointProtection; the properties change first.
    assert(after.version == before.version + 2 && r.getLong(0) == after.version)
    assert(after.protocol == Protocol(1, 2) && (r.getInt(1), r.getInt(2)) == (1, 2))
    assert(after.metadata.configuration == Map("delta.enableInCommitTimestamps" -> "false"))
    spark.sql(s"INSERT INTO $t VALUES (2)")
    assert(rows(spark.table(t)) == Seq(Row(1), Row(2)))
  }

  test("refusals name the feature and what would be needed; nothing is committed") {
    val t = freshTable("dropf", "(id INT) USING strata TBLPROPERTIES ('delta.feature.domainMetadata' = 'supported')")
    val version = log(t).snapshot().version
    Seq("rowTracking" -> "does not support it", "domainMetadata" -> "Strata drops only",
      "appendOnly" -> "Strata drops only").foreach { case (feature, why) =>
      val e = intercept[InvalidTableOperationException](drop(t, feature))
      assert(e.getMessage.contains(s"Cannot drop table feature $feature") && e.getMessage.contains(why), e.getMessage)
    }
    val e = intercept[InvalidTableOperationException](drop(t, "domainMetadata", ", truncate_history => true"))
    assert(e.getMessage.contains("truncate_history => false"), e.getMessage)
    assert(log(t).snapshot().version == version)
  }
}
