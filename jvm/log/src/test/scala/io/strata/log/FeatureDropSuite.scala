package io.strata.log

import org.scalatest.funsuite.AnyFunSuite

/** DROP FEATURE's protocol arithmetic against the protocols delta-spark 4.4 leaves (its Protocol.removeFeature). */
class FeatureDropSuite extends AnyFunSuite {
  private def p(r: Int, w: Int, rf: Set[String] = null, wf: Set[String] = null) = Protocol(r, w, Option(rf), Option(wf))
  private val legacy = Set("appendOnly", "invariants")

  test("a reader-writer feature goes, checkpointProtection comes, the reader version falls to what is left") {
    assert(FeatureDrop.protocolWithout(p(3, 7, Set("deletionVectors"), legacy + "deletionVectors"),
      "deletionVectors") == p(1, 7, null, legacy + "checkpointProtection"))
    assert(FeatureDrop.protocolWithout(p(3, 7, Set("typeWidening", "timestampNtz"),
      legacy ++ Set("typeWidening", "timestampNtz")), "typeWidening") ==
      p(3, 7, Set("timestampNtz"), legacy ++ Set("timestampNtz", "checkpointProtection")))
    // Column mapping alone keeps reader version 2 without reader features.
    assert(FeatureDrop.protocolWithout(p(3, 7, Set("columnMapping", "v2Checkpoint"),
      legacy ++ Set("columnMapping", "v2Checkpoint")), "v2Checkpoint") ==
      p(2, 7, null, legacy ++ Set("columnMapping", "checkpointProtection")))
  }

  test("a writer-only feature goes alone, and legacy versions come back when they say exactly what is left") {
    assert(FeatureDrop.protocolWithout(p(1, 7, null, legacy + "inCommitTimestamp"), "inCommitTimestamp") == p(1, 2))
    assert(FeatureDrop.protocolWithout(p(1, 7, null, legacy ++ Set("checkConstraints", "inCommitTimestamp")),
      "inCommitTimestamp") == p(1, 3))
    // A legacy protocol stands for its features: dropping one of them leaves a feature list.
    assert(FeatureDrop.features(p(1, 3)) == legacy + "checkConstraints")
    assert(FeatureDrop.features(p(2, 5)).contains("columnMapping"))
    assert(FeatureDrop.normalized(Set("appendOnly", "checkConstraints")) ==
      p(1, 7, null, Set("appendOnly", "checkConstraints")))
  }
}
