package io.strata.log

/**
 * What this Strata can read and write, and the lowest protocol a new table needs (PROTOCOL.md, "Protocol
 * Evolution" and "Table Features"). Every check names the version or feature that is missing.
 */
object ProtocolSupport {
  /** Reader features whose data Strata reads correctly. */
  val ReadableFeatures: Set[String] =
    Set("timestampNtz", "vacuumProtocolCheck", "deletionVectors", "variantType", "variantType-preview", "v2Checkpoint",
      // Files written before a widening are read back upcast by Spark's Parquet reader (TypeWidening checks the
      // recorded changes are ones it does).
      "typeWidening", "typeWidening-preview", "columnMapping",
      // Shredded variant files (PROTOCOL.md "Variant Shredding") are read by Spark's Parquet reader, which rebuilds
      // each value from its typed_value / value parts. Strata writes unshredded files only, so not writable.
      "variantShredding", "variantShredding-preview")
  /** Writer features whose rules Strata follows on every write. */
  val WritableFeatures: Set[String] =
    Set("appendOnly", "invariants", "checkConstraints", "timestampNtz", "vacuumProtocolCheck", "deletionVectors",
      "domainMetadata", "inCommitTimestamp", "variantType", "variantType-preview", "columnMapping",
      "v2Checkpoint", // written with classic single-file checkpoints, which the feature allows
      "checkpointProtection", // honoured by LogCleanup; Strata checkpoints only its latest version
      // Clustering columns keep statistics (checked at CLUSTER BY and on later changes of the statistics settings).
      "clustering",
      // Writes follow the table's (widened) schema; ALTER COLUMN TYPE records delta.typeChanges
      // (the connector's TypeWideningChanges) and refuses any change PROTOCOL.md does not list.
      "typeWidening", "typeWidening-preview")

  /** The writer features a legacy writer version implies (PROTOCOL.md, "Table Features"). */
  private def legacyWriterFeatures(writerVersion: Int): Set[String] =
    (if (writerVersion >= 2) Set("appendOnly", "invariants") else Set.empty[String]) ++
      (if (writerVersion >= 3) Set("checkConstraints") else Set.empty[String]) ++
      (if (writerVersion >= 5) Set("columnMapping") else Set.empty[String])

  private[log] val legacyWriterNeeds = Map(
    4 -> "change data feed or generated columns (writer version 4)",
    6 -> "identity columns (writer version 6)")

  /** The protocol a new table with these properties and schema needs: reader 1 / writer 2 unless a feature asks more. */
  def minimumFor(metadata: Metadata): Protocol = {
    unsupportedConfiguration(metadata).foreach(msg => throw UnsupportedProtocolException("STRATA_UNSUPPORTED_PROTOCOL",
      msg))
    val legacyWriter = if (CheckConstraints.of(metadata).nonEmpty) 3 else 2
    // Features with reader rules that the metadata asks for (PROTOCOL.md: both lists name them).
    val features = (if (usesTimestampNtz(metadata)) Set("timestampNtz") else Set.empty[String]) ++
      (if (deletionVectorsEnabled(metadata)) Set("deletionVectors") else Set.empty[String]) ++
      (if (usesVariant(metadata)) Set("variantType") else Set.empty[String]) ++
      (if (metadata.configuration.get(V2Checkpoints.PolicyKey).exists(_.trim.equalsIgnoreCase("v2")))
        Set(V2Checkpoints.Feature) else Set.empty[String]) ++
      (if (typeWideningEnabled(metadata)) Set(TypeWideningFeature) else Set.empty[String])
    // Writer-only features the metadata asks for (reader version unchanged).
    val writerOnly = if (InCommitTimestamps.enabled(metadata)) Set(InCommitTimestamps.Feature) else Set.empty[String]
    val mapped = ColumnMapping.enabled(metadata) // reader 2 / writer 5, or the feature where features are listed
    val mapping = if (mapped) Set("columnMapping") else Set.empty[String]
    if (features.nonEmpty) {
      val all = features ++ mapping
      Protocol(3, 7, Some(all), Some(legacyWriterFeatures(legacyWriter) ++ all ++ writerOnly))
    } else if (mapped && writerOnly.isEmpty) Protocol(2, 5)
    else if (mapped) Protocol(2, 7, None, Some(legacyWriterFeatures(legacyWriter) ++ mapping ++ writerOnly))
    else if (writerOnly.nonEmpty) Protocol(1, 7, None, Some(legacyWriterFeatures(legacyWriter) ++ writerOnly))
    else Protocol(1, legacyWriter)
  }

  /** The protocol after a metadata change on an existing table (upgrades only, never downgrades). */
  def upgradeFor(current: Protocol, metadata: Metadata): Protocol = {
    // A table on the preview name of a feature (another writer's) needs no second name for it.
    def both(p: Protocol) = p.readerFeatures.getOrElse(Set.empty) ++ p.writerFeatures.getOrElse(Set.empty)
    val preview = PreviewNames.filter { case (_, old) => both(current)(old) }.keySet
    val legacy = minimumFor(metadata)
    // On writer features a table needs only the features its metadata uses: column mapping's legacy writer 5 would
    // also bring checkConstraints, which nothing asked for (delta-spark adds only columnMapping).
    val needed = if (!current.supportsWriterFeatures || legacy.supportsWriterFeatures) legacy
      else legacy.copy(minWriterVersion = 7, writerFeatures = Some(
        legacyWriterFeatures(if (CheckConstraints.of(metadata).nonEmpty) 3 else 2) ++
          (if (ColumnMapping.enabled(metadata)) Set("columnMapping") else Set.empty[String])))
    merge(current, needed.copy(readerFeatures = needed.readerFeatures.map(_ -- preview),
      writerFeatures = needed.writerFeatures.map(_ -- preview)))
  }

  /** Features whose preview name delta-spark wrote before their final one (same rules). */
  private val PreviewNames = Map("variantType" -> "variantType-preview", TypeWideningFeature -> "typeWidening-preview")

  final val TypeWideningFeature = "typeWidening"
  val TypeWideningKey = "delta.enableTypeWidening"
  /** `delta.enableTypeWidening`: ALTER COLUMN TYPE may widen a column (PROTOCOL.md, "Type Widening"). */
  def typeWideningEnabled(m: Metadata): Boolean =
    m.configuration.get(TypeWideningKey).exists(_.trim.equalsIgnoreCase("true"))

  /**
   * The weakest protocol that has everything `current` and `needed` have; `current` itself when it already covers
   * `needed` (so asking for less never downgrades). A legacy writer version stands for the features it implies, so
   * legacy and feature protocols compare; mixing them gives a feature protocol (writer 7).
   */
  def merge(current: Protocol, needed: Protocol): Protocol = {
    def writerFeatures(p: Protocol) =
      if (p.supportsWriterFeatures) p.writerFeatures.getOrElse(Set.empty) else legacyWriterFeatures(p.minWriterVersion)
    // Reader version 2 stands for column mapping, as a writer version for its features.
    def readerFeatures(p: Protocol) = if (p.minReaderVersion >= 3) p.readerFeatures.getOrElse(Set.empty[String])
      else if (p.minReaderVersion == 2) Set("columnMapping") else Set.empty[String]
    val covered = needed.minReaderVersion <= current.minReaderVersion &&
      readerFeatures(needed).subsetOf(readerFeatures(current)) &&
      writerFeatures(needed).subsetOf(writerFeatures(current)) &&
      (current.supportsWriterFeatures || needed.minWriterVersion <= current.minWriterVersion)
    if (covered) current
    else if (needed.supportsWriterFeatures || current.supportsWriterFeatures) {
      val reader = math.max(current.minReaderVersion, needed.minReaderVersion)
      Protocol(reader, 7,
        if (reader >= 3) Some(readerFeatures(current) ++ readerFeatures(needed))
        else None,
        Some(writerFeatures(current) ++ writerFeatures(needed)))
    } else Protocol(math.max(current.minReaderVersion, needed.minReaderVersion),
      math.max(current.minWriterVersion, needed.minWriterVersion))
  }

  def checkReadable(p: Protocol, table: String): Unit = {
    p.minReaderVersion match {
      case 1 | 2 => // 2: column mapping (ColumnMapping), read by physical name or field id
      case 3 =>
        val missing = p.readerFeatures.getOrElse(Set.empty) -- ReadableFeatures
        if (missing.nonEmpty) throw UnsupportedProtocolException("STRATA_UNSUPPORTED_PROTOCOL",
          s"Table $table needs reader feature(s) ${missing.toSeq.sorted.mkString(", ")}, which Strata does not " +
            s"support yet (supported: ${ReadableFeatures.toSeq.sorted.mkString(", ")}).")
      case v => throw UnsupportedProtocolException("STRATA_UNSUPPORTED_PROTOCOL",
        s"Table $table needs reader version $v; Strata reads versions 1, 2 and 3 only.")
    }
  }

  def checkWritable(p: Protocol, metadata: Metadata, table: String): Unit = {
    checkReadable(p, table)
    p.minWriterVersion match {
      case 1 | 2 | 3 | 5 => // 5: column mapping; its writer-4 features are refused below when used
      case v if legacyWriterNeeds.contains(v) => throw UnsupportedProtocolException("STRATA_UNSUPPORTED_PROTOCOL",
        s"Table $table needs writer version $v for ${legacyWriterNeeds(v)}, which Strata cannot write yet.")
      case 7 =>
        val missing = p.writerFeatures.getOrElse(Set.empty) -- WritableFeatures
        if (missing.nonEmpty) throw UnsupportedProtocolException("STRATA_UNSUPPORTED_PROTOCOL",
          s"Table $table needs writer feature(s) ${missing.toSeq.sorted.mkString(", ")}, which Strata cannot write " +
            s"yet (supported: ${WritableFeatures.toSeq.sorted.mkString(", ")}).")
      case v => throw UnsupportedProtocolException("STRATA_UNSUPPORTED_PROTOCOL",
        s"Table $table needs writer version $v; Strata writes versions 1, 2, 3 and 7 only.")
    }
    unsupportedConfiguration(metadata).foreach(msg => throw UnsupportedProtocolException("STRATA_UNSUPPORTED_PROTOCOL",
      s"Table $table: $msg"))
  }

  /** Table properties and schema annotations whose write-time rules Strata does not enforce yet. */
  private def unsupportedConfiguration(m: Metadata): Option[String] = {
    val conf = m.configuration
    def enabled(k: String) = conf.get(k).exists(_.equalsIgnoreCase("true"))
    if (enabled("delta.enableChangeDataFeed")) Some("delta.enableChangeDataFeed is not supported yet")
    else if (m.schemaString.contains("\"delta.invariants\"")) Some("column invariants are not supported yet")
    else if (m.schemaString.contains("\"delta.generationExpression\"")) Some("generated columns are not supported yet")
    else None
  }

  /** New row-level changes are written as deletion vectors (`delta.enableDeletionVectors`). */
  def deletionVectorsEnabled(m: Metadata): Boolean =
    m.configuration.get("delta.enableDeletionVectors").exists(_.trim.equalsIgnoreCase("true"))

  /**
   * Whether a row-level change may write deletion vectors: the property asks for them and the protocol lists the
   * feature (readers that honour vectors are only promised by the protocol). Another writer can set the property
   * without upgrading the protocol; vectors written then would be ignored by delta-spark and delta-rs, which would
   * read the deleted rows back, so such a table is changed copy-on-write (as delta-spark does).
   */
  def deletionVectorsWritable(p: Protocol, m: Metadata): Boolean = deletionVectorsEnabled(m) &&
    p.readerFeatures.exists(_("deletionVectors")) && p.writerFeatures.exists(_("deletionVectors"))

  private def usesTimestampNtz(m: Metadata): Boolean = m.schemaString.contains("\"timestamp_ntz\"")

  /** A VARIANT column or field anywhere in the schema (a type, not a name, says "variant"). */
  private val VariantTypeJson = "\"(type|elementType|keyType|valueType)\"\\s*:\\s*\"variant\"".r
  private def usesVariant(m: Metadata): Boolean = VariantTypeJson.findFirstIn(m.schemaString).isDefined
}
