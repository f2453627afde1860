package io.strata.write.v1

import java.util.UUID

import io.strata.log.{CommitResult, ConcurrentModificationException, InvalidTableOperationException, StrataException, TableLog}
import io.strata.shim.SparkInternals
import io.strata.write.{TableWrite, WriteMode}
import io.strata.config.WriteOptions
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions.{col, lit, raise_error, when}

/**
 * The V1 (path) write: Spark's FileFormatWriter writes Parquet files through [[DirectCommitProtocol]], then one log
 * commit makes them part of the table. A failure before the commit leaves the table as it was and deletes the files.
 */
object V1TableWriter {
  def write(log: TableLog, data: DataFrame, mode: WriteMode, options: WriteOptions): Option[CommitResult] = {
    val write = TableWrite.begin(log, data.schema, mode, options)
    if (write.alreadyCommitted) return None
    val spark = data.sparkSession
    // Columns in table order and spelling, so every reader finds them by the table's names.
    val aligned = data.select(write.columnMapping.map { case (table, source) =>
      val c = col(s"`$source`")
      // NOT NULL columns fail the task on the first null: the job aborts and nothing is committed.
      val checked = if (write.schema.schema(table).nullable) c
        else when(c.isNull, raise_error(lit(s"NOT NULL constraint violated: column '$table' of ${log.tablePath} " +
          "received a null value."))).otherwise(c)
      checked.as(table)
    }: _*)
    val root = log.tablePath.toString
    val committer = new DirectCommitProtocol(UUID.randomUUID().toString, root, write.schema.partitionSchema,
      SparkInternals.sessionTimeZone(spark), write.numIndexedColumns)
    val writerOptions = Map("compression" -> options.compression) ++
      options.maxRecordsPerFile.map(n => "maxRecordsPerFile" -> n.toString)
    SparkInternals.writeFiles(aligned, root, write.schema.partitionColumns, committer, writerOptions)
    val files = committer.addedFiles
    try Some(write.commit(files)) catch {
      // The commit certainly did not happen: the files will never be referenced.
      case e @ (_: ConcurrentModificationException | _: InvalidTableOperationException | _: StrataException) =>
        DirectCommitProtocol.deleteFiles(root, files, log.conf)
        throw e
    }
  }
}
