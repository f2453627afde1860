package io.strata.config

import io.strata.log.InvalidTableOperationException

import java.util.Locale

/** Options of one write, parsed and validated before any Spark job starts. */
final case class WriteOptions(
    compression: String = "snappy",
    maxRecordsPerFile: Option[Long] = None,
    userMetadata: Option[String] = None,
    txnAppId: Option[String] = None,
    txnVersion: Option[Long] = None,
    partitionColumns: Option[Seq[String]] = None,
    replaceWhere: Option[String] = None,
    partitionOverwriteMode: Option[String] = None,
    mergeSchema: Boolean = false,
    overwriteSchema: Boolean = false,
    optimizeWrite: Option[Boolean] = None) {
  /** The idempotent-write marker, when both halves are given. */
  def appTransaction: Option[(String, Long)] = for { a <- txnAppId; v <- txnVersion } yield (a, v)
}

/** Options of one read. */
final case class ReadOptions(versionAsOf: Option[Long] = None, timestampAsOf: Option[String] = None)

/**
 * Every option Strata accepts, in one place. Unknown options are rejected with the closest known name, because a
 * misspelt option that is silently ignored (as Spark and Delta do) writes the wrong table.
 */
object StrataOptions {
  val Path = "path"
  /** Set by DataFrameWriter.partitionBy (DataSourceUtils.PARTITIONING_COLUMNS_KEY). */
  val PartitionColumns = "__partition_columns"
  val Compression = "compression"
  val MaxRecordsPerFile = "maxRecordsPerFile"
  val UserMetadata = "userMetadata"
  val TxnAppId = "txnAppId"
  val TxnVersion = "txnVersion"
  val VersionAsOf = "versionAsOf"
  val TimestampAsOf = "timestampAsOf"
  val ReplaceWhere = "replaceWhere"
  val PartitionOverwriteMode = "partitionOverwriteMode"
  val MergeSchema = "mergeSchema"
  val OverwriteSchema = "overwriteSchema"
  /** Path writes: shuffle rows to their partition first (catalog writes always do); overrides the table property. */
  val OptimizeWrite = "optimizeWrite"
  /** Catalog (V2) writes only; resolved by [[WriteConf]]. */
  val V2Only: Seq[String] = Seq(WriteConf.DistributionModeKey, WriteConf.MaxOpenFilesKey, WriteConf.TargetFileSizeKey)

  val Codecs: Seq[String] = Seq("snappy", "zstd", "gzip", "lz4", "lz4_raw", "uncompressed", "none")

  private val writeKeys = Seq(Path, PartitionColumns, Compression, MaxRecordsPerFile, UserMetadata, TxnAppId, TxnVersion,
    ReplaceWhere, PartitionOverwriteMode, MergeSchema, OverwriteSchema, OptimizeWrite)
  private val readKeys = Seq(Path, VersionAsOf, TimestampAsOf)
  /** Options of delta-spark that Strata will support but does not yet: named so the error can say so. */
  private val comingSoon = Seq("dataChange", "autoCompact")

  /** Session confs that make every write of the session idempotent (SQL has no write options), as delta-spark's. */
  val SessionTxnAppId = "spark.strata.txnAppId"
  val SessionTxnVersion = "spark.strata.txnVersion"

  /** `o` with the session's application transaction when the write itself names none (write options win). */
  def withSessionTransaction(o: WriteOptions, session: String => Option[String]): WriteOptions =
    if (o.txnAppId.isDefined) o else (session(SessionTxnAppId), session(SessionTxnVersion)) match {
      case (None, None) => o
      case (Some(app), Some(v)) if app.trim.nonEmpty =>
        o.copy(txnAppId = Some(app), txnVersion = Some(positiveLong(SessionTxnVersion, v, allowZero = true)))
      case _ => throw InvalidTableOperationException("STRATA_CONFLICTING_OPTIONS",
        s"Session confs $SessionTxnAppId and $SessionTxnVersion " +
        "go together: set both (a non-empty application id and its increasing version) or neither.")
    }

  /** Options of a path (V1) write. */
  def parseWrite(options: Map[String, String]): WriteOptions = {
    V2Only.find(k => options.keys.exists(_.equalsIgnoreCase(k))).foreach { k =>
      throw InvalidTableOperationException("STRATA_UNSUPPORTED_OPTION",
        s"Option '$k' applies to catalog table writes (writeTo / INSERT), " +
        "where Spark distributes rows for the writer; path writes do not take it.")
    }
    parse(options, writeKeys)
  }

  /** Options of a catalog (V2) write: the path-write options plus the distribution settings. */
  def parseCatalogWrite(options: Map[String, String], session: String => Option[String]): WriteOptions =
    withSessionTransaction(parse(options, writeKeys ++ V2Only), session)

  private def parse(options: Map[String, String], keys: Seq[String]): WriteOptions = {
    val o = normalize(options, keys)
    val codec = o.get(lc(Compression)).map(_.toLowerCase(Locale.ROOT)).getOrElse("snappy")
    if (!Codecs.contains(codec)) bad(Compression, o(lc(Compression)), Codecs.mkString("one of ", ", ", ""))
    val maxRecords = o.get(lc(MaxRecordsPerFile)).map(v => positiveLong(MaxRecordsPerFile, v, allowZero = true))
    val appId = o.get(lc(TxnAppId))
    val txnVersion = o.get(lc(TxnVersion)).map(v => positiveLong(TxnVersion, v, allowZero = true))
    if (appId.isDefined != txnVersion.isDefined) throw InvalidTableOperationException("STRATA_CONFLICTING_OPTIONS",
      s"Options $TxnAppId and $TxnVersion go together: set both (an application id and its monotonically " +
        "increasing version) or neither.")
    appId.foreach(a => if (a.trim.isEmpty) bad(TxnAppId, a, "a non-empty application id"))
    val partitionCols = o.get(lc(PartitionColumns)).map(decodeColumns)
    val overwriteMode = o.get(lc(PartitionOverwriteMode)).map(_.toLowerCase(Locale.ROOT))
    overwriteMode.foreach(m => if (m != "static" && m != "dynamic") {
      bad(PartitionOverwriteMode, o(lc(PartitionOverwriteMode)), "'static' or 'dynamic'")
    })
    val replaceWhere = o.get(lc(ReplaceWhere))
    replaceWhere.foreach(p => if (p.trim.isEmpty) bad(ReplaceWhere, p, "a SQL predicate such as \"day = '2024-01-01'\""))
    WriteOptions(if (codec == "none") "uncompressed" else codec, maxRecords.filter(_ > 0), o.get(lc(UserMetadata)),
      appId, txnVersion, partitionCols, replaceWhere, overwriteMode,
      boolean(o, MergeSchema), boolean(o, OverwriteSchema), o.get(lc(OptimizeWrite)).map(_ => boolean(o, OptimizeWrite)))
  }

  /**
   * Options of a batch read: a path read (`load(path)`) or a catalog table's (`.table(name)`, checked when the scan
   * is planned), with the same accepted set and messages.
   */
  def parseRead(options: Map[String, String]): ReadOptions = {
    refuseChangeFeed(options, "this read would return the table's rows, not its changes. Leave the option out to " +
      s"read the rows (with $VersionAsOf or $TimestampAsOf for an older version).")
    val o = normalize(options, readKeys)
    val version = o.get(lc(VersionAsOf)).map(v => positiveLong(VersionAsOf, v, allowZero = true))
    val ts = o.get(lc(TimestampAsOf))
    if (version.isDefined && ts.isDefined) throw InvalidTableOperationException("STRATA_CONFLICTING_OPTIONS",
      s"Options $VersionAsOf and $TimestampAsOf cannot be used together: pick one.")
    ReadOptions(version, ts)
  }

  /** delta-spark's change data feed read options. */
  private val changeFeedOptions = Seq("readChangeFeed", "readChangeData")

  /**
   * Refuses a change data feed request by name: Strata has none, and a read that ignored the option would hand a
   * pipeline asking for changes the whole table instead. `consequence` says what the read would have done.
   */
  private[config] def refuseChangeFeed(options: Map[String, String], consequence: String): Unit =
    changeFeedOptions.find(n => options.keys.exists(_.equalsIgnoreCase(n))).foreach { n =>
      throw InvalidTableOperationException("STRATA_UNSUPPORTED_OPTION",
        s"Option '$n': change data feed is not supported by Strata yet; $consequence")
    }

  /** Lower-cases keys and rejects anything not in `known`. */
  private[config] def normalize(options: Map[String, String], known: Seq[String]): Map[String, String] = {
    val o = options.map { case (k, v) => k.toLowerCase(Locale.ROOT) -> v }
    val knownLc = known.map(lc).toSet
    o.keys.toSeq.sorted.find(k => !knownLc(k)).foreach { k =>
      val original = options.keys.find(_.toLowerCase(Locale.ROOT) == k).getOrElse(k)
      comingSoon.find(lc(_) == k) match {
        case Some(name) => throw InvalidTableOperationException("STRATA_UNSUPPORTED_OPTION",
          s"Option '$name' is not supported by this version of Strata yet; nothing was written.")
        case None =>
          val closest = known.filterNot(_.startsWith("__")).minBy(c => io.strata.log.Spelling.editDistance(lc(c), k))
          throw InvalidTableOperationException("STRATA_UNKNOWN_OPTION", Map("option" -> original,
            "closest" -> closest, "known" -> known.filterNot(_.startsWith("__")).mkString(", ")))
      }
    }
    o
  }

  private[config] def lc(s: String) = s.toLowerCase(Locale.ROOT)

  private[config] def boolean(o: Map[String, String], name: String): Boolean = o.get(lc(name)) match {
    case None => false
    case Some(v) if v.trim.equalsIgnoreCase("true") => true
    case Some(v) if v.trim.equalsIgnoreCase("false") => false
    case Some(v) => bad(name, v, "true or false")
  }

  private[config] def bad(name: String, value: String, allowed: String): Nothing =
    throw InvalidTableOperationException("STRATA_INVALID_OPTION_VALUE",
      Map("setting" -> s"Option '$name'", "value" -> value, "allowed" -> allowed))

  private[config] def positiveLong(name: String, v: String, allowZero: Boolean): Long =
    v.trim.toLongOption.filter(x => x > 0 || (allowZero && x == 0))
      .getOrElse(bad(name, v, if (allowZero) "a whole number >= 0" else "a whole number > 0"))

  /** DataFrameWriter.partitionBy encodes the columns as a JSON array of strings. */
  private def decodeColumns(json: String): Seq[String] = {
    val node = io.strata.log.ActionCodec.mapper.readTree(json)
    import scala.jdk.CollectionConverters._
    node.elements.asScala.map(_.asText).toSeq
  }
}
