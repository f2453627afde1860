package io.strata

import io.strata.config.{StrataOptions, WriteConf, WriteEntry}
import io.strata.log.{InvalidTableOperationException, TableAlreadyExistsException, TableLog}
import io.strata.optimize.AutoCompaction
import io.strata.read.SnapshotReader
import io.strata.read.streaming.StrataStreamScan
import io.strata.write.{ForeignFiles, WriteBase, WriteMode}
import io.strata.write.streaming.{StrataSink, StreamingWrites}
import io.strata.write.v1.V1TableWriter
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, SQLContext, SaveMode, SparkSession}
import org.apache.spark.sql.catalyst.util.CaseInsensitiveMap
import org.apache.spark.sql.connector.catalog.{SupportsRead, Table, TableCapability, TableProvider}
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.connector.read.ScanBuilder
import org.apache.spark.sql.execution.streaming.Sink
import org.apache.spark.sql.sources.{BaseRelation, CreatableRelationProvider, DataSourceRegister, RelationProvider,
  StreamSinkProvider}
import org.apache.spark.sql.strata.SparkInternals
import org.apache.spark.sql.streaming.OutputMode
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

import scala.jdk.CollectionConverters._

/**
 * `format("strata")`: path-based reads, the DataSource V1 write path
 * (DataFrameWriter -> CreatableRelationProvider -> FileFormatWriter -> one log commit) and the streaming sink of path
 * tables (StreamSinkProvider -> [[io.strata.write.streaming.StrataSink]], one such write per micro-batch).
 */
class StrataDataSource extends DataSourceRegister with CreatableRelationProvider with RelationProvider
    with TableProvider with StreamSinkProvider {
  override def shortName(): String = "strata"

  // As a TableProvider, `USING strata` in the session catalog is planned as a DataSource V2 table (served by
  // StrataSessionCatalog). Path reads and writes keep the V1 path: the path table below declares no capability,
  // which makes DataFrameReader/DataFrameWriter fall back to the RelationProvider methods.
  override def supportsExternalMetadata(): Boolean = true

  override def inferSchema(options: CaseInsensitiveStringMap): StructType = {
    val log = tableLog(SparkSession.active.sqlContext, options.asCaseSensitiveMap().asScala.toMap)
    // As the read will take it: without the file state above the distributed-state threshold
    io.strata.table.TableSchema.of(SnapshotReader.latest(SparkSession.active, log).fold(_.metadata, _.metadata)).schema
  }

  override def getTable(schema: StructType, partitioning: Array[Transform],
                        properties: java.util.Map[String, String]): Table =
    new StrataDataSource.PathTable(schema, properties.asScala.find(_._1.equalsIgnoreCase(StrataOptions.Path)).map(_._2))

  override def createRelation(sqlContext: SQLContext, parameters: Map[String, String]): BaseRelation = {
    val spark = sqlContext.sparkSession
    val options = StrataOptions.parseRead(StrataDataSource.originalOptions(parameters))
    val log = tableLog(sqlContext, parameters)
    SnapshotReader.pathRelation(spark, log, options)
  }

  override def createRelation(sqlContext: SQLContext, mode: SaveMode, parameters: Map[String, String],
                              data: DataFrame): BaseRelation = {
    val conf = WriteConf.forWrite(StrataDataSource.originalOptions(parameters), WriteEntry.PathWrite,
      sqlContext.sparkSession.conf.getOption)
    val log = tableLog(sqlContext, parameters)
    // A blind append above the distributed-state threshold reads only the latest version's head (WriteBase).
    val existing = WriteBase.latest(sqlContext.sparkSession, log, append = mode != SaveMode.Overwrite, conf)
    val exists = existing.isDefined
    val result = mode match {
      case SaveMode.ErrorIfExists if exists =>
        throw TableAlreadyExistsException(log.tablePath.toString, existing.get.fold(_.version, _.version))
      case SaveMode.Ignore if exists => None // nothing to do
      case _ =>
        if (!exists) ForeignFiles.refuse(log)
        V1TableWriter.write(log, data, writeMode(mode, conf), conf, existing, AutoCompaction.Hook)
    }
    existing match {
      // Without the file state: a relation whose files come from a distributed job, if Spark ever asks.
      case Some(Left(head)) => SnapshotReader.writtenRelation(sqlContext.sparkSession, log, head, result.map(_.version))
      // The version this write committed is held (no listing, no replay); Spark does not scan what a save returns
      // (nothing is built for it).
      case _ => SnapshotReader.writtenRelation(sqlContext.sparkSession,
        result.flatMap(r => log.heldSnapshot(r.version)).getOrElse(log.snapshot()))
    }
  }

  /** The table-level meaning of a save mode plus replaceWhere / partitionOverwriteMode (option > session conf). */
  private def writeMode(mode: SaveMode, conf: WriteConf): WriteMode = {
    val dynamic = conf.dynamicPartitionOverwrite
    val dynamicByOption = dynamic && conf.givenAsOption(io.strata.config.WriteSettings.PartitionOverwriteMode)
    (mode, conf.replaceWhere) match {
      case (SaveMode.Overwrite, Some(_)) if dynamicByOption =>
        throw InvalidTableOperationException("STRATA_CONFLICTING_OPTIONS",
          "Options replaceWhere and partitionOverwriteMode=dynamic cannot be combined: pick one.")
      case (SaveMode.Overwrite, Some(p)) => WriteMode.ReplaceWhere(p)
      case (SaveMode.Overwrite, None) if dynamic && !conf.overwriteSchema => WriteMode.DynamicOverwrite
      case (SaveMode.Overwrite, None) => WriteMode.Overwrite
      case (_, Some(_)) => throw InvalidTableOperationException("STRATA_CONFLICTING_OPTIONS",
        "Option replaceWhere only applies to mode 'overwrite'.")
      case _ if dynamicByOption => throw InvalidTableOperationException("STRATA_CONFLICTING_OPTIONS",
        "Option partitionOverwriteMode=dynamic only applies to mode 'overwrite'.")
      case _ => WriteMode.Append
    }
  }

  private def tableLog(sqlContext: SQLContext, parameters: Map[String, String]): TableLog = {
    val path = parameters.find(_._1.equalsIgnoreCase(StrataOptions.Path)).map(_._2).getOrElse(
      throw InvalidTableOperationException("STRATA_PATH_REQUIRED", Map("how" -> ".save(path) / .load(path)")))
    TableLog.forPath(new Path(path), SparkInternals.hadoopConf(sqlContext.sparkSession, Map.empty))
  }

  /**
   * `writeStream.format("strata").start(path)`: the V1 sink, whose micro-batches go through the V1 write path like a
   * DataFrameWriter append (partitionBy reaches only this interface: Spark passes no partitioning to a TableProvider's
   * streaming table). Output mode and options are checked here, when the query starts.
   */
  override def createSink(sqlContext: SQLContext, parameters: Map[String, String], partitionColumns: Seq[String],
                          outputMode: OutputMode): Sink = {
    val original = StrataDataSource.originalOptions(parameters)
    val path = original.find(_._1.equalsIgnoreCase(StrataOptions.Path)).map(_._2).getOrElse(
      throw InvalidTableOperationException("STRATA_PATH_REQUIRED", Map("how" -> ".start(path), or .toTable(name)")))
    val mode = StreamingWrites.writeMode(outputMode, path)
    val conf = WriteConf.forWrite(original, WriteEntry.PathStream, sqlContext.sparkSession.conf.getOption)
    new StrataSink(path, conf.withPartitionColumns(partitionColumns), mode, AutoCompaction.Hook)
  }
}

object StrataDataSource {
  /** Data source options with the keys as the user spelled them (Spark hands them over lower-cased). */
  private def originalOptions(options: Map[String, String]): Map[String, String] = options match {
    case m: CaseInsensitiveMap[String @unchecked] => m.originalMap
    case other => other
  }

  /**
   * The V2 face of a path table. Batch reads and writes and the streaming sink find no capability for them here,
   * so Spark uses the V1 relation and sink providers above; streaming reads are V2 ([[StrataStreamScan]]).
   */
  final class PathTable(tableSchema: StructType, path: Option[String]) extends Table with SupportsRead {
    override def name(): String = path.fold("strata path table")(p => s"strata.`$p`")
    override def schema(): StructType = tableSchema
    override def capabilities(): java.util.Set[TableCapability] = java.util.EnumSet.of(TableCapability.MICRO_BATCH_READ)
    override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder = () => new StrataStreamScan(
      new Path(path.getOrElse(throw InvalidTableOperationException("STRATA_PATH_REQUIRED",
        Map("how" -> ".load(path)")))),
      name(), tableSchema, options)
  }
}
