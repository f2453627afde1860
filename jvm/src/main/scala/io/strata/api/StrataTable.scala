package io.strata.api

import io.strata.log.{ActionCodec, TableLog}
import io.strata.shim.SparkInternals
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.types._

import scala.jdk.CollectionConverters._

/** JVM entry points for the Python package (py4j) and Scala users: table version and history by path. */
object StrataTable {
  private def log(spark: SparkSession, path: String): TableLog =
    TableLog.forPath(new Path(path), SparkInternals.hadoopConf(spark, Map.empty))

  /** The latest committed version of the table at `path`. */
  def version(spark: SparkSession, path: String): Long = log(spark, path).snapshot().version

  val HistorySchema: StructType = StructType(Seq(
    StructField("version", LongType, nullable = false),
    StructField("timestamp", TimestampType),
    StructField("operation", StringType),
    StructField("operationParameters", MapType(StringType, StringType)),
    StructField("numFiles", LongType),
    StructField("numOutputRows", LongType),
    StructField("numOutputBytes", LongType),
    StructField("userMetadata", StringType),
    StructField("engineInfo", StringType)))

  /** The table's commits, newest first (at most `limit`). */
  def history(spark: SparkSession, path: String, limit: Int): DataFrame = {
    val rows = log(spark, path).history(limit).map { c =>
      val info = c.commitInfo.map(_.json)
      def text(f: String) = info.flatMap(i => Option(i.get(f))).filterNot(_.isNull).map(_.asText).orNull
      def metric(m: String): java.lang.Long = info.flatMap(i => Option(i.get("operationMetrics")))
        .flatMap(ms => Option(ms.get(m))).map(n => java.lang.Long.valueOf(n.asText.toLong)).orNull
      val params = info.flatMap(i => Option(i.get("operationParameters"))).map { p =>
        p.properties.asScala.map(e => e.getKey -> (if (e.getValue.isTextual) e.getValue.asText
          else ActionCodec.mapper.writeValueAsString(e.getValue))).toMap
      }.orNull
      Row(c.version, new java.sql.Timestamp(c.timestamp), text("operation"), params, metric("numFiles"),
        metric("numOutputRows"), metric("numOutputBytes"), text("userMetadata"), text("engineInfo"))
    }
    spark.createDataFrame(rows.asJava, HistorySchema)
  }

  def history(spark: SparkSession, path: String): DataFrame = history(spark, path, Int.MaxValue)

  val DetailSchema: StructType = StructType(Seq(
    StructField("format", StringType), StructField("id", StringType), StructField("name", StringType),
    StructField("description", StringType), StructField("location", StringType),
    StructField("createdAt", TimestampType), StructField("lastModified", TimestampType),
    StructField("partitionColumns", ArrayType(StringType)), StructField("numFiles", LongType),
    StructField("sizeInBytes", LongType), StructField("properties", MapType(StringType, StringType)),
    StructField("minReaderVersion", IntegerType), StructField("minWriterVersion", IntegerType),
    StructField("tableFeatures", ArrayType(StringType)), StructField("version", LongType)))

  /** One row describing the table at `path` (the columns of Delta's DESCRIBE DETAIL, plus the version). */
  def detail(spark: SparkSession, path: String): DataFrame = {
    val s = log(spark, path).snapshot()
    val m = s.metadata
    val features = (s.protocol.readerFeatures.getOrElse(Set.empty) ++ s.protocol.writerFeatures.getOrElse(Set.empty))
      .toSeq.sorted
    val row = Row("delta", m.id, m.name.orNull, m.description.orNull, s.tablePath.toString,
      m.createdTime.map(new java.sql.Timestamp(_)).orNull, new java.sql.Timestamp(s.timestamp),
      m.partitionColumns, s.files.size.toLong, s.sizeInBytes, m.configuration, s.protocol.minReaderVersion,
      s.protocol.minWriterVersion, features, s.version)
    spark.createDataFrame(java.util.List.of(row), DetailSchema)
  }
}
