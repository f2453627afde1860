package io.strata.write

import io.strata.config.{ReadConf, WriteConf}
import io.strata.log.{Snapshot, SnapshotHead, TableLog}
import org.apache.spark.sql.SparkSession

/**
 * The version a write starts from. A blind append's commit needs the protocol, metadata, application versions and
 * domains, never the files ([[TableLog.appendBase]]): it starts from the snapshot this JVM already holds (or brings
 * up to date from the commits since: cheap, and the next read stays warm), else from the version's [[SnapshotHead]]
 * alone, whatever the table's size, so that an application whose first operation is an append to a big table builds
 * no file state (as delta-spark's blind append reads protocol and metadata only). Above the distributed-state
 * threshold ([[ReadConf.distributedState]], the one place that decides, as for reads) a held snapshot is not used
 * either. The checkpoint a commit over a head may be due is written by `state.DistributedCheckpoint.Hook` (on the
 * driver for a small table, by Spark jobs for a big one). Every other write (overwrite, replaceWhere, dynamic
 * overwrite, overwriteSchema, row-level operations) starts from the snapshot, whatever the size.
 */
object WriteBase {
  /** The latest version for a write; None when there is no table. `append`: the write only adds data. */
  def latest(spark: SparkSession, log: TableLog, append: Boolean, conf: WriteConf)
      : Option[Either[SnapshotHead, Snapshot]] =
    if (append && !conf.overwriteSchema) log.appendBase(ReadConf.distributedState(spark, _))
    else log.snapshotOption().map(Right(_))
}
