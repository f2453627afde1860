package io.strata.log

/**
 * What this Strata can read and write, and the lowest protocol a new table needs (PROTOCOL.md, "Protocol
 * Evolution" and "Table Features"). Every check names the version or feature that is missing.
 */
object ProtocolSupport {
  import FeatureSupport.{Full, NotYet}

  /** Reader features whose data Strata reads correctly ([[TableFeatures]]: read support Full). */
  val ReadableFeatures: Set[String] =
    TableFeatures.all.filter(f => f.readerWriter && f.read == Full).map(_.name).toSet
  /**
   * Writer features a table Strata writes may support: those whose rules Strata follows, and those whose rules bind
   * only a table that uses them ([[FeatureSupport.WhileUnused]]: such a table is refused by [[checkWritable]]).
   */
  val WritableFeatures: Set[String] = TableFeatures.all.filter(_.write match {
    case NotYet(_) => false
    case _ => true
  }).map(_.name).toSet

  /** The writer features a legacy writer version implies (PROTOCOL.md, "Table Features"). */
  private def legacyWriterFeatures(writerVersion: Int): Set[String] = TableFeatures.impliedBy(1, writerVersion)

  /**
   * The protocol a new table with this metadata needs, as delta-spark 4.4 chooses it: reader 1 / writer 2, or writer
   * 3 for CHECK constraints; any other feature it uses makes it a table-features protocol (writer 7, with the legacy
   * writer features; reader 3 with reader features, or 2 for column mapping alone). Refused when it uses a feature
   * Strata cannot write ([[refusal]]).
   */
  def minimumFor(metadata: Metadata): Protocol = {
    refusal(metadata).foreach(msg => throw UnsupportedProtocolException("STRATA_UNSUPPORTED_PROTOCOL", msg))
    val used = TableFeatures.usedBy(metadata)
    val legacyWriter = if (used.contains(TableFeatures.CheckConstraintsFeature)) 3 else 2
    // Features without legacy versions, with reader rules (PROTOCOL.md: both lists name them) or writer-only.
    val features = used.filter(f => f.legacy.isEmpty && f.readerWriter).map(_.name).toSet
    val writerOnly = used.filter(f => f.legacy.isEmpty && !f.readerWriter).map(_.name).toSet
    val mapped = used.contains(TableFeatures.ColumnMappingFeature) // legacy reader 2, listed beside writer 7
    val mapping = if (mapped) Set(TableFeatures.ColumnMappingFeature.name) else Set.empty[String]
    if (features.nonEmpty) {
      val all = features ++ mapping
      Protocol(3, 7, Some(all), Some(legacyWriterFeatures(legacyWriter) ++ all ++ writerOnly))
    } else if (mapped || writerOnly.nonEmpty)
      Protocol(if (mapped) 2 else 1, 7, None, Some(legacyWriterFeatures(legacyWriter) ++ mapping ++ writerOnly))
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
          (if (ColumnMapping.enabled(metadata)) Set(TableFeatures.ColumnMappingFeature.name) else Set.empty[String])))
    merge(current, needed.copy(readerFeatures = needed.readerFeatures.map(_ -- preview),
      writerFeatures = needed.writerFeatures.map(_ -- preview)))
  }

  /** Features whose preview name delta-spark wrote before their final one (same rules): final name -> preview. */
  private val PreviewNames: Map[String, String] =
    TableFeatures.all.flatMap(f => f.previewOf.map(_ -> f.name)).toMap

  final val TypeWideningFeature = "typeWidening"
  val TypeWideningKey = "delta.enableTypeWidening"
  /** `delta.enableTypeWidening`: ALTER COLUMN TYPE may widen a column (PROTOCOL.md, "Type Widening"). */
  def typeWideningEnabled(m: Metadata): Boolean = TableFeatures.TypeWidening.isUsedBy(m)

  /**
   * The weakest protocol that has everything `current` and `needed` have; `current` itself when it already covers
   * `needed` (so asking for less never downgrades). A legacy writer version stands for the features it implies, so
   * legacy and feature protocols compare; mixing them gives a feature protocol (writer 7). `existing`: `current` is
   * an existing table's protocol, which keeps its legacy form when it already implies every feature asked for
   * (delta-spark keeps writer 6 for `delta.feature.changeDataFeed`); for a new table (or two requests) a feature asked
   * for by name gives the feature form (delta-spark creates `delta.feature.appendOnly` as writer 7).
   */
  def merge(current: Protocol, needed: Protocol, existing: Boolean = true): Protocol = {
    def writerFeatures(p: Protocol) =
      if (p.supportsWriterFeatures) p.writerFeatures.getOrElse(Set.empty)
      else TableFeatures.impliedBy(p.minReaderVersion, p.minWriterVersion)
    // Reader version 2 stands for column mapping, as a writer version for its features.
    def readerFeatures(p: Protocol) = if (p.minReaderVersion >= 3) p.readerFeatures.getOrElse(Set.empty[String])
      else if (p.minReaderVersion == 2) Set("columnMapping") else Set.empty[String]
    val covered = needed.minReaderVersion <= current.minReaderVersion &&
      readerFeatures(needed).subsetOf(readerFeatures(current)) &&
      writerFeatures(needed).subsetOf(writerFeatures(current)) &&
      // A listed feature a legacy protocol implies is covered by it (delta-spark keeps writer 6 for
      // delta.feature.changeDataFeed); a legacy request of a higher version raises the version.
      (current.supportsWriterFeatures || (existing && needed.supportsWriterFeatures) ||
        needed.minWriterVersion <= current.minWriterVersion)
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

  /**
   * Whether Strata may write a table with this protocol and metadata: it reads it; its writer version is one of 1-7;
   * every feature it supports (listed, or implied by legacy versions) is one whose rules Strata follows, or one it
   * does not use ([[FeatureSupport.WhileUnused]]); and its metadata uses no feature Strata cannot write, whether or
   * not the protocol lists it (another writer may set a property without upgrading the protocol).
   */
  def checkWritable(p: Protocol, metadata: Metadata, table: String): Unit = {
    checkReadable(p, table)
    if (p.minWriterVersion < 1 || p.minWriterVersion > 7) throw UnsupportedProtocolException(
      "STRATA_UNSUPPORTED_PROTOCOL", s"Table $table needs writer version ${p.minWriterVersion}; Strata writes " +
        "versions 1 to 7 only.")
    val supported = TableFeatures.supportedBy(p)
    val missing = supported.filter(n => TableFeatures.get(n).forall(_.write.isInstanceOf[NotYet]))
    if (missing.nonEmpty) {
      val legacy = if (p.supportsWriterFeatures) "" else s" (writer version ${p.minWriterVersion})"
      throw UnsupportedProtocolException("STRATA_UNSUPPORTED_PROTOCOL",
        s"Table $table needs writer feature(s) ${missing.toSeq.sorted.mkString(", ")}$legacy, which Strata cannot " +
          s"write yet (supported: ${WritableFeatures.toSeq.sorted.mkString(", ")}).")
    }
    refusal(metadata).foreach(msg => throw UnsupportedProtocolException("STRATA_UNSUPPORTED_PROTOCOL",
      s"Table $table: $msg"))
  }

  /** Why Strata cannot write a table with this metadata: a feature it uses whose rules Strata does not follow yet. */
  private def refusal(m: Metadata): Option[String] = TableFeatures.usedBy(m).iterator.flatMap(f =>
    f.write.lacking.map(what => s"it uses $what (table feature ${f.name}), which Strata cannot write yet")).nextOption()

  /** New row-level changes are written as deletion vectors (`delta.enableDeletionVectors`). */
  def deletionVectorsEnabled(m: Metadata): Boolean = TableFeatures.DeletionVectors.isUsedBy(m)

  /**
   * Whether a row-level change may write deletion vectors: the property asks for them and the protocol lists the
   * feature (readers that honour vectors are only promised by the protocol). Another writer can set the property
   * without upgrading the protocol; vectors written then would be ignored by delta-spark and delta-rs, which would
   * read the deleted rows back, so such a table is changed copy-on-write (as delta-spark does).
   */
  def deletionVectorsWritable(p: Protocol, m: Metadata): Boolean = deletionVectorsEnabled(m) &&
    TableFeatures.DeletionVectors.readBy(p) && TableFeatures.DeletionVectors.supportedBy(p)
}
