package io.strata.config

import java.util.Locale

import io.strata.log.{InvalidTableOperationException, StateSize}
import org.apache.spark.sql.SparkSession
import org.apache.spark.storage.StorageLevel

/** Session settings of batch reads (the `spark.strata.*` namespace of the other session confs). */
object ReadConf {
  /**
   * `false` turns off answering count / min / max from the log's statistics (catalog reads' aggregate push-down and
   * the path reads' optimizer rule): every aggregate then reads the data. Default `true`.
   */
  val AggregatePushdownKey = "spark.strata.read.aggregatePushdown.enabled"

  /**
   * Path reads of a table with at least this many live files (as the log states it: `_last_checkpoint`'s
   * `numOfAddFiles`, or the count of a snapshot this JVM holds) reconstruct and prune the file state with Spark jobs
   * instead of on the driver. `0` sends every path read of the latest version there. Default 5,000,000.
   */
  val DistributedFilesKey = "spark.strata.state.distributedThreshold.files"
  /**
   * When the log does not state a file count (no checkpoint, or `_last_checkpoint` without `numOfAddFiles`), the
   * bytes of the checkpoint and commits to replay decide instead, against this threshold. Default 1 GiB.
   */
  val DistributedBytesKey = "spark.strata.state.distributedThreshold.bytes"
  /**
   * How the distributed state keeps a version's reconciled files between queries: a Spark storage level by name.
   * Default `DISK_ONLY`: the tables on this path are the ones too big for the driver. In local mode the driver's heap
   * is the executor's; there `MEMORY_AND_DISK` ran a 10,000,000-file state out of a 2 GB heap while it was cached.
   * Local disk and the page cache keep it without heap. `MEMORY_AND_DISK_SER` (or another level) suits executors
   * with room to spare. `NONE`: nothing is kept, and every query reconciles the files again.
   */
  val StateStorageLevelKey = "spark.strata.state.storageLevel"
  private val DefaultDistributedFiles = 5000000L
  private val DefaultDistributedBytes = 1L << 30

  def aggregatePushdown(spark: SparkSession): Boolean = spark.conf.getOption(AggregatePushdownKey) match {
    case None => true
    case Some(v) if v.trim.equalsIgnoreCase("true") => true
    case Some(v) if v.trim.equalsIgnoreCase("false") => false
    case Some(v) => throw InvalidTableOperationException("STRATA_INVALID_CONF_VALUE",
      Map("setting" -> AggregatePushdownKey, "value" -> v, "allowed" -> "true or false"))
  }

  /** Whether a table whose state is `size` is read through the distributed state (the one place that decides). */
  def distributedState(spark: SparkSession, size: StateSize): Boolean = {
    val files = nonNegative(spark, DistributedFilesKey, DefaultDistributedFiles)
    val bytes = nonNegative(spark, DistributedBytesKey, DefaultDistributedBytes)
    files == 0 || size.files.fold(size.logBytes >= bytes)(_ >= files)
  }

  /** The storage level of the distributed state's kept files; None: not kept (`NONE`). */
  def stateStorageLevel(spark: SparkSession): Option[StorageLevel] =
    spark.conf.getOption(StateStorageLevelKey).fold(Option(StorageLevel.DISK_ONLY)) { v =>
      val level = scala.util.Try(StorageLevel.fromString(v.trim.toUpperCase(Locale.ROOT))).getOrElse(
        throw InvalidTableOperationException("STRATA_INVALID_CONF_VALUE", Map("setting" -> StateStorageLevelKey,
          "value" -> v, "allowed" -> "a Spark storage level such as DISK_ONLY, MEMORY_AND_DISK_SER or NONE")))
      Some(level).filter(_ != StorageLevel.NONE)
    }

  private def nonNegative(spark: SparkSession, key: String, default: Long): Long =
    spark.conf.getOption(key).fold(default) { v =>
      v.trim.replace("_", "").toLongOption.filter(_ >= 0).getOrElse(throw InvalidTableOperationException(
        "STRATA_INVALID_CONF_VALUE", Map("setting" -> key, "value" -> v, "allowed" -> "a whole number, 0 or more")))
    }
}
