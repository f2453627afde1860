package io.strata.log

/**
 * The protocol arithmetic of DROP FEATURE (delta-spark's `ALTER TABLE ... DROP FEATURE`, PROTOCOL.md "Table Features"
 * and "Checkpoint Protection"): a legacy protocol stands for the features its versions imply, the feature is taken
 * out, and the result is put in its weakest form (legacy versions when they imply exactly the features left, else
 * the lowest reader version with writer version 7). A feature with reader rules is dropped behind protected
 * checkpoints: the drop adds the writer feature `checkpointProtection` and records its version in
 * `delta.requireCheckpointProtectionBeforeVersion`, so that no client rebuilds a version before it from the history
 * that still uses the feature.
 */
object FeatureDrop {
  val CheckpointProtection = "checkpointProtection"
  val ProtectionKey = "delta.requireCheckpointProtectionBeforeVersion"

  /** The features Strata drops (each with what it removes first: the connector's DropFeatureProcedure). */
  val Droppable: Set[String] = Set("typeWidening", "typeWidening-preview", "vacuumProtocolCheck", "v2Checkpoint",
    "deletionVectors", InCommitTimestamps.Feature)

  /** (reader, writer) versions a feature needs alone (delta-spark's TableFeature min versions). */
  private def versions(feature: String): (Int, Int) = feature match {
    case "appendOnly" | "invariants" => (1, 2)
    case "checkConstraints" => (1, 3)
    case "changeDataFeed" | "generatedColumns" => (1, 4)
    case "columnMapping" => (2, 5)
    case "identityColumns" => (1, 6)
    case f if readerWriter(f) => (3, 7)
    case _ => (1, 7)
  }

  private val ReaderWriter = Set("deletionVectors", "timestampNtz", "v2Checkpoint", "vacuumProtocolCheck",
    "typeWidening", "typeWidening-preview", "variantType", "variantType-preview", "variantShredding-preview",
    "columnMapping", "catalogManaged", "catalogOwned-preview", "geospatial")

  /** Whether the feature has reader rules (its drop needs checkpoint protection). */
  def readerWriter(feature: String): Boolean = ReaderWriter(feature)

  /** The features a legacy (reader, writer) pair implies. */
  private def implied(reader: Int, writer: Int): Set[String] =
    (if (writer >= 2) Set("appendOnly", "invariants") else Set.empty[String]) ++
      (if (writer >= 3) Set("checkConstraints") else Set.empty[String]) ++
      (if (writer >= 4) Set("changeDataFeed", "generatedColumns") else Set.empty[String]) ++
      (if (writer >= 5 || reader >= 2) Set("columnMapping") else Set.empty[String]) ++
      (if (writer >= 6) Set("identityColumns") else Set.empty[String])

  /** Every feature the protocol supports, explicitly listed or implied by its legacy versions. */
  def features(p: Protocol): Set[String] =
    if (p.supportsWriterFeatures) p.writerFeatures.getOrElse(Set.empty) ++ p.readerFeatures.getOrElse(Set.empty)
    else implied(p.minReaderVersion, p.minWriterVersion)

  /** The weakest protocol supporting exactly `all`. */
  def normalized(all: Set[String]): Protocol = {
    val reader = (all.map(versions(_)._1) + 1).max
    val writer = (all.map(versions(_)._2) + 1).max
    if (implied(reader, writer) == all) Protocol(reader, writer)
    else Protocol(reader, 7, if (reader >= 3) Some(all.filter(readerWriter)) else None, Some(all))
  }

  /** The protocol after dropping `feature`, with `checkpointProtection` when the feature has reader rules. */
  def protocolWithout(p: Protocol, feature: String): Protocol =
    normalized(features(p) - feature ++ (if (readerWriter(feature)) Set(CheckpointProtection) else Set.empty[String]))
}
