package io.strata.catalog

import java.util

import io.strata.config.{ReadConf, StrataOptions, WriteConf, WriteEntry}
import io.strata.dml.{CopyOnWriteOperationBuilder, MergeOnReadOperationBuilder, MetadataDelete, RowLevelTarget}
import io.strata.log.{InvalidTableOperationException, ProtocolSupport, Snapshot, SnapshotHead, TableLog}
import io.strata.optimize.AutoCompaction
import io.strata.read.{DistributedFileIndex, DistributedScanIndex, FileColumn, RowIndexColumn, SnapshotRead,
  SnapshotReader, StrataScanBuilder}
import io.strata.state.DistributedFileState
import io.strata.read.streaming.StrataStreamScan
import io.strata.table.{ColumnNames, TableSchema, V2PredicateSql}
import io.strata.write.StreamingBatch
import io.strata.write.streaming.SinkProgress
import io.strata.write.v2.{StrataStreamingWriteBuilder, StrataWriteBuilder}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.catalog.{MetadataColumn, SupportsDeleteV2, SupportsMetadataColumns, SupportsRead,
  SupportsRowLevelOperations, SupportsWrite, Table, TableCapability, TableCatalog}
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.connector.expressions.filter.Predicate
import org.apache.spark.sql.connector.read.streaming.ReportsSinkMetrics
import org.apache.spark.sql.connector.write.{LogicalWriteInfo, RowLevelOperationBuilder, RowLevelOperationInfo,
  WriteBuilder}
import org.apache.spark.sql.strata.SparkInternals
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

import scala.jdk.CollectionConverters._

/**
 * A Strata table as DataSource V2 sees it, pinned to one version. Reads go through Spark's Parquet scan. `base`: the
 * version's snapshot, or only its head ([[StrataV2Table.latest]]: as a blind append takes the latest version, since
 * Spark loads the table before it knows the statement is an INSERT): its definition and blind appends need no file
 * state; reads of a table above the distributed-state threshold select files by Spark jobs, as path reads do; other
 * reads, DML and overwrites build the snapshot of that version on the driver when they first ask for it.
 */
final class StrataV2Table(val tableName: String, base: Either[SnapshotHead, Snapshot], val timeTravel: Boolean)
    extends Table with SupportsRead with SupportsWrite with SnapshotRead with SupportsRowLevelOperations
    with SupportsDeleteV2 with SupportsMetadataColumns with ReportsSinkMetrics {
  def this(tableName: String, snapshot: Snapshot, timeTravel: Boolean = false) =
    this(tableName, Right(snapshot), timeTravel)

  private val head: SnapshotHead = base.fold(identity, SnapshotHead.of)
  /** The pinned version with its files (built on first use for a table loaded by its head). */
  lazy val snapshot: Snapshot =
    base.fold(h => log.snapshotOption().filter(_.version == h.version).getOrElse(log.snapshotAt(h.version)), identity)
  override def readTablePath: org.apache.hadoop.fs.Path = head.tablePath
  override def readVersion: Long = head.version
  private val table = TableSchema.of(head.metadata)
  ProtocolSupport.checkReadable(head.protocol, head.tablePath.toString)

  override def name(): String = tableName
  override def schema(): StructType = io.strata.table.PhysicalSchema.strip(table.schema) // users see no mapping keys
  override def partitioning(): Array[Transform] =
    (table.partitionColumns.map(ColumnNames.identity) ++ clustering).toArray
  /**
   * A clustered table shows its columns as delta-spark's does (DESCRIBE's "# Clustering Information"). From the head:
   * Spark asks for the partitioning while it analyzes an INSERT, which must not build the file state.
   */
  private def clustering: Option[Transform] = io.strata.log.Clustering.columns(head.domains).flatMap(cols =>
    scala.util.Try(io.strata.table.ClusteringColumns.logical(table.schema, cols, tableName)).toOption
      .flatMap(ClusteringChanges.transform))
  override def properties(): util.Map[String, String] =
    (head.metadata.configuration ++ Map(
      TableCatalog.PROP_PROVIDER -> "strata",
      TableCatalog.PROP_LOCATION -> head.tablePath.toString) ++
      head.metadata.description.map(TableCatalog.PROP_COMMENT -> _)).asJava
  override def capabilities(): util.Set[TableCapability] = util.EnumSet.of(TableCapability.BATCH_READ,
    TableCapability.BATCH_WRITE, TableCapability.TRUNCATE, TableCapability.OVERWRITE_BY_FILTER,
    TableCapability.OVERWRITE_DYNAMIC, TableCapability.AUTOMATIC_SCHEMA_EVOLUTION, TableCapability.STREAMING_WRITE,
    TableCapability.MICRO_BATCH_READ)

  /**
   * Writes start their transaction from the snapshot the statement was analyzed against (no second load); the
   * commits that land after it are checked as concurrent winners. A streaming query's micro-batch (the write carries
   * the id of the query running on this thread; a batch write inside foreachBatch has an id of its own) starts from
   * the latest snapshot instead: this table object serves the whole query.
   */
  override def newWriteBuilder(info: LogicalWriteInfo): WriteBuilder =
    if (StreamingBatch.runningQueryId(SparkSession.active).contains(info.queryId())) {
      new StrataStreamingWriteBuilder(log, info, sinkProgress, AutoCompaction.Hook)
    } else new StrataWriteBuilder(log, info, base, () => snapshot, AutoCompaction.Hook)

  /** As a streaming sink: the last micro-batch's numbers, for StreamingQueryProgress. */
  private val sinkProgress = new SinkProgress
  override def metrics(): util.Map[String, String] = sinkProgress.metrics

  private def log: TableLog =
    TableLog.forPath(head.tablePath, SparkInternals.hadoopConf(SparkSession.active, Map.empty))

  /** New row-level changes go into deletion vectors where the table enables them and its protocol allows them. */
  private val mergeOnRead = ProtocolSupport.deletionVectorsWritable(head.protocol, head.metadata)

  override def metadataColumns(): Array[MetadataColumn] =
    if (mergeOnRead) Array(FileColumn.rowIdColumn, RowIndexColumn.metadataColumn)
    else Array(FileColumn.metadataColumn, RowIndexColumn.metadataColumn)

  /**
   * DELETE / UPDATE / MERGE: merge-on-read with deletion vectors ([[MergeOnReadOperation]]) when the table enables
   * them, else copy-on-write ([[CopyOnWriteOperation]]).
   */
  override def newRowLevelOperationBuilder(info: RowLevelOperationInfo): RowLevelOperationBuilder = {
    requireCurrent(info.command().name())
    val target = RowLevelTarget(tableName, snapshot, log, scanBuilder(_, fromJobs = false), AutoCompaction.Hook)
    if (mergeOnRead) new MergeOnReadOperationBuilder(target, info.command())
    else new CopyOnWriteOperationBuilder(target, info.command())
  }

  /** A DELETE that covers whole files (by partition values or statistics) removes them without a job. */
  override def canDeleteWhere(predicates: Array[Predicate]): Boolean = {
    val sql = predicates.filterNot(_.name() == "ALWAYS_TRUE").map(V2PredicateSql(_))
    sql.forall(_.isDefined) && MetadataDelete.canDelete(snapshot, sql.flatten.toSeq)
  }

  override def deleteWhere(predicates: Array[Predicate]): Unit = {
    requireCurrent("DELETE")
    val sql = predicates.filterNot(_.name() == "ALWAYS_TRUE").map(p => V2PredicateSql(p).getOrElse(
      throw new IllegalStateException(s"DELETE condition $p cannot be rendered as SQL"))).toSeq
    val conf = WriteConf.forWrite(Map.empty, WriteEntry.CatalogWrite, SparkSession.active.conf.getOption)
    MetadataDelete.delete(log, snapshot, sql, conf, AutoCompaction.Hook)
  }

  override def truncateTable(): Boolean = { deleteWhere(Array.empty); true }

  /** Changing rows of a version read by time travel would silently drop every later commit. */
  private def requireCurrent(command: String): Unit = if (timeTravel) throw InvalidTableOperationException(
    "STRATA_TIME_TRAVEL_CHANGE", Map("command" -> command, "table" -> tableName, "version" -> head.version))
  override def version(): String = head.version.toString

  /**
   * Reads of a table loaded by its head above the distributed-state threshold select their files by Spark jobs, as
   * path reads do ([[DistributedScanIndex]]): no file state on the driver (below it, the head is read through the
   * snapshot, built on first use). Reads that need the file column (DML's scans) build the snapshot, and so do
   * row-level operations (`fromJobs` false: their scans and commit share it).
   */
  override def newScanBuilder(options: CaseInsensitiveStringMap): StrataScanBuilder = scanBuilder(options, fromJobs = true)

  private def scanBuilder(options: CaseInsensitiveStringMap, fromJobs: Boolean): StrataScanBuilder = {
    val spark = SparkSession.active
    val dataSchema = StructType(table.schema.fields.filterNot(f => table.partitionColumns.contains(f.name)))
    def index(withFile: Boolean) = base match {
      case Left(h) if fromJobs && !withFile && h.classicCheckpoint && ReadConf.distributedState(spark, h.size) =>
        val state = new DistributedFileState(spark, h, log.conf, SparkInternals.sessionZone(spark))
        new DistributedScanIndex(spark, new DistributedFileIndex(spark, state, table.schema, table.partitionSchema,
          timeTravel))
      case _ => SnapshotReader.fileIndex(spark, snapshot, timeTravel = timeTravel, withFileColumn = withFile)
    }
    new StrataScanBuilder(spark, index, table.schema, dataSchema, options,
      streamScan = Some(batch => new StrataStreamScan(head.tablePath, tableName, table.schema, options, Some(batch))),
      checkBatchOptions = () => checkBatchReadOptions(options))
  }

  /**
   * `.table(name)`'s options (or SQL's `WITH (...)`) reach a catalog table only here: they are checked as a path
   * read's are ([[StrataOptions.parseRead]]: same accepted set, same messages), so a misspelt option or a change
   * feed request is refused instead of silently returning the table's rows. Spark itself applies the time travel
   * options (it loads the table at that version), under the names spark.sql.timeTravelVersionKey /
   * timeTravelTimestampKey give (versionAsOf / timestampAsOf by default); one it did not apply is refused.
   */
  private def checkBatchReadOptions(options: CaseInsensitiveStringMap): Unit = {
    val conf = SparkSession.active.conf
    val sparkNames = Seq(
      conf.get("spark.sql.timeTravelVersionKey", StrataOptions.VersionAsOf) -> StrataOptions.VersionAsOf,
      conf.get("spark.sql.timeTravelTimestampKey", StrataOptions.TimestampAsOf) -> StrataOptions.TimestampAsOf)
    def sparkName(ours: String): String = sparkNames.find(_._2 == ours).get._1
    val given = options.asCaseSensitiveMap().asScala.toMap
    val asStrataNames = given.map { case (k, v) => sparkNames.find(_._1.equalsIgnoreCase(k)).fold(k)(_._2) -> v }
    val read = StrataOptions.parseRead(asStrataNames)
    val asked = read.versionAsOf.map(v => StrataOptions.VersionAsOf -> v.toString)
      .orElse(read.timestampAsOf.map(ts => StrataOptions.TimestampAsOf -> s"'$ts'"))
    asked.filter(_ => !timeTravel || read.versionAsOf.exists(_ != head.version)).foreach {
      case (name, value) => throw InvalidTableOperationException("STRATA_OPTION_NOT_APPLIED", Map("option" -> name,
        "value" -> value, "table" -> tableName, "version" -> head.version, "sparkName" -> sparkName(name)))
    }
  }
}

object StrataV2Table {
  /**
   * The table at its latest version (None: no table), loaded as a blind append takes it ([[TableLog.appendBase]]):
   * the snapshot this JVM holds, else only the head (always the head when its state reaches the distributed-state
   * threshold, [[ReadConf.distributedState]]). An INSERT then builds no file state; a read of a table below the
   * threshold builds the snapshot on first use.
   */
  def latest(name: String, log: TableLog): Option[StrataV2Table] =
    log.appendBase(ReadConf.distributedState(SparkSession.active, _))
      .map(base => new StrataV2Table(name, base, timeTravel = false))

  /**
   * The table at `version` (VERSION / TIMESTAMP AS OF), loaded as a path read's time travel loads it
   * ([[SnapshotReader.versionAt]]: by its head above the distributed-state threshold, the VACUUM check made).
   */
  def at(name: String, log: TableLog, version: Long): StrataV2Table =
    new StrataV2Table(name, SnapshotReader.versionAt(SparkSession.active, log, version), timeTravel = true)
}
