package io.strata.config

import java.util.Locale

/**
 * Where a write starts. It decides which write options are accepted: path and catalog writes take different
 * layout options, streaming writes commit per micro-batch. `Internal`: work Strata starts itself (OPTIMIZE,
 * auto-compaction), which takes no write options.
 */
sealed abstract class WriteEntry(val catalog: Boolean, val streaming: Boolean)
object WriteEntry {
  /** `df.write.format("strata").save(path)` (V1). */
  case object PathWrite extends WriteEntry(catalog = false, streaming = false)
  /** `writeTo`, SQL INSERT / CTAS / RTAS, DELETE / UPDATE / MERGE (V2). */
  case object CatalogWrite extends WriteEntry(catalog = true, streaming = false)
  /** `writeStream.format("strata").start(path)` (the V1 sink). */
  case object PathStream extends WriteEntry(catalog = false, streaming = true)
  /** `writeStream.toTable(name)` (V2 StreamingWrite). */
  case object CatalogStream extends WriteEntry(catalog = true, streaming = true)
  case object Internal extends WriteEntry(catalog = false, streaming = false)

  val Batch: Set[WriteEntry] = Set(PathWrite, CatalogWrite)
  val Paths: Set[WriteEntry] = Set(PathWrite, PathStream)
  val Catalogs: Set[WriteEntry] = Set(CatalogWrite, CatalogStream)
  val All: Set[WriteEntry] = Batch ++ Set(PathStream, CatalogStream)
}

/**
 * Where a setting's value came from; errors about the value name it, with the error condition of an invalid value
 * from there (an option of this write, a conf of the session, a property of the table).
 */
sealed abstract class SettingSource(val key: String, val invalidValueCondition: String) {
  def describe: String
}
object SettingSource {
  /** Delta-style option names are quoted as delta-spark quotes them; Iceberg-style `write.*` keys are not. */
  final case class WriteOption(k: String) extends SettingSource(k, "STRATA_INVALID_OPTION_VALUE") {
    def describe: String = if (k.startsWith("write.")) s"write option $k" else s"Option '$k'"
  }
  final case class SessionConf(k: String) extends SettingSource(k, "STRATA_INVALID_CONF_VALUE") {
    def describe: String = s"session conf $k"
  }
  final case class TableProperty(k: String) extends SettingSource(k, "STRATA_INVALID_TABLE_PROPERTY_VALUE") {
    def describe: String = s"table property $k"
  }
}

/**
 * One write setting: the write option, session confs and table property that may set it (each optional), its
 * default, and how a value is read (`parse`: None for an invalid value; `expected` says what a valid one is).
 * `sessions`: Strata's session conf, then delta-spark's conf for the same setting (read when Strata's is not set,
 * so a session moved over from delta-spark keeps its settings). `entries`: the writes whose option it is.
 */
final class WriteSetting[T] private[config] (
    val name: String,
    val option: Option[String],
    val sessions: Seq[String],
    val property: Option[String],
    val default: T,
    val expected: String,
    val parse: String => Option[T],
    val entries: Set[WriteEntry]) {
  override def toString: String = name
}

/** How a catalog write asks Spark to lay rows out across tasks before they reach the writers. */
sealed abstract class DistributionMode(val name: String)
object DistributionMode {
  /** No shuffle: each task writes its rows as they come, with one open file per partition it sees (fanout). */
  case object None extends DistributionMode("none")
  /** Hash-cluster by partition columns: about one file per partition, one open file per task. */
  case object Hash extends DistributionMode("hash")
  /** Range-order by partition columns: like hash, with partitions in sorted ranges across tasks. */
  case object Range extends DistributionMode("range")
  val all: Seq[DistributionMode] = Seq(None, Hash, Range)
}

/**
 * Every setting of a write, in one table: which write option, session conf and table property set it, and its
 * default. [[WriteConf]] resolves them with one rule: write option > session conf > table property > default.
 * (The application transaction, txnAppId + txnVersion, is resolved as a pair: [[WriteConf.transaction]].)
 */
object WriteSettings {
  import WriteEntry._

  /** `delta`: delta-spark's session conf for the setting, read after `session` (`spark.databricks.delta.` + it). */
  private def setting[T](name: String, option: String = null, session: String = null, property: String = null,
                         entries: Set[WriteEntry] = All, delta: String = null)(default: T, expected: String)(
      parse: String => Option[T]) = new WriteSetting[T](name, Option(option),
    Option(session).toSeq ++ Option(delta).map(DeltaConf + _), Option(property), default, expected, parse, entries)

  /** The prefix of delta-spark's session confs. */
  val DeltaConf = "spark.databricks.delta."

  private def text(v: String): Option[Option[String]] = Some(Some(v))
  private def bool(v: String): Option[Boolean] = v.trim.toLowerCase(Locale.ROOT) match {
    case "true" => Some(true)
    case "false" => Some(false)
    case _ => scala.None
  }
  private def wholeNumber(min: Long, max: Long)(v: String): Option[Long] =
    v.trim.toLongOption.filter(n => n >= min && n <= max)

  /** Set by DataFrameWriter.partitionBy (DataSourceUtils.PARTITIONING_COLUMNS_KEY), a JSON array. */
  val PartitionColumns = setting[Option[Seq[String]]]("partition columns", "__partition_columns")(
    scala.None, "a JSON array of column names")(v => scala.util.Try(Some(StrataOptions.decodeColumns(v))).toOption)

  val Codecs: Seq[String] = Seq("snappy", "zstd", "gzip", "lz4", "lz4_raw", "uncompressed", "none")
  /** Parquet codec of the data files; `none` is `uncompressed`. */
  val Compression = setting[String]("compression", "compression")("snappy",
    Codecs.mkString("one of ", ", ", "")) { v =>
    Some(v.toLowerCase(Locale.ROOT)).filter(Codecs.contains).map(c => if (c == "none") "uncompressed" else c)
  }
  /** Rows per file before rolling to a new one (0: no limit). */
  val MaxRecordsPerFile = setting[Long]("max records per file", "maxRecordsPerFile")(0L,
    "a whole number >= 0")(wholeNumber(0, Long.MaxValue))
  val UserMetadata = setting[Option[String]]("user metadata", "userMetadata", delta = "commitInfo.userMetadata")(
    scala.None, "text")(text)
  val TxnAppId = setting[Option[String]]("application id", "txnAppId", "spark.strata.txnAppId",
    delta = "write.txnAppId")(
    scala.None, "a non-empty application id")(v => if (v.trim.isEmpty) scala.None else text(v))
  /** Batch writes only: a micro-batch's version is its batch id. */
  val TxnVersion = setting[Option[Long]]("application version", "txnVersion", "spark.strata.txnVersion",
    entries = Batch, delta = "write.txnVersion")(scala.None, "a whole number >= 0")(v =>
    wholeNumber(0, Long.MaxValue)(v).map(Some(_)))
  /** Path writes, mode overwrite: the rows this SQL predicate matches are replaced. */
  val ReplaceWhere = setting[Option[String]]("replaceWhere", "replaceWhere", entries = Set(PathWrite))(
    scala.None, "a SQL predicate such as \"day = '2024-01-01'\"")(v => if (v.trim.isEmpty) scala.None else text(v))
  /** Path writes, mode overwrite: `dynamic` replaces only the partitions written (Spark's session conf applies). */
  val PartitionOverwriteMode = setting[String]("partition overwrite mode", "partitionOverwriteMode",
    "spark.sql.sources.partitionOverwriteMode", entries = Set(PathWrite))("static", "'static' or 'dynamic'") { v =>
    Some(v.trim.toLowerCase(Locale.ROOT)).filter(m => m == "static" || m == "dynamic")
  }
  /** delta-spark's session conf turns schema evolution on for every write of the session, as there. */
  val MergeSchema = setting[Boolean]("mergeSchema", "mergeSchema", delta = "schema.autoMerge.enabled")(false,
    "true or false")(bool)
  /**
   * Which widenings schema evolution applies by itself (delta-spark's internal conf, same values and default):
   * `always` every one PROTOCOL.md lists, `same_family_type` only within a type family (integers, float to double,
   * decimals, date to timestamp_ntz), `never` none.
   */
  val AutomaticWidening = setting[String]("automatic widening",
    delta = "typeWidening.allowAutomaticWidening")("always",
    "'always', 'same_family_type' or 'never'") { v =>
    Some(v.trim.toLowerCase(Locale.ROOT)).filter(Set("always", "same_family_type", "never"))
  }
  val OverwriteSchema = setting[Boolean]("overwriteSchema", "overwriteSchema", entries = Batch)(false,
    "true or false")(bool)
  /** Path writes: shuffle rows to their partition first (catalog writes are distributed by Spark anyway). */
  val OptimizeWrite = setting[Boolean]("optimized write", "optimizeWrite",
    property = "delta.autoOptimize.optimizeWrite", delta = "optimizeWrite.enabled")(false, "true or false")(bool)

  /** Catalog writes: how Spark lays rows out before the writers; None: hash if partitioned, else none. */
  val Distribution = iceberg[Option[DistributionMode]]("write.distribution-mode")(scala.None,
    DistributionMode.all.map(_.name).mkString("one of ", ", ", "")) { v =>
    DistributionMode.all.find(_.name == v.trim.toLowerCase(Locale.ROOT)).map(Some(_))
  }
  /** Catalog writes: a task's writer rolls to a new file at this size; the advisory shuffle partition size too. */
  val TargetFileSize = iceberg[Long]("write.target-file-size-bytes")(128L * 1024 * 1024,
    "a whole number of bytes > 0")(wholeNumber(1, Long.MaxValue))
  /** Catalog writes without clustering (and merge-on-read DML): most files one task keeps open. */
  val MaxOpenFiles = iceberg[Int]("write.fanout.max-open-files")(100, "a whole number > 0")(
    v => wholeNumber(1, Int.MaxValue)(v).map(_.toInt))
  /** Merge-on-read DML: vectors of at most this many bytes go inline into the log (0: always a file). No option. */
  val InlineVectorBytes = setting[Int]("inline deletion vector bytes",
    session = "spark.strata.write.deletion-vector.inline-max-bytes",
    property = "write.deletion-vector.inline-max-bytes", entries = Set.empty)(0,
    "a whole number of bytes from 0 to 4096")(v => wholeNumber(0, 4096)(v).map(_.toInt))

  /** `key` as write option (catalog writes), `spark.strata.<key>` as session conf, `key` as table property. */
  private def iceberg[T](key: String) = setting[T](key, key, "spark.strata." + key, key, Catalogs) _

  /** Leaf columns with statistics (-1: all). Lenient: an unreadable value (another engine's table) is the default. */
  val NumIndexedColumns = setting[Int]("indexed columns",
    property = "delta.dataSkippingNumIndexedCols")(32, "a whole number")(v =>
    Some(v.trim.toIntOption.map(n => if (n < 0) Int.MaxValue else n).getOrElse(32)))

  /** After a commit: compact the partitions it touched (`true`, or delta-spark's `auto` / `legacy`). Lenient. */
  val AutoCompact = setting[Boolean]("auto-compaction", property = "delta.autoOptimize.autoCompact",
    delta = "autoCompact.enabled")(
    false, "true, auto, legacy or false")(v => Some(Set("true", "auto", "legacy")(v.trim.toLowerCase(Locale.ROOT))))
  private def autoCompact(name: String, default: Long) = setting(s"auto-compaction $name",
    session = s"spark.strata.autoCompact.$name", property = s"strata.autoCompact.$name",
    delta = s"autoCompact.$name")(default,
    "a whole number > 0")(wholeNumber(1, Long.MaxValue))
  val AutoCompactMinNumFiles: WriteSetting[Long] = autoCompact("minNumFiles", 50)
  val AutoCompactMinFileSize: WriteSetting[Long] = autoCompact("minFileSize", 64L * 1024 * 1024)
  val AutoCompactMaxFileSize: WriteSetting[Long] = autoCompact("maxFileSize", 128L * 1024 * 1024)

  /** OPTIMIZE's target file size when the call gives none (a size: bytes, or with a unit). */
  val OptimizeTargetFileSize = setting[Long]("optimize target file size",
    property = "delta.targetFileSize")(128L * 1024 * 1024, "a number of bytes > 0, optionally with a unit " +
    "(134217728, 128mb, 1g)")(StrataOptions.byteSize)
  val OptimizeMaxThreads = setting[Int]("optimize threads", session = "spark.strata.optimize.maxThreads",
    delta = "optimize.maxThreads")(
    8, "a whole number > 0")(v => wholeNumber(1, Int.MaxValue)(v).map(_.toInt))
  val OptimizeMaxCommits = setting[Int]("optimize commits", session = "spark.strata.optimize.maxCommits")(
    10, "a whole number > 0")(v => wholeNumber(1, Int.MaxValue)(v).map(_.toInt))

  /**
   * Input bytes per commit of an OPTIMIZE (delta-spark's `optimize.batchSize`): its groups (bins, Z-order
   * partitions, a clustered table's new cubes), in plan order, are cut into batches of at most this many bytes of
   * rewritten files (a larger group alone), each batch one commit, so a long run keeps its progress. Default: no
   * limit (a clustered table's OPTIMIZE in one commit; bin-packing and Z-order one per partition).
   */
  val OptimizeBatchSize = setting[Long]("optimize batch size", session = "spark.strata.optimize.batchSize",
    delta = "optimize.batchSize")(
    Long.MaxValue, "a number of bytes > 0, optionally with a unit (10g)")(StrataOptions.byteSize)

  /**
   * Liquid clustering's ZCubes (delta-spark's `optimize.clustering.mergeStrategy.minCubeSize.*`): a cube of at least
   * `minCubeSize` bytes is stable (OPTIMIZE leaves it); new cubes take files up to `targetCubeSize` (at least the min).
   */
  val ClusteringMinCubeSize = setting[Long]("clustering min cube size",
    session = "spark.strata.optimize.clustering.minCubeSize",
    delta = "optimize.clustering.mergeStrategy.minCubeSize.threshold")(100L << 30,
    "a number of bytes > 0, optionally with a unit (100g)")(StrataOptions.byteSize)
  val ClusteringTargetCubeSize = setting[Long]("clustering target cube size",
    session = "spark.strata.optimize.clustering.targetCubeSize",
    delta = "optimize.clustering.mergeStrategy.minCubeSize.targetCubeSize")(150L << 30,
    "a number of bytes > 0, optionally with a unit (150g)")(StrataOptions.byteSize)

  /** Every setting, write options in the order errors list them. */
  val all: Seq[WriteSetting[_]] = Seq(PartitionColumns, Compression, MaxRecordsPerFile, UserMetadata, TxnAppId,
    TxnVersion, ReplaceWhere, PartitionOverwriteMode, MergeSchema, OverwriteSchema, OptimizeWrite, Distribution,
    MaxOpenFiles, TargetFileSize, InlineVectorBytes, NumIndexedColumns, AutoCompact, AutoCompactMinNumFiles,
    AutoCompactMinFileSize, AutoCompactMaxFileSize, OptimizeTargetFileSize, OptimizeMaxThreads, OptimizeMaxCommits,
    OptimizeBatchSize, ClusteringMinCubeSize, ClusteringTargetCubeSize)

  /** The write options `entry` accepts (besides `path`). */
  def optionsOf(entry: WriteEntry): Seq[WriteSetting[_]] = all.filter(s => s.option.isDefined && s.entries(entry))

  /** delta-spark options Strata will support but does not yet: named so the error can say so. */
  val ComingSoon: Seq[String] = Seq("dataChange", "autoCompact")
}
