package io.strata.log

import java.util.Locale

import FeatureSupport.{Full, NotYet, WhileUnused}

/**
 * Every table feature Strata knows (PROTOCOL.md's "Valid Feature Names in Table Features", the features with sections
 * of their own, and the names delta-spark writes), one entry each: the one place that says what a feature is and what
 * Strata does with it. [[ProtocolSupport]] (the protocol a table needs, whether Strata reads and writes it),
 * [[FeatureDrop]] (DROP FEATURE's protocol arithmetic) and [[TableProperties]] (`delta.feature.*`, protocol versions)
 * are queries over it. Adding a feature: its entry here (and the file that follows its rules). The entries name
 * their properties as literals: the registry is initialized before the objects that query it.
 */
object TableFeatures {
  private def flag(m: Metadata, key: String): Boolean = m.configuration.get(key).exists(_.trim.equalsIgnoreCase("true"))
  private def schema(m: Metadata): SchemaUse = m.schemaUse
  private def writer(name: String, legacy: Option[(Int, Int)], write: FeatureSupport, usedBy: Metadata => Boolean,
                     droppable: Boolean = false) =
    new TableFeature(name, readerWriter = false, legacy, Full, write, usedBy, droppable)
  private def readerWriter(name: String, legacy: Option[(Int, Int)], read: FeatureSupport, write: FeatureSupport,
                           usedBy: Metadata => Boolean, droppable: Boolean = false, previewOf: Option[String] = None) =
    new TableFeature(name, readerWriter = true, legacy, read, write, usedBy, droppable, previewOf)
  private val never: Metadata => Boolean = _ => false
  /** Iceberg compatibility version `v`: its rules bind a table that turns it on. */
  private def icebergCompat(v: Int) = writer(s"icebergCompatV$v", None,
    WhileUnused(s"Iceberg compatibility V$v (delta.enableIcebergCompatV$v)"), flag(_, s"delta.enableIcebergCompatV$v"))

  val AppendOnly: TableFeature = writer("appendOnly", Some((1, 2)), Full, flag(_, "delta.appendOnly"))
  val Invariants: TableFeature = writer("invariants", Some((1, 2)),
    WhileUnused("column invariants (delta.invariants in the schema)"), schema(_).hasFieldMetadata("delta.invariants"))
  val CheckConstraintsFeature: TableFeature = writer("checkConstraints", Some((1, 3)), Full,
    CheckConstraints.of(_).nonEmpty)
  val ChangeDataFeed: TableFeature = writer("changeDataFeed", Some((1, 4)),
    WhileUnused("change data feed (delta.enableChangeDataFeed)"),
    m => flag(m, "delta.enableChangeDataFeed") || flag(m, "delta.enableChangeDataCapture"))
  val GeneratedColumns: TableFeature = writer("generatedColumns", Some((1, 4)),
    WhileUnused("generated columns (delta.generationExpression in the schema)"),
    schema(_).hasFieldMetadata("delta.generationExpression"))
  val ColumnMappingFeature: TableFeature = readerWriter("columnMapping", Some((2, 5)), Full, Full,
    ColumnMapping.enabled)
  val IdentityColumns: TableFeature = writer("identityColumns", Some((1, 6)),
    WhileUnused("identity columns (delta.identity.* in the schema)"),
    schema(_).hasFieldMetadataPrefix("delta.identity."))
  val DeletionVectors: TableFeature = readerWriter("deletionVectors", None, Full, Full,
    flag(_, "delta.enableDeletionVectors"), droppable = true)
  val RowTracking: TableFeature = writer("rowTracking", None, NotYet("row tracking (delta.enableRowTracking)"),
    flag(_, "delta.enableRowTracking"))
  val TimestampNtz: TableFeature = readerWriter("timestampNtz", None, Full, Full, schema(_).usesType("timestamp_ntz"))
  val DomainMetadata: TableFeature = writer("domainMetadata", None, Full, never)
  val V2Checkpoint: TableFeature = readerWriter("v2Checkpoint", None, Full, Full,
    _.configuration.get("delta.checkpointPolicy").exists(_.trim.equalsIgnoreCase("v2")), droppable = true)
  val CatalogManaged: TableFeature = readerWriter("catalogManaged", None, NotYet("catalog-managed commits"),
    NotYet("catalog-managed commits"), never)
  val CatalogOwnedPreview: TableFeature = readerWriter("catalogOwned-preview", None, NotYet("catalog-owned commits"),
    NotYet("catalog-owned commits"), never)
  val IcebergCompatV1: TableFeature = icebergCompat(1)
  val IcebergCompatV2: TableFeature = icebergCompat(2)
  val IcebergCompatV3: TableFeature = icebergCompat(3)
  val IcebergWriterCompatV1: TableFeature = writer("icebergWriterCompatV1", None,
    NotYet("Iceberg writer compatibility V1"), flag(_, "delta.enableIcebergWriterCompatV1"))
  val IcebergWriterCompatV3: TableFeature = writer("icebergWriterCompatV3", None,
    NotYet("Iceberg writer compatibility V3"), flag(_, "delta.enableIcebergWriterCompatV3"))
  // Clustering columns keep statistics (checked at CLUSTER BY and on later changes of the statistics settings).
  val ClusteringFeature: TableFeature = writer("clustering", None, Full, never)
  val VacuumProtocolCheck: TableFeature = readerWriter("vacuumProtocolCheck", None, Full, Full, never,
    droppable = true)
  val InCommitTimestamp: TableFeature = writer("inCommitTimestamp", None, Full,
    flag(_, "delta.enableInCommitTimestamps"), droppable = true)
  // Files written before a widening are read back upcast by Spark's Parquet reader; writes follow the widened
  // schema, and ALTER COLUMN TYPE records delta.typeChanges, refusing any change PROTOCOL.md does not list.
  val TypeWidening: TableFeature = readerWriter("typeWidening", None, Full, Full,
    flag(_, "delta.enableTypeWidening"), droppable = true)
  val TypeWideningPreview: TableFeature = readerWriter("typeWidening-preview", None, Full, Full, never,
    droppable = true, previewOf = Some("typeWidening"))
  val VariantType: TableFeature = readerWriter("variantType", None, Full, Full, schema(_).usesType("variant"))
  val VariantTypePreview: TableFeature = readerWriter("variantType-preview", None, Full, Full, never,
    previewOf = Some("variantType"))
  // Shredded variant files are read by Spark's Parquet reader; Strata writes unshredded files only.
  val VariantShredding: TableFeature = readerWriter("variantShredding", None, Full, NotYet("variant shredding"),
    flag(_, "delta.enableVariantShredding"))
  val VariantShreddingPreview: TableFeature = readerWriter("variantShredding-preview", None, Full,
    NotYet("variant shredding"), never)
  // Honoured by LogCleanup; Strata checkpoints only its latest version.
  val CheckpointProtection: TableFeature = writer("checkpointProtection", None, Full, never)
  val CoordinatedCommitsPreview: TableFeature = writer("coordinatedCommits-preview", None,
    NotYet("coordinated commits"), never)
  val AllowColumnDefaults: TableFeature = writer("allowColumnDefaults", None,
    WhileUnused("column defaults (CURRENT_DEFAULT in the schema)"), schema(_).hasFieldMetadata("CURRENT_DEFAULT"))
  val CollationsPreview: TableFeature = writer("collations-preview", None, NotYet("collations"), never)
  val MaterializePartitionColumns: TableFeature = writer("materializePartitionColumns", None,
    NotYet("materialized partition columns"), flag(_, "delta.enableMaterializePartitionColumnsFeature"))
  val Geospatial: TableFeature = readerWriter("geospatial", None, NotYet("geospatial types"),
    NotYet("geospatial types"), never)

  /** The registry, in PROTOCOL.md's order where it lists them. */
  val all: Seq[TableFeature] = Seq(AppendOnly, Invariants, CheckConstraintsFeature, GeneratedColumns,
    AllowColumnDefaults, ChangeDataFeed, ColumnMappingFeature, IdentityColumns, DeletionVectors, RowTracking,
    TimestampNtz, DomainMetadata, V2Checkpoint, CatalogManaged, CatalogOwnedPreview, IcebergCompatV1, IcebergCompatV2,
    IcebergCompatV3, IcebergWriterCompatV1, IcebergWriterCompatV3, ClusteringFeature, VacuumProtocolCheck,
    InCommitTimestamp, TypeWidening, TypeWideningPreview, VariantType, VariantTypePreview, VariantShredding,
    VariantShreddingPreview, CheckpointProtection, CoordinatedCommitsPreview, CollationsPreview,
    MaterializePartitionColumns, Geospatial)

  private val byName: Map[String, TableFeature] = all.map(f => f.name -> f).toMap
  private val byLowerName: Map[String, TableFeature] = all.map(f => f.name.toLowerCase(Locale.ROOT) -> f).toMap

  /** The feature of this exact name (protocols list names exactly). */
  def get(name: String): Option[TableFeature] = byName.get(name)

  /** The feature a user named, in any case (`delta.feature.<name>`). */
  def named(name: String): Option[TableFeature] = byLowerName.get(name.toLowerCase(Locale.ROOT))

  /** Whether a known feature of this name has reader rules (an unknown name: false). */
  def isReaderWriter(name: String): Boolean = get(name).exists(_.readerWriter)

  /** The features a legacy protocol (reader 1-2, writer 1-6) implies. */
  def impliedBy(reader: Int, writer: Int): Set[String] = all.filter(_.impliedBy(reader, writer)).map(_.name).toSet

  /** The feature names a protocol lists (reader and writer lists), none implied. */
  def listedBy(p: Protocol): Set[String] =
    p.readerFeatures.getOrElse(Set.empty) ++ p.writerFeatures.getOrElse(Set.empty)

  /** Every feature a protocol supports: listed (reader and writer lists), or implied by its legacy versions. */
  def supportedBy(p: Protocol): Set[String] =
    if (p.supportsWriterFeatures) listedBy(p) else impliedBy(p.minReaderVersion, p.minWriterVersion)

  /** The features `m` uses. */
  def usedBy(m: Metadata): Seq[TableFeature] = all.filter(_.isUsedBy(m))
}
