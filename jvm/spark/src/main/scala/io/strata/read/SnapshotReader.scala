package io.strata.read

import io.strata.config.ReadOptions
import io.strata.log.{AddFile, InvalidTableOperationException, Metadata, ProtocolSupport, Snapshot, TableLog,
  VacuumedFiles}
import io.strata.table.{CatalystValues, TableSchema}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.datasources.{FileIndex, HadoopFsRelation}
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.sources.BaseRelation
import org.apache.spark.sql.strata.SparkInternals
import org.apache.spark.sql.types.StructType

/** Reads a snapshot through Spark's Parquet reader, with the log (never a directory listing) naming the files. */
object SnapshotReader {
  /** The snapshot a read asks for: the latest, or the one named by versionAsOf / timestampAsOf. */
  def snapshotFor(spark: SparkSession, log: TableLog, options: ReadOptions): Snapshot = {
    val snapshot = (options.versionAsOf, options.timestampAsOf) match {
      case (Some(v), _) => VacuumedFiles.checked(log, log.snapshotAt(v))
      case (_, Some(ts)) => VacuumedFiles.checked(log, log.snapshotAsOf(parseTimestampMillis(spark, ts)))
      case _ => log.snapshot()
    }
    ProtocolSupport.checkReadable(snapshot.protocol, log.tablePath.toString)
    snapshot
  }

  /** A relation over the snapshot's files (or the given subset of them). */
  def relation(spark: SparkSession, snapshot: Snapshot, only: Option[Seq[AddFile]] = None,
               timeTravel: Boolean = false): BaseRelation = {
    val table = TableSchema.of(snapshot.metadata)
    parquetRelation(spark, fileIndex(spark, snapshot, only, timeTravel), table.partitionSchema, table.schema,
      Map.empty)
  }

  /**
   * The snapshot's live files as a Spark file index (typed partition values, no directory listing).
   * `withFileColumn`: each file also carries its path as the value of the metadata column [[FileColumn]], appended
   * to the partition values, so Spark's Parquet reader fills it in like a partition column.
   */
  def fileIndex(spark: SparkSession, snapshot: Snapshot, only: Option[Seq[AddFile]] = None,
                timeTravel: Boolean = false, withFileColumn: Boolean = false): LogFileIndex =
    filesIndex(spark, snapshot.tablePath, snapshot.metadata, snapshot.version, only.getOrElse(snapshot.files),
      snapshot.hasDeletionVectors, timeTravel, withFileColumn)

  /**
   * An index over `files` of the table at `tablePath` whose metadata is `metadata` (a snapshot's files, or a
   * streaming micro-batch's). `deletionVectors`: scans read row indexes and drop deleted rows.
   */
  def filesIndex(spark: SparkSession, tablePath: org.apache.hadoop.fs.Path, metadata: Metadata, version: Long,
                 files: Seq[AddFile], deletionVectors: Boolean, timeTravel: Boolean = false,
                 withFileColumn: Boolean = false): LogFileIndex = {
    val table = TableSchema.of(metadata)
    val partSchema = table.partitionSchema
    val zone = SparkInternals.sessionZone(spark)
    val indexed = files.map { f =>
      val path = Snapshot.absolutePath(tablePath, f.path)
      val values = CatalystValues.partitionRow(partSchema, f.partitionValues, zone)
      IndexedFile(path, f.size, f.modificationTime,
        if (withFileColumn) FileColumn.append(values, partSchema, path) else values, f.stats, f.deletionVector)
    }
    val indexSchema = if (withFileColumn) partSchema.add(FileColumn.field) else partSchema
    new LogFileIndex(spark, tablePath, indexed, table.schema, indexSchema, Map.empty, version, timeTravel,
      deletionVectors)
  }

  /** A relation that reads the given files with Spark's vectorized Parquet reader (partition pruning included). */
  private def parquetRelation(spark: SparkSession, index: FileIndex, partitionSchema: StructType,
                              dataSchema: StructType, options: Map[String, String]): BaseRelation =
    HadoopFsRelation(index, partitionSchema, dataSchema, None, index match {
      case l: LogFileIndex if l.hasDeletionVectors => new DeletionVectorParquetFormat(l.readTablePath.toString)
      case _ => new ParquetFileFormat
    }, options)(spark)

  private[read] def parseTimestampMillis(spark: SparkSession, ts: String, option: String = "timestampAsOf"): Long = {
    val micros = CatalystValues.tryCast(ts, org.apache.spark.sql.types.TimestampType,
      SparkInternals.sessionTimeZone(spark))
    if (micros == null) throw InvalidTableOperationException("STRATA_INVALID_OPTION_VALUE", Map("setting" ->
      s"Option $option", "value" -> ts, "allowed" -> "a timestamp such as '2026-01-31 12:00:00'"))
    Math.floorDiv(micros.asInstanceOf[Long], 1000L)
  }
}
