package io.strata.log

import java.util.Locale

/**
 * The `delta.*` table properties a Strata statement (CREATE / REPLACE / CTAS / ALTER TABLE SET TBLPROPERTIES) may
 * set, following delta-spark's DeltaConfigs: an unknown key is refused with the closest known one, values are checked
 * where delta-spark checks them, a property that turns on a feature Strata cannot write is refused by name, and the
 * protocol properties (`delta.minReaderVersion`, `delta.minWriterVersion`, `delta.feature.<name>`,
 * `delta.ignoreProtocolDefaults`) upgrade the protocol in the same commit instead of being stored (delta-spark strips
 * them from the metadata too). Only what a statement sets is checked: tables written by others may hold keys this
 * Strata does not know, and they stay readable and writable.
 */
object TableProperties {
  val MinReaderVersion = "delta.minReaderVersion"
  val MinWriterVersion = "delta.minWriterVersion"
  val FeaturePrefix = "delta.feature."
  private val IgnoreProtocolDefaults = "delta.ignoreProtocolDefaults"

  /** How a property's value is checked (delta-spark's validation of the same key). */
  private sealed trait Check
  private case object AnyValue extends Check
  private case object Bool extends Check
  private final case class WholeNumber(min: Long, what: String) extends Check
  private case object Interval extends Check
  private final case class OneOf(values: Seq[String]) extends Check
  /** Accepted while off; turning it on needs something Strata does not write yet (named in `why`). */
  private final case class Unsupported(why: String, isOff: String => Boolean) extends Check

  private def off(v: String) = v.trim.equalsIgnoreCase("false")
  private def emptyOrNull(v: String) = v.trim.isEmpty
  private def unsupportedFlag(why: String) = Unsupported(why, off)

  /** delta-spark's DeltaConfigs keys (without `delta.`), plus the Databricks file-size keys other engines store. */
  private val known: Seq[(String, Check)] = Seq(
    "appendOnly" -> Bool,
    "checkpointInterval" -> WholeNumber(1, "a positive whole number"),
    "logRetentionDuration" -> Interval,
    "sampleRetentionDuration" -> Interval,
    "checkpointRetentionDuration" -> Interval,
    "deletedFileRetentionDuration" -> Interval,
    "setTransactionRetentionDuration" -> Interval,
    "dropFeatureTruncateHistory.retentionDuration" -> Interval,
    "enableExpiredLogCleanup" -> Bool,
    "enableFullRetentionRollback" -> Bool,
    "randomizeFilePrefixes" -> Bool,
    "randomPrefixLength" -> WholeNumber(1, "a positive whole number"),
    "dataSkippingNumIndexedCols" -> WholeNumber(-1, "a whole number >= -1 (-1: all columns)"),
    "dataSkippingStatsColumns" -> AnyValue,
    "dataSkippingStringPrefixLength" -> WholeNumber(0, "a whole number >= 0"),
    "checkpoint.writeStatsAsJson" -> Bool,
    "checkpoint.writeStatsAsStruct" -> Bool,
    "checkpointPolicy" -> OneOf(Seq("classic", "v2")), // v2: the feature v2Checkpoint (ProtocolSupport.minimumFor)
    "isolationLevel" -> OneOf(Seq("Serializable")),
    "autoOptimize" -> Bool,
    "autoOptimize.optimizeWrite" -> Bool,
    "autoOptimize.autoCompact" -> OneOf(Seq("auto", "legacy", "true", "false")),
    "targetFileSize" -> AnyValue,
    "tuneFileSizesForRewrites" -> Bool,
    "parquet.format.version" -> AnyValue,
    "writePartitionColumnsToParquet" -> Bool,
    "requireCheckpointProtectionBeforeVersion" -> WholeNumber(0, "a whole number >= 0"),
    "rowTrackingSuspended" -> Bool,
    "castIcebergTimeType" -> Bool,
    "ignoreIcebergBucketPartition" -> Bool,
    "universalFormat.iceberg.atomicConversion.supported" -> Bool,
    "compatibility.symlinkFormatManifest.enabled" ->
      unsupportedFlag("symlink manifests, which Strata does not generate after its writes"),
    "enableChangeDataFeed" -> unsupportedFlag("change data feed (table feature changeDataFeed)"),
    "enableChangeDataCapture" -> unsupportedFlag("change data feed (table feature changeDataFeed)"),
    "enableDeletionVectors" -> Bool,
    "columnMapping.mode" -> OneOf(ColumnMapping.Modes),
    "columnMapping.maxColumnId" -> Unsupported("column mapping (it is maintained by column mapping itself)", _ => false),
    "enableRowTracking" -> unsupportedFlag("row tracking (table feature rowTracking)"),
    "enableTypeWidening" -> Bool, // true: the feature typeWidening (ProtocolSupport.minimumFor)
    "enableIcebergCompatV1" -> unsupportedFlag("Iceberg compatibility (table feature icebergCompatV1)"),
    "enableIcebergCompatV2" -> unsupportedFlag("Iceberg compatibility (table feature icebergCompatV2)"),
    "enableIcebergCompatV3" -> unsupportedFlag("Iceberg compatibility (table feature icebergCompatV3)"),
    "universalFormat.enabledFormats" -> Unsupported("UniForm (Iceberg/Hudi metadata conversion)", emptyOrNull),
    "enableInCommitTimestamps" -> Bool,
    "inCommitTimestampEnablementVersion" -> Unsupported("in-commit timestamps (set by the writer enabling them)", _ => false),
    "inCommitTimestampEnablementTimestamp" -> Unsupported("in-commit timestamps (set by the writer enabling them)", _ => false),
    "enableVariantShredding" -> unsupportedFlag("variant shredding (table feature variantShredding)"),
    "enableMaterializePartitionColumnsFeature" -> unsupportedFlag("table feature materializePartitionColumns"),
    "coordinatedCommits.commitCoordinator-preview" -> Unsupported("coordinated commits", emptyOrNull),
    "coordinatedCommits.commitCoordinatorConf-preview" -> Unsupported("coordinated commits", emptyOrNull),
    "coordinatedCommits.tableConf-preview" -> Unsupported("coordinated commits", emptyOrNull),
    "redirectReaderWriter-preview" -> Unsupported("table redirection", emptyOrNull),
    "redirectWriterOnly-preview" -> Unsupported("table redirection", emptyOrNull))

  private val byLowerKey: Map[String, (String, Check)] =
    known.map { case (k, c) => s"delta.$k".toLowerCase(Locale.ROOT) -> (s"delta.$k", c) }.toMap

  /** True for the keys that ask for a protocol rather than being stored in the metadata. */
  def isProtocolProperty(key: String): Boolean = {
    val k = key.toLowerCase(Locale.ROOT)
    k == MinReaderVersion.toLowerCase(Locale.ROOT) || k == MinWriterVersion.toLowerCase(Locale.ROOT) ||
      k == IgnoreProtocolDefaults.toLowerCase(Locale.ROOT) || k.startsWith(FeaturePrefix)
  }

  /**
   * Checks the properties a statement sets and returns them with `delta.*` keys in their canonical spelling
   * (delta-spark matches these keys case-insensitively). Throws [[InvalidTableOperationException]] naming the key.
   */
  def validate(props: Map[String, String], table: String): Map[String, String] = props.map { case (key, value) =>
    val lk = key.toLowerCase(Locale.ROOT)
    if (!lk.startsWith("delta.") || lk.startsWith(CheckConstraints.Prefix.toLowerCase(Locale.ROOT))) key -> value
    else if (isProtocolProperty(key)) {
      parseProtocol(Map(key -> value), table) // checks the value
      if (lk.startsWith(FeaturePrefix)) FeaturePrefix + canonicalFeature(key, table) -> value
      else Seq(MinReaderVersion, MinWriterVersion, IgnoreProtocolDefaults).find(_.equalsIgnoreCase(key)).get -> value
    } else if (lk.startsWith("delta.universalformat.config.")) {
      throw UnsupportedProtocolException("STRATA_UNSUPPORTED_PROTOCOL",
        s"Table property $key of $table configures UniForm, which Strata does " +
        "not support yet.")
    } else byLowerKey.get(lk) match {
      case Some((canonical, check)) => checkValue(canonical, check, value, table); canonical -> value
      case None =>
        val closest = (byLowerKey.values.map(_._1).toSeq ++ Seq(MinReaderVersion, MinWriterVersion))
          .minBy(k => Spelling.editDistance(k.toLowerCase(Locale.ROOT), lk))
        throw InvalidTableOperationException("STRATA_UNKNOWN_TABLE_PROPERTY",
          Map("property" -> key, "table" -> table, "closest" -> closest))
    }
  }

  /** A table property's value that is not one it may take: `setting` ("Table property k of t") must be `expected`. */
  def invalidValue(setting: String, value: String, expected: String): InvalidTableOperationException =
    InvalidTableOperationException("STRATA_INVALID_TABLE_PROPERTY_VALUE",
      Map("setting" -> setting, "value" -> value, "allowed" -> expected))

  private def checkValue(key: String, check: Check, value: String, table: String): Unit = {
    def bad(expected: String): Nothing = throw invalidValue(s"Table property $key of $table", value, expected)
    check match {
      case AnyValue =>
      case Bool => if (!value.trim.equalsIgnoreCase("true") && !value.trim.equalsIgnoreCase("false")) bad("true or false")
      case WholeNumber(min, what) => if (!value.trim.toLongOption.exists(_ >= min)) bad(what)
      case Interval => if (Intervals.parseMillis(value).isEmpty) bad("an interval such as 'interval 7 days' " +
        "(units: millisecond, second, minute, hour, day, week; months and years are not accepted)")
      case OneOf(values) => if (!values.exists(_.equalsIgnoreCase(value.trim))) bad(values.mkString("one of ", ", ", ""))
      case Unsupported(why, isOff) => if (!isOff(value)) throw UnsupportedProtocolException("STRATA_UNSUPPORTED_PROTOCOL",
        s"Table property $key='$value' of $table needs $why, which Strata cannot write yet; nothing was changed.")
    }
  }

  /** `delta.feature.<name>`: the feature's canonical name; an unknown name is refused with the closest one. */
  private def canonicalFeature(key: String, table: String): String = {
    val name = key.substring(FeaturePrefix.length)
    TableFeatures.named(name).map(_.name).getOrElse {
      val closest = TableFeatures.all.map(_.name).minBy(f => Spelling.editDistance(f.toLowerCase(Locale.ROOT),
        name.toLowerCase(Locale.ROOT)))
      throw InvalidTableOperationException("STRATA_UNKNOWN_TABLE_FEATURE",
        Map("property" -> key, "table" -> table, "feature" -> name, "closest" -> closest))
    }
  }

  /** The versions and features protocol properties ask for, each checked on its own against what Strata writes. */
  private def parseProtocol(props: Map[String, String], table: String): (Option[Int], Option[Int], Set[String]) = {
    def version(key: String, allowed: Seq[Int]): Option[Int] = props.find(_._1.equalsIgnoreCase(key)).map { case (k, v) =>
      v.trim.toIntOption.filter(allowed.contains).getOrElse(
        throw invalidValue(s"Table property $k of $table", v, s"one of ${allowed.mkString(", ")}"))
    }
    val reader = version(MinReaderVersion, 1 to 3)
    val writer = version(MinWriterVersion, 1 to 7)
    props.find(_._1.equalsIgnoreCase(IgnoreProtocolDefaults)).foreach { case (k, v) =>
      if (!v.trim.equalsIgnoreCase("true") && !v.trim.equalsIgnoreCase("false"))
        throw invalidValue(s"Table property $k of $table", v, "true or false")
    }
    // Legacy versions stand for the features they imply (reader 2: column mapping; writer 4: change data feed and
    // generated columns; 6: identity columns): a table may support them, and Strata writes it while it does not use
    // a feature whose rules Strata does not follow yet (ProtocolSupport.checkWritable).
    val features = props.toSeq.filter(_._1.toLowerCase(Locale.ROOT).startsWith(FeaturePrefix)).map { case (k, v) =>
      if (!Seq("supported", "enabled").exists(_.equalsIgnoreCase(v.trim))) throw invalidValue(
        s"Table property $k of $table", v, "'supported' (features cannot be dropped by a property)")
      val name = canonicalFeature(k, table)
      if (!ProtocolSupport.WritableFeatures(name)) throw UnsupportedProtocolException("STRATA_UNSUPPORTED_PROTOCOL",
        s"Table property $k of " +
        s"$table asks for table feature $name, which Strata cannot write yet (it writes " +
        s"${ProtocolSupport.WritableFeatures.toSeq.sorted.mkString(", ")}); nothing was changed.")
      name
    }.toSet
    (reader, writer, features)
  }

  /**
   * The protocol the protocol properties among `props` ask for (None when there are none). Version numbers stand for
   * the features they imply, so asking for less than the table has changes nothing, as in delta-spark; `current` is
   * the table's protocol, if it exists.
   */
  def protocolRequest(props: Map[String, String], table: String, current: Option[Protocol] = None): Option[Protocol] = {
    val (reader, writer, features) = parseProtocol(props, table)
    if (reader.isEmpty && writer.isEmpty && features.isEmpty) return None
    // An unset reader version asks nothing (the merge keeps the table's); an unset writer version is the table's, so
    // that minReaderVersion=3 alone works on a writer-7 table.
    val r = reader.getOrElse(1)
    val w = writer.orElse(current.map(_.minWriterVersion)).getOrElse(1)
    if (r == 3 && w < 7) throw InvalidTableOperationException("STRATA_INVALID_PROTOCOL_REQUEST",
      s"Table property $MinReaderVersion=3 of $table " +
      s"needs writer version 7 (reader features come with writer features); set '$MinWriterVersion'='7' too.")
    // A feature with reader rules needs reader 3 (its legacy reader version for column mapping: 2), as delta-spark's
    // protocol upgrade does.
    val listed = features.flatMap(TableFeatures.get)
    val readerFeatures = listed.filter(_.readerWriter)
    Some(if (w >= 7 || features.nonEmpty) {
      val rv = (readerFeatures.map(_.versions._1) + r).max
      Protocol(rv, 7, if (rv >= 3) Some(readerFeatures.map(_.name)) else None, Some(features))
    } else FeatureDrop.normalized(TableFeatures.impliedBy(r, w))) // (2, 2) is (1, 2), as delta-spark takes it
  }

  /**
   * For a statement that sets `props` on the table `txn` writes: checks them, asks the transaction for the protocol
   * they request, and returns what is stored in the metadata (without the protocol properties).
   */
  def applyTo(txn: Transaction, props: Map[String, String], table: String): Map[String, String] = {
    val valid = validate(props, table)
    protocolRequest(valid, table, txn.protocol).foreach(txn.requireProtocol)
    valid.filterNot { case (k, _) => isProtocolProperty(k) }
  }
}
