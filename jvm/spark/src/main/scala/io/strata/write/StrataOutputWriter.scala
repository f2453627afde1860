package io.strata.write

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.datasources.OutputWriter

/** One data file being written. */
final class StrataOutputWriter(parquet: OutputWriter, faults: WriteFaults) extends OutputWriter {
  private var rows = 0L
  override def write(row: InternalRow): Unit = {
    parquet.write(row)
    rows += 1
    faults.afterRow(rows)
  }
  override def close(): Unit = parquet.close()
  override def path(): String = parquet.path()
}
