package io.strata.read

import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.datasources.{PartitionDirectory, PartitionSpec, PartitioningAwareFileIndex}
import org.apache.spark.sql.types.StructType

import scala.collection.mutable

/**
 * A catalog (V2) read of a table above the distributed-state threshold: Spark's Parquet scan builder takes a
 * `PartitioningAwareFileIndex`, so this one stands for the [[DistributedFileIndex]] until the scan knows its pushed
 * filters; [[ParquetScans]] then replaces it by [[selected]], a [[LogFileIndex]] of only the files the job selects
 * (as a path read's [[PruneLogFileIndex]] does), and no file state is built on the driver. Every listing Spark could
 * still ask of it goes to the distributed index.
 */
final class DistributedScanIndex(spark: SparkSession, val distributed: DistributedFileIndex)
    extends PartitioningAwareFileIndex(spark, Map.empty, None) with SnapshotRead {
  override def readTablePath: Path = distributed.readTablePath
  override def readVersion: Long = distributed.readVersion
  override def timeTravel: Boolean = distributed.timeTravel
  override val partitionSchema: StructType = distributed.partitionSchema
  def tableSchema: StructType = distributed.tableSchema
  def hasDeletionVectors: Boolean = distributed.hasDeletionVectors

  /** The files `partitionFilters` and `dataFilters` may match, selected by one job, as a driver index. */
  def selected(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): LogFileIndex =
    distributed.pruned(partitionFilters, dataFilters).getOrElse(distributed.selected(Nil, Nil, None))

  private lazy val everything = selected(Nil, Nil)

  override def rootPaths: Seq[Path] = distributed.rootPaths
  // The log, not directories, gives partition values: no partition directories are listed.
  override def partitionSpec(): PartitionSpec = PartitionSpec(partitionSchema, Nil)
  override protected lazy val leafFiles: mutable.LinkedHashMap[Path, FileStatus] =
    mutable.LinkedHashMap(everything.allFiles().map(f => f.getPath -> f): _*)
  override protected lazy val leafDirToChildrenFiles: Map[Path, Array[FileStatus]] =
    everything.allFiles().groupBy(_.getPath.getParent).map { case (d, fs) => d -> fs.toArray }
  override def listFiles(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[PartitionDirectory] =
    distributed.listFiles(partitionFilters, dataFilters)
  override def allFiles(): Seq[FileStatus] = everything.allFiles()
  override def inputFiles: Array[String] = distributed.inputFiles
  override def sizeInBytes: Long = distributed.sizeInBytes
  override def refresh(): Unit = ()
  override def toString: String = distributed.toString
}
