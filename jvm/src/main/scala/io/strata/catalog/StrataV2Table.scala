package io.strata.catalog

import java.util

import io.strata.log.{ProtocolSupport, Snapshot, TableLog}
import io.strata.shim.SparkInternals
import io.strata.write.v2.StrataWriteBuilder
import org.apache.spark.sql.connector.write.{LogicalWriteInfo, WriteBuilder}
import io.strata.read.{SnapshotRead, SnapshotReader}
import io.strata.shim.ParquetScans
import io.strata.table.TableSchema
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.catalog.{SupportsRead, SupportsWrite, Table, TableCapability, TableCatalog}
import org.apache.spark.sql.connector.expressions.{Expressions, Transform}
import org.apache.spark.sql.connector.read.ScanBuilder
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

import scala.jdk.CollectionConverters._

/** A Strata table as DataSource V2 sees it, pinned to one snapshot. Reads go through Spark's Parquet scan. */
final class StrataV2Table(val tableName: String, val snapshot: Snapshot, val timeTravel: Boolean = false)
    extends Table with SupportsRead with SupportsWrite with SnapshotRead {
  override def readTablePath: org.apache.hadoop.fs.Path = snapshot.tablePath
  override def readVersion: Long = snapshot.version
  private val table = TableSchema.of(snapshot.metadata)
  ProtocolSupport.checkReadable(snapshot.protocol, snapshot.tablePath.toString)

  override def name(): String = tableName
  override def schema(): StructType = table.schema
  override def partitioning(): Array[Transform] =
    table.partitionColumns.map(c => Expressions.identity(c): Transform).toArray
  override def properties(): util.Map[String, String] =
    (snapshot.metadata.configuration ++ Map(
      TableCatalog.PROP_PROVIDER -> "strata",
      TableCatalog.PROP_LOCATION -> snapshot.tablePath.toString) ++
      snapshot.metadata.description.map(TableCatalog.PROP_COMMENT -> _)).asJava
  override def capabilities(): util.Set[TableCapability] = util.EnumSet.of(TableCapability.BATCH_READ,
    TableCapability.BATCH_WRITE, TableCapability.TRUNCATE, TableCapability.OVERWRITE_BY_FILTER,
    TableCapability.OVERWRITE_DYNAMIC)

  /**
   * Writes start their transaction from the snapshot the statement was analyzed against (no second load); the
   * commits that land after it are checked as concurrent winners.
   */
  override def newWriteBuilder(info: LogicalWriteInfo): WriteBuilder = {
    val log = TableLog.forPath(snapshot.tablePath, SparkInternals.hadoopConf(SparkSession.active, Map.empty))
    new StrataWriteBuilder(log, info, snapshot)
  }
  override def version(): String = snapshot.version.toString

  override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder = {
    val spark = SparkSession.active
    val dataSchema = StructType(table.schema.fields.filterNot(f => table.partitionColumns.contains(f.name)))
    ParquetScans.scanBuilder(spark, SnapshotReader.fileIndex(spark, snapshot, timeTravel = timeTravel), table.schema, dataSchema, options)
  }
}
