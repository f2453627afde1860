package io.strata.log

import org.scalatest.funsuite.AnyFunSuite

import FeatureSupport.{Full, NotYet, WhileUnused}

/**
 * The registry of table features ([[TableFeatures]]) against PROTOCOL.md: every feature it names is there, of the
 * kind PROTOCOL.md says (readers and writers, or writers only), with the status Strata gives it; the protocol rules
 * are queries over it.
 */
class TableFeaturesSuite extends AnyFunSuite with LogTestSupport {
  /**
   * PROTOCOL.md's "Valid Feature Names in Table Features" (delta-io/delta, 2026), with the features that have
   * sections of their own (type widening, variant type and shredding, checkpoint protection), each with whether
   * readers must know it.
   */
  private val ProtocolMd: Seq[(String, Boolean)] = Seq(
    "appendOnly" -> false, "invariants" -> false, "checkConstraints" -> false, "generatedColumns" -> false,
    "allowColumnDefaults" -> false, "changeDataFeed" -> false, "columnMapping" -> true, "identityColumns" -> false,
    "deletionVectors" -> true, "rowTracking" -> false, "timestampNtz" -> true, "domainMetadata" -> false,
    "v2Checkpoint" -> true, "catalogManaged" -> true, "icebergCompatV1" -> false, "icebergCompatV2" -> false,
    "clustering" -> false, "vacuumProtocolCheck" -> true, "inCommitTimestamp" -> false, "typeWidening" -> true,
    "variantType" -> true, "variantShredding" -> true, "checkpointProtection" -> false)

  /** What Strata does with each: (read, write) as this stop's Strata does it; the next features change these lines. */
  private val Status: Map[String, (FeatureSupport, FeatureSupport)] = Map(
    "appendOnly" -> (Full, Full),
    "invariants" -> (Full, WhileUnused("column invariants (delta.invariants in the schema)")),
    "checkConstraints" -> (Full, Full),
    "generatedColumns" -> (Full, WhileUnused("generated columns (delta.generationExpression in the schema)")),
    "allowColumnDefaults" -> (Full, WhileUnused("column defaults (CURRENT_DEFAULT in the schema)")),
    "changeDataFeed" -> (Full, WhileUnused("change data feed (delta.enableChangeDataFeed)")),
    "columnMapping" -> (Full, Full),
    "identityColumns" -> (Full, WhileUnused("identity columns (delta.identity.* in the schema)")),
    "deletionVectors" -> (Full, Full),
    "rowTracking" -> (Full, NotYet("row tracking (delta.enableRowTracking)")),
    "timestampNtz" -> (Full, Full),
    "domainMetadata" -> (Full, Full),
    "v2Checkpoint" -> (Full, Full),
    "catalogManaged" -> (NotYet("catalog-managed commits"), NotYet("catalog-managed commits")),
    "icebergCompatV1" -> (Full, WhileUnused("Iceberg compatibility V1 (delta.enableIcebergCompatV1)")),
    "icebergCompatV2" -> (Full, WhileUnused("Iceberg compatibility V2 (delta.enableIcebergCompatV2)")),
    "clustering" -> (Full, Full),
    "vacuumProtocolCheck" -> (Full, Full),
    "inCommitTimestamp" -> (Full, Full),
    "typeWidening" -> (Full, Full),
    "variantType" -> (Full, Full),
    "variantShredding" -> (Full, NotYet("variant shredding")),
    "checkpointProtection" -> (Full, Full))

  test("every feature PROTOCOL.md names is in the registry, of its kind, with its status") {
    ProtocolMd.foreach { case (name, readers) =>
      val f = TableFeatures.get(name).getOrElse(fail(s"$name is missing from the registry"))
      assert(f.readerWriter == readers, s"$name: readers and writers? PROTOCOL.md says $readers")
      assert((f.read, f.write) == Status(name), name)
    }
    assert(TableFeatures.all.map(_.name).distinct.size == TableFeatures.all.size, "one entry per name")
    // Writer-only features never stop a reader.
    assert(TableFeatures.all.filterNot(_.readerWriter).forall(_.read == Full))
  }

  test("legacy versions: the features each implies (both versions reach the feature's), as PROTOCOL.md lists them") {
    assert(TableFeatures.impliedBy(1, 1).isEmpty)
    assert(TableFeatures.impliedBy(1, 2) == Set("appendOnly", "invariants"))
    assert(TableFeatures.impliedBy(1, 3) == Set("appendOnly", "invariants", "checkConstraints"))
    assert(TableFeatures.impliedBy(1, 4) == Set("appendOnly", "invariants", "checkConstraints", "changeDataFeed",
      "generatedColumns"))
    assert(TableFeatures.impliedBy(1, 5) == TableFeatures.impliedBy(1, 4), "column mapping needs reader 2 too")
    assert(TableFeatures.impliedBy(2, 5) == TableFeatures.impliedBy(1, 4) + "columnMapping")
    assert(TableFeatures.impliedBy(2, 6) == TableFeatures.impliedBy(2, 5) + "identityColumns")
    // The legacy versions of a feature imply it, and no feature without legacy versions is implied.
    TableFeatures.all.foreach { f =>
      f.legacy.foreach { case (r, w) => assert(TableFeatures.impliedBy(r, w)(f.name), f.name) }
      if (f.legacy.isEmpty) assert(!TableFeatures.impliedBy(2, 6)(f.name), f.name)
    }
  }

  test("protocol rules are queries over the registry: readable, writable, droppable, preview names") {
    assert(ProtocolSupport.ReadableFeatures == TableFeatures.all.filter(f => f.readerWriter && f.read == Full)
      .map(_.name).toSet)
    assert(!ProtocolSupport.WritableFeatures("rowTracking") && ProtocolSupport.WritableFeatures("changeDataFeed"))
    assert(FeatureDrop.Droppable == Set("typeWidening", "typeWidening-preview", "vacuumProtocolCheck", "v2Checkpoint",
      "deletionVectors", "inCommitTimestamp"))
    assert(TableFeatures.all.flatMap(_.previewOf).toSet == Set("typeWidening", "variantType"))
    // A feature's name as a user spells it (delta.feature.<name>), in any case.
    assert(TableFeatures.named("DELETIONVECTORS").map(_.name).contains("deletionVectors"))
    assert(TableFeatures.named("noSuchFeature").isEmpty)
  }

  test("which features a metadata uses: from the configuration and the parsed schema") {
    val m = metadata(configuration = Map("delta.enableDeletionVectors" -> "true", "delta.appendOnly" -> "true",
      "delta.constraints.pos" -> "id > 0", "delta.columnMapping.mode" -> "name", "delta.checkpointPolicy" -> "v2",
      "delta.enableInCommitTimestamps" -> "true", "delta.enableTypeWidening" -> "false"))
    assert(TableFeatures.usedBy(m).map(_.name).toSet == Set("deletionVectors", "appendOnly", "checkConstraints",
      "columnMapping", "v2Checkpoint", "inCommitTimestamp"))
    assert(TableFeatures.usedBy(metadata()).isEmpty)
  }

  test("supportedBy (writers) and readBy (readers): listed, or implied by legacy versions") {
    import TableFeatures._
    val dv = Protocol(3, 7, Some(Set("deletionVectors")), Some(Set("deletionVectors")))
    assert(DeletionVectors.supportedBy(dv) && DeletionVectors.readBy(dv))
    assert(!DeletionVectors.supportedBy(Protocol(1, 2)) && !DeletionVectors.readBy(Protocol(1, 2)))
    // Column mapping: legacy (2, 5) and reader 2 beside writer 7 both bind readers; (1, 5) implies nothing of it.
    assert(ColumnMappingFeature.readBy(Protocol(2, 5)) && ColumnMappingFeature.supportedBy(Protocol(2, 5)))
    val listed = Protocol(2, 7, None, Some(Set("appendOnly", "invariants", "columnMapping")))
    assert(ColumnMappingFeature.readBy(listed) && ColumnMappingFeature.supportedBy(listed))
    assert(!ColumnMappingFeature.readBy(Protocol(1, 5)) && !ColumnMappingFeature.supportedBy(Protocol(1, 5)))
    // Writer-only features bind no reader; legacy versions imply only the old ones.
    assert(!ChangeDataFeed.readBy(Protocol(1, 4)) && ChangeDataFeed.supportedBy(Protocol(1, 4)))
    assert(ClusteringFeature.supportedBy(Protocol(1, 7, None, Some(Set("clustering", "domainMetadata")))))
    assert(!ClusteringFeature.supportedBy(Protocol(2, 6)) && !DomainMetadata.supportedBy(Protocol(2, 6)))
    assert(listedBy(Protocol(1, 2)).isEmpty && supportedBy(Protocol(1, 2)) == Set("appendOnly", "invariants"))
  }
}
