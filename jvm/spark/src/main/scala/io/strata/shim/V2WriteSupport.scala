package io.strata.shim

import io.strata.table.{PartitionPaths, PartitionValues}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.mapreduce.{Job, JobID, TaskAttemptID, TaskID, TaskType}
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, Cast, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.datasources.{OutputWriter, OutputWriterFactory}
import org.apache.spark.sql.types.{DataType, DateType, DecimalType, StringType, StructType, TimestampNTZType, TimestampType}
import org.apache.spark.util.SerializableConfiguration

/**
 * Spark's Parquet writer for DataSource V2 tasks: prepared once on the driver (as FileFormatWriter would), shipped
 * to executors, where each task opens files with it. Rows handed to [[ParquetFiles.FileWriter.write]] hold the data
 * columns only.
 */
final class ParquetFiles private (factory: OutputWriterFactory, conf: SerializableConfiguration,
                                  dataSchema: StructType, jobTrackerId: String) extends Serializable {
  def hadoopConf: Configuration = conf.value

  /** A writer for one task attempt; `open` creates files under the given absolute paths. */
  def forTask(partitionId: Int, attemptId: Long): ParquetFiles.TaskFiles = {
    val jobId = new JobID(jobTrackerId, 0)
    val attempt = new TaskAttemptID(new TaskID(jobId, TaskType.MAP, partitionId), (attemptId & Int.MaxValue).toInt)
    val ctx = new TaskAttemptContextImpl(conf.value, attempt)
    new ParquetFiles.TaskFiles {
      override val extension: String = factory.getFileExtension(ctx)
      override def open(path: String): ParquetFiles.FileWriter = {
        val w: OutputWriter = factory.newInstance(path, dataSchema, ctx)
        new ParquetFiles.FileWriter {
          override def write(row: InternalRow): Unit = w.write(row)
          override def close(): Unit = w.close()
        }
      }
    }
  }
}

object ParquetFiles {
  trait FileWriter { def write(row: InternalRow): Unit; def close(): Unit }
  trait TaskFiles { def extension: String; def open(path: String): FileWriter }

  def prepare(spark: SparkSession, options: Map[String, String], dataSchema: StructType): ParquetFiles = {
    val job = Job.getInstance(SparkInternals.hadoopConf(spark, options))
    val factory = new StrataParquetFormat().prepareWrite(spark, job, options, dataSchema)
    val tracker = new java.text.SimpleDateFormat("yyyyMMddHHmmss").format(new java.util.Date())
    new ParquetFiles(factory, new SerializableConfiguration(job.getConfiguration), dataSchema, tracker)
  }
}

/**
 * Splits rows of a table's full schema into the data-column row and the partition: the Hive directory (rendered in
 * UTC, so a directory names one instant) and the log's partition values, made from the internal values themselves
 * (days, UTC microseconds, exact decimals), never from a session-zone rendering.
 */
final class PartitionSplitter(schema: StructType, partitionColumns: Seq[String]) extends Serializable {
  private val partOrdinals = partitionColumns.map(schema.fieldIndex)
  private val dataOrdinals = schema.fields.indices.filterNot(partOrdinals.contains)
  val dataSchema: StructType = StructType(dataOrdinals.map(schema.fields(_)))
  @transient private lazy val dataProjection =
    UnsafeProjection.create(dataOrdinals.map(i => BoundReference(i, schema(i).dataType, schema(i).nullable)))
  @transient private lazy val keyProjection =
    UnsafeProjection.create(partOrdinals.map(i => BoundReference(i, schema(i).dataType, schema(i).nullable)))
  @transient private lazy val renderers = partOrdinals.map { i =>
    Cast(BoundReference(i, schema(i).dataType, schema(i).nullable), StringType, Some("UTC"))
  }

  def isPartitioned: Boolean = partOrdinals.nonEmpty

  /** The data columns of `row` as an UnsafeRow (a reused buffer: copy to keep); an unpartitioned table's UnsafeRow
   *  is already that, so it is not copied. */
  def data(row: InternalRow): UnsafeRow = row match {
    case u: UnsafeRow if partOrdinals.isEmpty => u
    case _ => dataProjection(row)
  }

  /** The in-memory size of a row [[data]] returned, the base of file size estimates. */
  def sizeInBytes(data: UnsafeRow): Long = data.getSizeInBytes.toLong

  /** The partition key of `row`, comparable across rows by equals/hashCode: a reused buffer, copy to keep. */
  def key(row: InternalRow): InternalRow = keyProjection(row)

  /** The partition directory (relative, escaped) and the log partition values of `row`. */
  def partition(row: InternalRow): (String, Map[String, Option[String]]) = {
    val raw = partitionColumns.zip(renderers).map { case (c, r) => c -> Option(r.eval(row)).map(_.toString) }
    val values = partitionColumns.zip(partOrdinals).zip(raw).map { case ((c, i), (_, rendered)) =>
      c -> PartitionSplitter.logValue(row, i, schema(i).dataType, rendered)
    }.toMap
    (PartitionPaths.directory(raw), values)
  }
}

object PartitionSplitter {
  /** The log value of field `i` of `row`; `rendered` is Spark's UTC string of it (right for the other types). */
  private[shim] def logValue(row: InternalRow, i: Int, dataType: DataType, rendered: Option[String]): Option[String] =
    if (row.isNullAt(i)) None else dataType match {
      case DateType => Some(PartitionValues.formatDate(row.getInt(i)))
      case TimestampType => Some(PartitionValues.formatTimestamp(row.getLong(i)))
      case TimestampNTZType => Some(PartitionValues.formatTimestampNtz(row.getLong(i)))
      case d: DecimalType => Some(PartitionValues.formatDecimal(row.getDecimal(i, d.precision, d.scale).toJavaBigDecimal))
      case _ => rendered.filter(_.nonEmpty) // an empty string is null in the log, as in the directory name
    }
}
