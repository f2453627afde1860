package io.strata.procedures

import io.strata.log.{ActionCodec, TableLog}
import io.strata.procedures.StrataProcedure.{optional, required}
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.types._

import scala.jdk.CollectionConverters._

/** `history(table, limit)`: the table's commits, newest first, with the columns of Delta's DESCRIBE HISTORY subset. */
object HistoryProcedure extends StrataProcedure {
  override def name(): String = "history"
  override def description(): String = "The table's commits, newest first (at most limit)."

  val outputType: StructType = StructType(Seq(
    StructField("version", LongType, nullable = false),
    StructField("timestamp", TimestampType),
    StructField("operation", StringType),
    StructField("operationParameters", MapType(StringType, StringType)),
    StructField("numFiles", LongType),
    StructField("numOutputRows", LongType),
    StructField("numOutputBytes", LongType),
    StructField("userMetadata", StringType),
    StructField("engineInfo", StringType),
    StructField("operationMetrics", MapType(StringType, StringType))))

  protected val params = Seq(
    required("table", StringType, "table name or path"),
    optional("limit", IntegerType, "at most this many commits, newest first"))

  protected def run(spark: SparkSession, args: ProcedureArgs): Seq[Row] = {
    val limit = args.int("limit").getOrElse(Int.MaxValue)
    if (limit <= 0) throw args.invalid("limit", s"is $limit", "a number > 0, or NULL for every commit")
    rows(ProcedureTable.resolve(spark, args.requiredString("table")).log, limit)
  }

  def rows(log: TableLog, limit: Int): Seq[Row] = log.history(limit).map { c =>
    val info = c.commitInfo.map(_.json)
    def text(f: String) = info.flatMap(i => Option(i.get(f))).filterNot(_.isNull).map(_.asText).orNull
    def strings(f: String): Map[String, String] = info.flatMap(i => Option(i.get(f))).filter(_.isObject).map { p =>
      p.properties.asScala.map(e => e.getKey -> (if (e.getValue.isTextual) e.getValue.asText
        else ActionCodec.mapper.writeValueAsString(e.getValue))).toMap
    }.orNull
    val metrics = strings("operationMetrics")
    def metric(m: String): java.lang.Long =
      Option(metrics).flatMap(_.get(m)).flatMap(_.toLongOption).map(java.lang.Long.valueOf).orNull
    Row(c.version, new java.sql.Timestamp(c.timestamp), text("operation"), strings("operationParameters"),
      metric("numFiles"), metric("numOutputRows"), metric("numOutputBytes"), text("userMetadata"),
      text("engineInfo"), metrics)
  }
}

/** `detail(table)`: one row describing the table (the columns of Delta's DESCRIBE DETAIL, plus the version). */
object DetailProcedure extends StrataProcedure {
  override def name(): String = "detail"
  override def description(): String = "One row describing the table: location, size, files, properties, protocol."

  val outputType: StructType = StructType(Seq(
    StructField("format", StringType), StructField("id", StringType), StructField("name", StringType),
    StructField("description", StringType), StructField("location", StringType),
    StructField("createdAt", TimestampType), StructField("lastModified", TimestampType),
    StructField("partitionColumns", ArrayType(StringType)), StructField("clusteringColumns", ArrayType(StringType)),
    StructField("numFiles", LongType),
    StructField("sizeInBytes", LongType), StructField("properties", MapType(StringType, StringType)),
    StructField("minReaderVersion", IntegerType), StructField("minWriterVersion", IntegerType),
    StructField("tableFeatures", ArrayType(StringType)), StructField("version", LongType)))

  protected val params = Seq(required("table", StringType, "table name or path"))

  protected def run(spark: SparkSession, args: ProcedureArgs): Seq[Row] =
    Seq(row(ProcedureTable.resolve(spark, args.requiredString("table")).log))

  def row(log: TableLog): Row = {
    val s = log.snapshot()
    val m = s.metadata
    val features = io.strata.log.TableFeatures.listedBy(s.protocol).toSeq.sorted
    Row("delta", m.id, m.name.orNull, m.description.orNull, s.tablePath.toString,
      m.createdTime.map(new java.sql.Timestamp(_)).orNull, new java.sql.Timestamp(s.timestamp),
      m.partitionColumns, clusteringColumns(s), s.files.size.toLong, s.sizeInBytes, m.configuration, s.protocol.minReaderVersion,
      s.protocol.minWriterVersion, features, s.version)
  }

  /** As delta-spark's DESCRIBE DETAIL: the logical names (dotted paths) of the clustering columns. */
  private def clusteringColumns(s: io.strata.log.Snapshot): Seq[String] =
    io.strata.table.ClusteringColumns.logical(io.strata.table.TableSchema.of(s.metadata).schema,
      io.strata.log.Clustering.columns(s), s.tablePath.toString).map(_.mkString("."))
}
