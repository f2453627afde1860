package io.strata.config

import java.util.Locale

import io.strata.config.SettingSource.{SessionConf, TableProperty, WriteOption}
import io.strata.config.WriteSettings._
import io.strata.log.InvalidTableOperationException

/**
 * The settings of one write, resolved in one place (after Iceberg's SparkWriteConf): every entry point builds it the
 * same way, with [[WriteConf.forWrite]] from the write's options and the session's confs, and the write binds the
 * table's properties once it has read the table ([[forTable]]). Each setting of [[WriteSettings]] then resolves with
 * one rule: write option > session conf > table property > default. The write options were checked when it was
 * built: unknown ones refused with the closest known name, misplaced ones with where they belong, values parsed;
 * the application transaction was worked out ([[WriteConf.transaction]]).
 */
final class WriteConf private (
    val entry: WriteEntry,
    /** The write options given, by canonical key, parsed. */
    options: Map[String, Any],
    session: String => Option[String],
    tableProperties: Option[Map[String, String]],
    /** The idempotent-write marker (txnAppId, txnVersion), when this write has one. */
    val appTransaction: Option[(String, Long)]) {

  private def copy(options: Map[String, Any] = options, tableProperties: Option[Map[String, String]] = tableProperties,
                   appTransaction: Option[(String, Long)] = appTransaction): WriteConf =
    new WriteConf(entry, options, session, tableProperties, appTransaction)

  /** The value of `s` and where it came from; None: its default applies. */
  def resolved[T](s: WriteSetting[T]): Option[(SettingSource, T)] =
    s.option.filter(options.contains).map(k => (WriteOption(k): SettingSource) -> options(k).asInstanceOf[T])
      .orElse(s.sessions.iterator.flatMap(k => session(k).map(v => SessionConf(k) -> WriteConf.parse(s,
        SessionConf(k), v))).nextOption())
      .orElse(s.property.flatMap { k =>
        val properties = tableProperties.getOrElse(throw new IllegalStateException(
          s"Setting $s read before the write knew its table's properties"))
        properties.get(k).map(v => TableProperty(k) -> WriteConf.parse(s, TableProperty(k), v))
      })

  def apply[T](s: WriteSetting[T]): T = resolved(s).fold(s.default)(_._2)

  /** True when the write options set `s` themselves. */
  def givenAsOption(s: WriteSetting[_]): Boolean = s.option.exists(options.contains)

  /** This write once it knows its table's properties (as the write's commit will hold them). */
  def forTable(properties: Map[String, String]): WriteConf = copy(tableProperties = Some(properties))

  /** The columns a streaming sink was asked to partition a new table by (Spark hands them over separately). */
  def withPartitionColumns(columns: Seq[String]): WriteConf =
    if (columns.isEmpty) this else copy(options = options + (PartitionColumns.option.get -> Some(columns)))

  /** One micro-batch of a streaming write: its application transaction is (txnAppId or the query id, batch id). */
  def forMicroBatch(queryId: String, batchId: Long): WriteConf =
    copy(appTransaction = WriteConf.transaction(entry, options, session, Some(queryId -> batchId)))

  def partitionColumns: Option[Seq[String]] = this(PartitionColumns)
  def compression: String = this(Compression)
  /** None: no limit of Strata's (a path write's file writer then applies spark.sql.files.maxRecordsPerFile). */
  def maxRecordsPerFile: Option[Long] = Some(this(MaxRecordsPerFile)).filter(_ > 0)
  def userMetadata: Option[String] = this(UserMetadata)
  def replaceWhere: Option[String] = this(ReplaceWhere)
  def dynamicPartitionOverwrite: Boolean = this(PartitionOverwriteMode) == "dynamic"
  def mergeSchema: Boolean = this(MergeSchema)
  def overwriteSchema: Boolean = this(OverwriteSchema)
  def automaticWidening: String = this(AutomaticWidening)
  def optimizeWrite: Boolean = this(OptimizeWrite)
  def distributionMode(partitioned: Boolean): DistributionMode =
    this(Distribution).getOrElse(if (partitioned) DistributionMode.Hash else DistributionMode.None)
  def targetFileSizeBytes: Long = this(TargetFileSize)
  def maxOpenFiles: Int = this(MaxOpenFiles)
  def maxInlineVectorBytes: Int = this(InlineVectorBytes)
  def numIndexedColumns: Int = this(NumIndexedColumns)
}

object WriteConf {
  /** Options Spark's DataStreamWriter reads itself; they reach streaming and catalog writes among the options. */
  private val SparkStreamOptions = Set("checkpointlocation", "queryname", "asyncprogresstrackingenabled",
    "asyncprogresstrackingcheckpointintervalms")

  /**
   * The settings of a write starting at `entry` with these write options (keys as the user spelled them) in a session
   * whose confs `session` looks up. Refuses unknown and misplaced options and invalid option values before anything
   * is written.
   */
  /** The option Spark's `DataFrameWriter.clusterBy` passes to a V1 source. */
  val ClusteringColumnsOption = "__clustering_columns"

  def forWrite(options: Map[String, String], entry: WriteEntry, session: String => Option[String]): WriteConf = {
    val raw = if (entry.catalog || entry.streaming) {
      options.filterNot { case (k, _) => SparkStreamOptions(k.toLowerCase(Locale.ROOT)) }
    } else options
    misplaced(raw.keySet, entry).foreach(m => throw InvalidTableOperationException("STRATA_UNSUPPORTED_OPTION", m))
    // Spark's DataFrameWriter.clusterBy on a path write: the clustering is a table definition, made by the catalog.
    if (raw.keySet.exists(_.equalsIgnoreCase(ClusteringColumnsOption))) throw InvalidTableOperationException(
      "STRATA_UNSUPPORTED_OPTION", "clusterBy(...) on a path write is not supported: cluster a table with CREATE " +
        "TABLE ... CLUSTER BY (...), ALTER TABLE ... CLUSTER BY (...) or df.writeTo(name).clusterBy(...).create(), " +
        "then write to it.")
    val accepted = optionsOf(entry)
    val lc = StrataOptions.normalize(raw, StrataOptions.Path +: accepted.flatMap(_.option))
    val parsed: Map[String, Any] = accepted.flatMap { s =>
      val key = s.option.get
      lc.get(key.toLowerCase(Locale.ROOT)).map(v => key -> parse(s, WriteOption(key), v))
    }.toMap
    new WriteConf(entry, parsed, session, None, transaction(entry, parsed, session, None))
  }

  /** Settings of work Strata starts itself (auto-compaction, OPTIMIZE): session confs and the table's properties. */
  def internal(session: String => Option[String], properties: Map[String, String]): WriteConf =
    new WriteConf(WriteEntry.Internal, Map.empty, session, Some(properties), None)

  private[config] def parse[T](s: WriteSetting[T], source: SettingSource, value: String): T =
    s.parse(value).getOrElse(throw InvalidTableOperationException(source.invalidValueCondition,
      Map("setting" -> source.describe, "value" -> value, "allowed" -> s.expected)))

  /**
   * The application transaction of a write, worked out here only. Batch writes: the write options txnAppId and
   * txnVersion (both or neither), else the session confs spark.strata.txnAppId / txnVersion (both or neither),
   * else none. Streaming writes: the option txnAppId, else the query's id, with the micro-batch id as version
   * (`batch`: (query id, batch id); None when the query starts); the session confs are for batch SQL (foreachBatch).
   */
  private[config] def transaction(entry: WriteEntry, options: Map[String, Any], session: String => Option[String],
                                  batch: Option[(String, Long)]): Option[(String, Long)] = {
    def option[T](s: WriteSetting[Option[T]]): Option[T] =
      s.option.flatMap(options.get).flatMap(_.asInstanceOf[Option[T]])
    val (appId, version) = (option(TxnAppId), option(TxnVersion))
    if (entry.streaming) return batch.map { case (queryId, batchId) => (appId.getOrElse(queryId), batchId) }
    if (appId.isDefined != version.isDefined) throw InvalidTableOperationException("STRATA_CONFLICTING_OPTIONS",
      s"Options ${TxnAppId.option.get} and ${TxnVersion.option.get} go together: set both (an application id and its " +
        "monotonically increasing version) or neither.")
    if (appId.isDefined) return appId.zip(version)
    // Strata's pair of session confs, else delta-spark's: the first pair with a half set decides.
    TxnAppId.sessions.zip(TxnVersion.sessions).iterator.map { case (appKey, versionKey) =>
      (appKey, versionKey, session(appKey), session(versionKey))
    }.collectFirst {
      case (_, versionKey, Some(app), Some(v)) if app.trim.nonEmpty =>
        app -> parse(TxnVersion, SessionConf(versionKey), v).get
      case (appKey, versionKey, app, v) if app.isDefined || v.isDefined =>
        throw InvalidTableOperationException("STRATA_CONFLICTING_OPTIONS", s"Session confs $appKey and " +
          s"$versionKey go together: set both (a non-empty application id and its increasing version) or neither.")
    }
  }

  /** The refusal of an option `entry` does not take but another write does, saying where it belongs. */
  private def misplaced(keys: Set[String], entry: WriteEntry): Option[String] = {
    val present = all.filter(s => s.option.exists(k => keys.exists(_.equalsIgnoreCase(k))) && !s.entries(entry))
    def first(p: WriteSetting[_] => Boolean) = present.find(p).flatMap(_.option)
    if (entry.streaming) {
      first(_ == TxnVersion).map(k => s"Option $k does not apply to streaming writes: each micro-batch commits with " +
        s"its batch id as the version. Give ${TxnAppId.option.get} alone to name the application across checkpoints.")
        .orElse(first(s => s.entries.nonEmpty && s.entries.forall(!_.streaming)).map(k => s"Option '$k' does " +
          "not apply to streaming writes: output mode 'append' adds each micro-batch's rows, 'complete' replaces all " +
          "rows of the table with them."))
        .orElse(first(_.entries(WriteEntry.CatalogStream)).map(catalogOnly))
    } else if (entry.catalog) {
      first(_.entries(WriteEntry.PathWrite)).map(_ => s"Options ${ReplaceWhere.option.get} and " +
        s"${PartitionOverwriteMode.option.get} belong to path writes; for catalog tables use INSERT OVERWRITE ... " +
        "PARTITION, overwrite(condition) or overwritePartitions().")
    } else if (entry == WriteEntry.PathWrite) first(_.entries(WriteEntry.CatalogWrite)).map(catalogOnly)
    else None
  }

  private def catalogOnly(key: String): String = s"Option '$key' applies to catalog table writes (writeTo / INSERT), " +
    "where Spark distributes rows for the writer; path writes do not take it."
}
