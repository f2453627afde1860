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
  val Droppable: Set[String] = TableFeatures.all.filter(_.droppable).map(_.name).toSet

  /** (reader, writer) versions a feature needs alone (an unknown one: writer 7). */
  private def versions(feature: String): (Int, Int) = TableFeatures.get(feature).fold((1, 7))(_.versions)

  /** Whether the feature has reader rules (its drop needs checkpoint protection). */
  def readerWriter(feature: String): Boolean = TableFeatures.isReaderWriter(feature)

  /** The features a legacy (reader, writer) pair implies. */
  private def implied(reader: Int, writer: Int): Set[String] = TableFeatures.impliedBy(reader, writer)

  /** Every feature the protocol supports, explicitly listed or implied by its legacy versions. */
  def features(p: Protocol): Set[String] = TableFeatures.supportedBy(p)

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
