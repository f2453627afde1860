package io.strata.write

import io.strata.config.{ReadConf, WriteConf}
import io.strata.log.{Snapshot, SnapshotHead, TableLog}
import org.apache.spark.sql.SparkSession

/**
 * The version a write starts from. A blind append to a table whose state reaches the distributed-state threshold
 * ([[ReadConf.distributedState]], the one place that decides, as for reads) starts from the version's
 * [[SnapshotHead]] only: its commit needs the protocol, metadata, application versions and domains, never the files,
 * so the driver never builds them. Every other write (overwrite, replaceWhere, dynamic overwrite, overwriteSchema,
 * row-level operations) starts from the snapshot, whatever the size.
 */
object WriteBase {
  /** The latest version for a write; None when there is no table. `append`: the write only adds data. */
  def latest(spark: SparkSession, log: TableLog, append: Boolean, conf: WriteConf)
      : Option[Either[SnapshotHead, Snapshot]] =
    if (append && !conf.overwriteSchema) log.latest(ReadConf.distributedState(spark, _))
    else log.snapshotOption().map(Right(_))
}
