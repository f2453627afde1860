package io.strata.read

import io.strata.config.{ReadConf, ReadOptions}
import io.strata.log.{AddFile, InvalidTableOperationException, Metadata, ProtocolSupport, Snapshot, SnapshotHead,
  TableFeatures, TableLog, TableNotFoundException, VacuumedFiles}
import io.strata.state.{DistributedFileState, DistributedVacuumCheck}
import io.strata.table.{CatalystValues, PhysicalSchema, TableSchema}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.datasources.{FileFormat, FileIndex, HadoopFsRelation}
import org.apache.spark.sql.sources.BaseRelation
import org.apache.spark.sql.strata.SparkInternals
import org.apache.spark.sql.types.StructType

/** Reads a snapshot through Spark's Parquet reader, with the log (never a directory listing) naming the files. */
object SnapshotReader {
  /**
   * The relation of a path read (`format("strata").load(path)`): over the snapshot the options ask for, built on the
   * driver; or, for the latest version of a table whose state reaches the distributed-state threshold
   * ([[ReadConf.distributedState]], decided from the log's listing and `_last_checkpoint` before anything is
   * replayed), over a [[DistributedFileIndex]] (no file state on the driver).
   */
  def pathRelation(spark: SparkSession, log: TableLog, options: ReadOptions): BaseRelation = {
    val timeTravel = options.versionAsOf.isDefined || options.timestampAsOf.isDefined
    (if (timeTravel) travel(spark, log, options) else latest(spark, log)) match {
      case Right(snapshot) => relation(spark, snapshot, timeTravel = timeTravel)
      case Left(head) =>
        val table = TableSchema.of(head.metadata)
        val state = new DistributedFileState(spark, head, log.conf, SparkInternals.sessionZone(spark))
        parquetRelation(spark, new DistributedFileIndex(spark, state, table.schema, table.partitionSchema, timeTravel),
          table.partitionSchema, table.schema, Map.empty)
    }
  }

  /** The version versionAsOf / timestampAsOf name ([[versionAt]]). */
  private def travel(spark: SparkSession, log: TableLog, options: ReadOptions): Either[SnapshotHead, Snapshot] =
    versionAt(spark, log,
      options.versionAsOf.getOrElse(log.versionAsOf(parseTimestampMillis(spark, options.timestampAsOf.get))))

  /**
   * Version `version` (time travel, path and catalog reads), as [[latest]] takes the latest: its head when its state
   * reaches the distributed-state threshold (its [[StateSize]]: the checkpoint's count plus the commits' adds), else
   * its snapshot. Either way its protocol is checked readable and files a VACUUM deleted are named before the read,
   * with the same typed error (the snapshot's by [[VacuumedFiles]], the head's by [[DistributedVacuumCheck]]).
   */
  def versionAt(spark: SparkSession, log: TableLog, version: Long): Either[SnapshotHead, Snapshot] = {
    val head = log.headAt(version)
    ProtocolSupport.checkReadable(head.protocol, log.tablePath.toString)
    if (ReadConf.distributedState(spark, head.size) && head.classicCheckpoint) {
      val latest = log.headOption().getOrElse(throw TableNotFoundException(log.tablePath.toString))
      DistributedVacuumCheck.check(spark, log, head, latest, log.conf, SparkInternals.sessionZone(spark))
      Left(head)
    } else Right(VacuumedFiles.checked(log, log.snapshotAt(version)))
  }

  /**
   * The latest version as a path read takes it, after one listing: its snapshot, or its head when its state reaches
   * the distributed-state threshold ([[ReadConf.distributedState]]). Its protocol is checked readable.
   */
  def latest(spark: SparkSession, log: TableLog): Either[SnapshotHead, Snapshot] = {
    val found = log.latest(ReadConf.distributedState(spark, _))
      .getOrElse(throw TableNotFoundException(log.tablePath.toString))
    ProtocolSupport.checkReadable(found.fold(_.protocol, _.protocol), log.tablePath.toString)
    found
  }

  /** A relation over the snapshot's files (or the given subset of them). */
  def relation(spark: SparkSession, snapshot: Snapshot, only: Option[Seq[AddFile]] = None,
               timeTravel: Boolean = false): BaseRelation = {
    val table = TableSchema.of(snapshot.metadata)
    parquetRelation(spark, fileIndex(spark, snapshot, only, timeTravel), table.partitionSchema, table.schema,
      Map.empty)
  }

  /**
   * The relation a V1 save returns to Spark: the table as [[relation]] reads it, its file index built only when asked
   * for files ([[DeferredFileIndex]]). Spark 4.1's SaveIntoDataSourceCommand drops it unread; a V1 CTAS
   * (DataSource.writeAndRead) reads its schema.
   */
  def writtenRelation(spark: SparkSession, snapshot: Snapshot): BaseRelation = {
    val table = TableSchema.of(snapshot.metadata)
    val index = new DeferredFileIndex(snapshot.tablePath, snapshot.version, table.partitionSchema,
      () => fileIndex(spark, snapshot))
    HadoopFsRelation(index, PhysicalSchema.strip(table.partitionSchema), PhysicalSchema.strip(table.schema), None,
      format(snapshot.tablePath, snapshot.hasDeletionVectors, table.schema), Map.empty)(spark)
  }

  /**
   * The relation a V1 save returns after a blind append without the file state (from `head`): the version it
   * committed (`committed`; None: nothing was written), whose metadata is in its own commit file when it changed it,
   * else the head's (a winner changing it would have failed the commit). Its files, only if Spark asks, come as a
   * read of that version takes them: from a distributed job above the threshold, else from its snapshot.
   */
  def writtenRelation(spark: SparkSession, log: TableLog, head: SnapshotHead, committed: Option[Long]): BaseRelation = {
    val version = committed.getOrElse(head.version)
    // The head after the commit is held when the commit directly followed `head`; else its commit file says.
    val metadata = committed.flatMap(v => log.heldHead(v).map(h => Some(h.metadata))
      .getOrElse(log.readCommit(v).collectFirst { case m: Metadata => m })).getOrElse(head.metadata)
    val table = TableSchema.of(metadata)
    val deletionVectors = TableFeatures.DeletionVectors.readBy(head.protocol)
    val index = new DeferredFileIndex(head.tablePath, version, table.partitionSchema, () => {
      val at = log.headAt(version)
      if (ReadConf.distributedState(spark, at.size) && at.classicCheckpoint) new DistributedFileIndex(spark,
        new DistributedFileState(spark, at, log.conf, SparkInternals.sessionZone(spark)),
        TableSchema.of(at.metadata).schema, TableSchema.of(at.metadata).partitionSchema)
      else fileIndex(spark, log.snapshotOption().filter(_.version == version).getOrElse(log.snapshotAt(version)))
    })
    HadoopFsRelation(index, PhysicalSchema.strip(table.partitionSchema), PhysicalSchema.strip(table.schema), None,
      format(head.tablePath, deletionVectors, table.schema), Map.empty)(spark)
  }

  /**
   * The snapshot's live files as a Spark file index (typed partition values, no directory listing).
   * `withFileColumn`: each file also carries its path as the value of the metadata column [[FileColumn]], appended
   * to the partition values, so Spark's Parquet reader fills it in like a partition column.
   */
  def fileIndex(spark: SparkSession, snapshot: Snapshot, only: Option[Seq[AddFile]] = None,
                timeTravel: Boolean = false, withFileColumn: Boolean = false): LogFileIndex =
    if (only.isEmpty && !withFileColumn) {
      // Every live file, grouped by partition by the log core: a partition's files are built when a scan keeps it.
      val table = TableSchema.of(snapshot.metadata)
      val zone = SparkInternals.sessionZone(spark)
      // The same groups, in the same order: the statistics ride along for aggregates answered from the log.
      val stats = snapshot.statsByPartition
      val partitions = snapshot.filesByPartition.zip(stats).map { case ((values, files), group) =>
        val row = CatalystValues.partitionRow(table.partitionSchema, values, zone)
        new IndexedPartition(row, files.map((f: AddFile) => indexed(snapshot.tablePath, f, row)), group._2)
      }
      index(spark, snapshot.tablePath, table, snapshot.version, partitions, snapshot.hasDeletionVectors,
        timeTravel, withFileColumn = false, snapshot.sizeInBytes)
    } else filesIndex(spark, snapshot.tablePath, snapshot.metadata, snapshot.version, only.getOrElse(snapshot.files),
      snapshot.hasDeletionVectors, timeTravel, withFileColumn)

  /**
   * An index over `files` of the table at `tablePath` whose metadata is `metadata` (a snapshot's files, or a
   * streaming micro-batch's). `deletionVectors`: scans read row indexes and drop deleted rows.
   */
  def filesIndex(spark: SparkSession, tablePath: org.apache.hadoop.fs.Path, metadata: Metadata, version: Long,
                 files: Seq[AddFile], deletionVectors: Boolean, timeTravel: Boolean = false,
                 withFileColumn: Boolean = false, pruning: Option[IndexPruning] = None): LogFileIndex = {
    val table = TableSchema.of(metadata)
    val partSchema = table.partitionSchema
    val zone = SparkInternals.sessionZone(spark)
    val all = files.map { f =>
      val values = CatalystValues.partitionRow(partSchema, f.partitionValues, zone)
      val file = indexed(tablePath, f, values)
      if (withFileColumn) file.copy(partitionValues = FileColumn.append(values, partSchema, file.path)) else file
    }
    // One partition per distinct row of values (with the file column: one per file).
    val partitions = all.groupBy(_.partitionValues).toSeq.map { case (values, fs) => new IndexedPartition(values, fs) }
    index(spark, tablePath, table, version, partitions, deletionVectors, timeTravel, withFileColumn,
      files.iterator.map(_.size).sum, pruning)
  }

  private def indexed(tablePath: org.apache.hadoop.fs.Path, f: AddFile, values: InternalRow): IndexedFile =
    IndexedFile(Snapshot.absolutePath(tablePath, f.path), f.size, f.modificationTime, values, f.stats,
      f.deletionVector)

  private def index(spark: SparkSession, tablePath: org.apache.hadoop.fs.Path, table: TableSchema, version: Long,
                    partitions: Seq[IndexedPartition], deletionVectors: Boolean, timeTravel: Boolean,
                    withFileColumn: Boolean, totalBytes: Long,
                    pruning: Option[IndexPruning] = None): LogFileIndex = {
    val indexSchema = if (withFileColumn) table.partitionSchema.add(FileColumn.field) else table.partitionSchema
    new LogFileIndex(spark, tablePath, partitions, table.schema, indexSchema, Map.empty, version, timeTravel,
      deletionVectors, totalBytes, pruning)
  }

  /**
   * A relation that reads the given files with Spark's vectorized Parquet reader (partition pruning included). Its
   * schema is the user's: without column mapping metadata (the format keeps the mapping).
   */
  private def parquetRelation(spark: SparkSession, index: FileIndex, partitionSchema: StructType,
                              dataSchema: StructType, options: Map[String, String]): BaseRelation =
    HadoopFsRelation(index, PhysicalSchema.strip(partitionSchema), PhysicalSchema.strip(dataSchema), None,
      index match {
        case l: LogFileIndex => format(l.readTablePath, l.hasDeletionVectors, l.tableSchema)
        case d: DistributedFileIndex => format(d.readTablePath, d.hasDeletionVectors, d.tableSchema)
      }, options)(spark)

  /** The Parquet format reading a table's files: deletion vectors dropped, mapped columns read physically. */
  private def format(tablePath: org.apache.hadoop.fs.Path, deletionVectors: Boolean, tableSchema: StructType)
      : FileFormat =
    if (deletionVectors) new DeletionVectorParquetFormat(tablePath.toString, PhysicalSchema.of(tableSchema))
    else new ColumnMappedParquetFormat(PhysicalSchema.of(tableSchema))

  private[read] def parseTimestampMillis(spark: SparkSession, ts: String, option: String = "timestampAsOf"): Long = {
    val micros = CatalystValues.tryCast(ts, org.apache.spark.sql.types.TimestampType,
      SparkInternals.sessionTimeZone(spark))
    if (micros == null) throw InvalidTableOperationException("STRATA_INVALID_OPTION_VALUE", Map("setting" ->
      s"Option $option", "value" -> ts, "allowed" -> "a timestamp such as '2026-01-31 12:00:00'"))
    Math.floorDiv(micros.asInstanceOf[Long], 1000L)
  }
}
