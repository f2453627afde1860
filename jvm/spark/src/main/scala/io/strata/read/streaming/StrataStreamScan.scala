package io.strata.read.streaming

import io.strata.config.{StartingVersion, StreamReadOptions}
import io.strata.log.{InvalidTableOperationException, ProtocolSupport, TableLog}
import io.strata.read.SnapshotReader
import io.strata.table.TableSchema
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.read.{Batch, Scan}
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream
import org.apache.spark.sql.strata.SparkInternals
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

import scala.jdk.CollectionConverters._

/**
 * The scan Spark asks a streaming read for (`readStream...load(path)` or `.table(name)`): its only job is
 * [[toMicroBatchStream]]. `schema`: the columns the query was analyzed with (the table's when it started).
 * `batch`: for a catalog table, its batch scan, should a batch plan ever reach this scan.
 */
final class StrataStreamScan(tablePath: Path, tableName: String, schema: StructType, options: CaseInsensitiveStringMap,
                             batch: Option[() => Scan] = None) extends Scan {
  override def readSchema(): StructType = schema
  override def description(): String = s"Strata stream of $tableName"
  override def toBatch: Batch = batch.map(_().toBatch).getOrElse(super.toBatch)

  override def toMicroBatchStream(checkpointLocation: String): MicroBatchStream = {
    val spark = SparkSession.active
    val parsed = StreamReadOptions.parse(options.asCaseSensitiveMap().asScala.toMap)
      .withSessionConfs(spark.conf.getOption, checkpointLocation)
    val log = TableLog.forPath(tablePath, SparkInternals.hadoopConf(spark, Map.empty))
    val snapshot = log.snapshot()
    ProtocolSupport.checkReadable(snapshot.protocol, tableName) // later protocol changes are checked per commit
    val metadata = snapshot.metadata
    val tableSchema = TableSchema.of(metadata).schema
    if (tableSchema.fields.map(f => f.name -> f.dataType.catalogString).toSeq !=
        schema.fields.map(f => f.name -> f.dataType.catalogString).toSeq) throw InvalidTableOperationException(
      "STRATA_STREAM_SCHEMA_GIVEN",
      Map("table" -> tableName, "givenSchema" -> schema.simpleString, "tableSchema" -> tableSchema.simpleString))
    val start = (parsed.startingVersion, parsed.startingTimestamp) match {
      case (Some(StartingVersion.At(v)), _) => StreamStart.AtVersion(v)
      case (Some(StartingVersion.Latest), _) => StreamStart.AfterLatest
      case (_, Some(ts)) => StreamStart.AtTimestamp(
        SnapshotReader.parseTimestampMillis(spark, ts, StreamReadOptions.StartingTimestampKey),
        java.time.ZoneId.of(SparkInternals.sessionTimeZone(spark), java.time.ZoneId.SHORT_IDS))
      case _ => StreamStart.CurrentRows
    }
    val startRecord = new StreamStartRecord(new Path(checkpointLocation), SparkInternals.hadoopConf(spark, Map.empty))
    new StrataMicroBatchStream(log, tableName, metadata, snapshot.version, parsed, start, startRecord)
  }
}
