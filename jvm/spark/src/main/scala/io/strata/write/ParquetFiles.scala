package io.strata.write

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.mapreduce.{Job, JobID, TaskAttemptID, TaskID, TaskType}
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.datasources.{OutputWriter, OutputWriterFactory}
import org.apache.spark.sql.strata.SparkInternals
import org.apache.spark.sql.types.StructType
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
