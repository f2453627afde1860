package io.strata.write

import org.apache.hadoop.mapreduce.TaskAttemptContext
import org.apache.spark.sql.execution.datasources.{OutputWriter, OutputWriterFactory}
import org.apache.spark.sql.types.StructType

/** Wraps Spark's Parquet writer factory; the place for per-row write checks. */
final class StrataOutputWriterFactory(parquet: OutputWriterFactory) extends OutputWriterFactory {
  override def getFileExtension(context: TaskAttemptContext): String = parquet.getFileExtension(context)
  override def newInstance(path: String, dataSchema: StructType, context: TaskAttemptContext): OutputWriter =
    new StrataOutputWriter(parquet.newInstance(path, dataSchema, context), WriteFaults.forTask(context))
}
