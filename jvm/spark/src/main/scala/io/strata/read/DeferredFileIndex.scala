package io.strata.read

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.datasources.{FileIndex, PartitionDirectory}
import org.apache.spark.sql.types.StructType

/**
 * A snapshot's file index built the first time a scan or a listing asks for files, not when the relation is made.
 * For the relation a V1 save hands back to Spark ([[SnapshotReader.writtenRelation]]), which Spark 4.1 never scans:
 * a one-row append to a table of a million files then builds no partition rows and copies no Hadoop configuration.
 */
final class DeferredFileIndex(
    override val readTablePath: Path,
    override val readVersion: Long,
    override val partitionSchema: StructType,
    build: () => FileIndex) extends FileIndex with SnapshotRead {
  private lazy val index = build()

  override def timeTravel: Boolean = false
  override def rootPaths: Seq[Path] = Seq(readTablePath)
  override def listFiles(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[PartitionDirectory] =
    index.listFiles(partitionFilters, dataFilters)
  override def inputFiles: Array[String] = index.inputFiles
  override def refresh(): Unit = index.refresh()
  override def sizeInBytes: Long = index.sizeInBytes
}
