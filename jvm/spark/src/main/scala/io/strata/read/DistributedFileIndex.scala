package io.strata.read

import io.strata.log.TableFeatures
import io.strata.state.DistributedFileState
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.datasources.{FileIndex, PartitionDirectory}
import org.apache.spark.sql.types.StructType

/**
 * The file index of a path read (of the latest version, or by time travel) above the distributed-state threshold
 * ([[io.strata.config.ReadConf]]): no file state on the driver. Each listing runs [[DistributedFileState.select]]
 * (pruning in one Spark job over the reconciled state, cached between queries) and only the selected files reach the driver; its size is a Spark aggregate, computed once when the planner
 * first asks. [[PruneLogFileIndex]] replaces it under filters by a [[LogFileIndex]] of the selected files (pruned
 * from this one), as it does a driver-built index, so `inputFiles()` and EXPLAIN show the selection.
 *
 * Deletion vectors: whether any live file has one is not known without a job, so every scan of a table whose
 * protocol lists the `deletionVectors` reader feature reads row indexes (files without a vector read as usual).
 */
final class DistributedFileIndex(spark: SparkSession, val state: DistributedFileState, val tableSchema: StructType,
                                 override val partitionSchema: StructType, override val timeTravel: Boolean = false)
    extends FileIndex with SnapshotRead {
  private val head = state.head
  override def readTablePath: Path = head.tablePath
  override def readVersion: Long = head.version
  val hasDeletionVectors: Boolean = TableFeatures.DeletionVectors.readBy(head.protocol)

  private lazy val totals = state.totals

  override def rootPaths: Seq[Path] = Seq(head.tablePath)

  /** A driver index of the files the filters select (chosen by the job; partitions grouped on the driver). */
  private[read] def selected(partitionFilters: Seq[Expression], dataFilters: Seq[Expression],
                       pruning: Option[IndexPruning]): LogFileIndex =
    SnapshotReader.filesIndex(spark, head.tablePath, head.metadata, head.version,
      state.select(partitionFilters, dataFilters), hasDeletionVectors, timeTravel, pruning = pruning)

  override def listFiles(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[PartitionDirectory] =
    selected(partitionFilters, dataFilters, None).listFiles(Nil, Nil)

  /** An index of the files `partitionFilters` and `dataFilters` may match, pruned from this one (one job). */
  def pruned(partitionFilters: Seq[Expression], dataFilters: Seq[Expression],
             mixedFilters: Seq[Expression] = Nil): Option[LogFileIndex] =
    if (partitionFilters.isEmpty && dataFilters.isEmpty && mixedFilters.isEmpty) None else {
      val schema = StructType(tableSchema.fields ++ partitionSchema.fields)
      Some(selected(partitionFilters, dataFilters ++ mixedFilters, Some(IndexPruning(this,
        IndexPruning.normalized(partitionFilters ++ dataFilters, schema), IndexPruning.normalized(mixedFilters, schema)))))
    }

  override def inputFiles: Array[String] = state.paths.toArray
  override def sizeInBytes: Long = totals.bytes
  /** Live files, bytes and rows (when every file counts its rows), as one Spark aggregate. */
  def stateTotals: DistributedFileState.Totals = totals
  override def refresh(): Unit = ()
  override def toString: String = s"DistributedFileIndex(${head.tablePath}, version ${head.version})"
}
