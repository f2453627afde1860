package io.strata.log

import org.scalatest.funsuite.AnyFunSuite

/** The log core names no engine of its own: a connector supplies it (io.strata.SparkEngine names Spark). */
class EngineSuite extends AnyFunSuite with LogTestSupport {
  test("without a connector's engine, commitInfo.engineInfo names Strata alone") {
    val log = createTable(tempDir())
    val info = log.readCommit(0L).collectFirst { case c: CommitInfo => c.json.get("engineInfo").asText }
    assert(info.contains(s"Strata/${Engine.strataVersion}"))
  }
}
