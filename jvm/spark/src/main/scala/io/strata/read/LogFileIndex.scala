package io.strata.read

import io.strata.log.{DeletionVectorDescriptor, FileStatistics}
import io.strata.table.StatsSkipping
import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.datasources._
import org.apache.spark.sql.types.StructType

import scala.collection.mutable

/** One live data file of a snapshot, as the file index needs it (`stats`: the add action's statistics JSON). */
final case class IndexedFile(path: Path, size: Long, modificationTime: Long, partitionValues: InternalRow,
                             stats: Option[String] = None, deletionVector: Option[DeletionVectorDescriptor] = None)

/**
 * The files of one partition of a [[LogFileIndex]]: its typed values, and its files, built when first needed.
 * `statistics`: the files' statistics read in place from the log (aggregates answered from the log use these, and
 * build no files); when not given, taken from the built files.
 */
final class IndexedPartition(val values: InternalRow, load: => Seq[IndexedFile], statistics: => FileStatistics = null) {
  lazy val files: Seq[IndexedFile] = load
  lazy val stats: FileStatistics = Option(statistics).getOrElse(
    FileStatistics.of(files.map(f => (f.stats, f.deletionVector)).toIndexedSeq))
}

/**
 * A file index over the files a snapshot lists (never over a directory listing): Spark's Parquet scans prune
 * partitions through it. The files come grouped by partition, each group's built only when a scan keeps it, so a plan
 * that selects one partition of a million-file table builds that partition's files only. One instance serves one
 * snapshot.
 *
 * `hasDeletionVectors`: some file of the snapshot (not only of these) has a deletion vector, so every scan of the
 * snapshot reads row indexes and drops deleted rows (all scans of one snapshot then agree on their columns).
 * `totalBytes`: the size of all the files (known without building them).
 */
final class LogFileIndex(
    spark: SparkSession,
    root: Path,
    partitions: Seq[IndexedPartition],
    val tableSchema: StructType,
    override val partitionSchema: StructType,
    options: Map[String, String],
    override val readVersion: Long,
    override val timeTravel: Boolean,
    val hasDeletionVectors: Boolean,
    totalBytes: Long)
  extends PartitioningAwareFileIndex(spark, options, None) with SnapshotRead {
  override def readTablePath: Path = root

  private def status(f: IndexedFile) = new FileStatus(f.size, false, 1, 128L * 1024 * 1024, f.modificationTime, f.path)

  /** A file as a scan sees it: its deletion vector rides along to the reader ([[DeletionVectorReads]]). */
  private def scanned(f: IndexedFile) = FileStatusWithMetadata(status(f),
    f.deletionVector.fold(Map.empty[String, Any])(dv => Map(DeletionVectorReads.MetadataKey -> dv)))

  private def files: Iterator[IndexedFile] = partitions.iterator.flatMap(_.files)

  override def rootPaths: Seq[Path] = Seq(root)

  // Spark asks for partition directories only through the listing methods overridden here; the table root stands
  // for each (files of one partition may live anywhere: their values come from the log, not from directory names).
  override def partitionSpec(): PartitionSpec =
    if (partitionSchema.isEmpty) PartitionSpec.emptySpec
    else PartitionSpec(partitionSchema, partitions.map(p => PartitionPath(p.values, root)))

  override protected lazy val leafFiles: mutable.LinkedHashMap[Path, FileStatus] =
    mutable.LinkedHashMap(files.map(f => f.path -> status(f)).toSeq: _*)

  override protected lazy val leafDirToChildrenFiles: Map[Path, Array[FileStatus]] =
    files.toSeq.groupBy(_.path.getParent).map { case (dir, fs) => dir -> fs.map(status).toArray }

  /**
   * The files a scan reads: partitions pruned by their log values (not by directory names, so files of one partition
   * may live anywhere), then files skipped by their statistics ([[StatsSkipping]]).
   */
  override def listFiles(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[PartitionDirectory] = {
    val skipping = StatsSkipping(dataSchema, dataFilters)
    prunedPartitions(partitionFilters)
      .map(p => PartitionDirectory(p.values, p.files.filter(f => skipping.mayMatch(f.stats)).map(scanned)))
      .filter(_.files.nonEmpty)
  }

  /** The partitions whose log values match `partitionFilters` (over partition columns only), none of them built. */
  def prunedPartitions(partitionFilters: Seq[Expression]): Seq[IndexedPartition] =
    if (partitionFilters.isEmpty || partitionSchema.isEmpty) partitions else {
      val bound = partitionFilters.reduce(org.apache.spark.sql.catalyst.expressions.And).transform {
        case a: org.apache.spark.sql.catalyst.expressions.AttributeReference =>
          val i = partitionSchema.fields.indexWhere(_.name.equalsIgnoreCase(a.name))
          org.apache.spark.sql.catalyst.expressions.BoundReference(i, partitionSchema(i).dataType, nullable = true)
      }
      val predicate = org.apache.spark.sql.catalyst.expressions.Predicate.createInterpreted(bound)
      predicate.initialize(0)
      partitions.filter(p => predicate.eval(p.values))
    }

  private def dataSchema: StructType =
    StructType(tableSchema.fields.filterNot(f => partitionSchema.fieldNames.exists(_.equalsIgnoreCase(f.name))))

  override def allFiles(): Seq[FileStatus] = files.map(status).toSeq
  override def inputFiles: Array[String] = files.map(_.path.toString).toArray
  override def sizeInBytes: Long = totalBytes
  override def refresh(): Unit = ()
}
