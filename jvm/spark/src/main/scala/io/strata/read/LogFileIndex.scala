package io.strata.read

import io.strata.log.{DeletionVectorDescriptor, FileStatistics}
import io.strata.table.{PartitionPredicate, StatsSkipping}
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
 * `pruning`: this index holds only the files of another that some filters keep ([[pruned]]); its root paths are
 * those files, so that a plan (EXPLAIN's `Location: LogFileIndex(<n> paths)`) shows how many a scan reads.
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
    totalBytes: Long,
    val pruning: Option[IndexPruning] = None)
  extends PartitioningAwareFileIndex(spark, options, None) with SnapshotRead {
  override def readTablePath: Path = root

  private def status(f: IndexedFile) = new FileStatus(f.size, false, 1, 128L * 1024 * 1024, f.modificationTime, f.path)

  /** A file as a scan sees it: its deletion vector rides along to the reader ([[DeletionVectorReads]]). */
  private def scanned(f: IndexedFile) = FileStatusWithMetadata(status(f),
    f.deletionVector.fold(Map.empty[String, Any])(dv => Map(DeletionVectorReads.MetadataKey -> dv)))

  /** This index's files (all of its partitions: for an unpruned index of a big table, build them only if needed). */
  def files: Iterator[IndexedFile] = partitions.iterator.flatMap(_.files)

  override def rootPaths: Seq[Path] = if (pruning.isEmpty) Seq(root) else files.map(_.path).toSeq

  // Spark asks for partition directories only through the listing methods overridden here; the table root stands
  // for each (files of one partition may live anywhere: their values come from the log, not from directory names).
  override def partitionSpec(): PartitionSpec =
    if (partitionSchema.isEmpty) PartitionSpec.emptySpec
    else PartitionSpec(partitionSchema, partitions.map(p => PartitionPath(p.values, root)))

  // Spark's own listing structures: no method Spark calls on this index reads them (every one that would is
  // overridden), and they hold only this index's files (a pruned index's, never the whole table's).
  override protected lazy val leafFiles: mutable.LinkedHashMap[Path, FileStatus] =
    mutable.LinkedHashMap(files.map(f => f.path -> status(f)).toSeq: _*)

  override protected lazy val leafDirToChildrenFiles: Map[Path, Array[FileStatus]] =
    files.toSeq.groupBy(_.path.getParent).map { case (dir, fs) => dir -> fs.map(status).toArray }

  /** The partitions whose log values `partitionFilters` keep (the others' files are never built). */
  def prunedPartitions(partitionFilters: Seq[Expression]): Seq[IndexedPartition] =
    if (partitionFilters.isEmpty || partitionSchema.isEmpty) partitions else {
      val predicate = PartitionPredicate(partitionSchema, partitionFilters)
      partitions.filter(p => predicate.keeps(p.values))
    }

  /**
   * Partitions pruned by their log values, then files skipped by their statistics ([[StatsSkipping]], read from the
   * typed statistics columns: parsed once per run of the table state, not per query) and partition values (a filter
   * mixing partition and data columns). Each kept partition comes with its kept files' statistics.
   */
  private def select(partitionFilters: Seq[Expression], dataFilters: Seq[Expression])
      : Seq[(IndexedPartition, Seq[IndexedFile], FileStatistics)] = {
    val skipping = StatsSkipping(dataSchema, dataFilters, partitionSchema)
    val partitions = prunedPartitions(partitionFilters)
    if (!skipping.isEmpty) FileStatistics.prepare(partitions.map(_.stats), skipping.statsColumns)
    partitions.map { p =>
      if (skipping.isEmpty) (p, p.files, p.stats) else {
        val values = p.stats.values(skipping.statsColumns)
        val kept = (0 until p.stats.length).filter(i => skipping.mayMatch(values, i, p.values))
        if (kept.size == p.stats.length) (p, p.files, p.stats) else {
          val files = p.files.toIndexedSeq
          (p, kept.map(files), p.stats.subset(kept))
        }
      }
    }
  }

  /**
   * The files a scan reads: partitions pruned by their log values (not by directory names, so files of one partition
   * may live anywhere), then files skipped by their statistics ([[StatsSkipping]]). A pruned index answers from its
   * own files when the scan's filters include every filter it was pruned by (then the files it left out hold no row
   * the scan keeps), and from the index it was pruned from otherwise.
   */
  override def listFiles(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[PartitionDirectory] =
    pruning match {
      case Some(p) if !p.coveredBy(normalized(partitionFilters ++ dataFilters)) =>
        p.base.listFiles(partitionFilters, dataFilters)
      case _ => select(partitionFilters, dataFilters).collect {
        case (p, fs, _) if fs.nonEmpty => PartitionDirectory(p.values, fs.map(scanned))
      }
    }

  /**
   * An index of the files of this one that `partitionFilters` (over partition columns), `dataFilters` (over data
   * columns; a catalog scan's include filters mixing both) and `mixedFilters` (a path read's filters mixing both, which
   * Spark hands its scan in neither list: [[IndexPruning]]) may match, or None when they leave out no file. Only the partitions the partition filters keep are
   * built. The same snapshot, version and deletion-vector handling as this index.
   */
  def pruned(partitionFilters: Seq[Expression], dataFilters: Seq[Expression],
             mixedFilters: Seq[Expression] = Nil): Option[LogFileIndex] =
    if (partitionFilters.isEmpty && dataFilters.isEmpty && mixedFilters.isEmpty) None else {
      val kept = select(partitionFilters, dataFilters ++ mixedFilters)
      val nothingLeftOut = kept.size == partitions.size && kept.forall { case (p, fs, _) => fs.size == p.stats.length }
      if (nothingLeftOut) None else {
        val base = pruning.fold[FileIndex](this)(_.base)
        val by = IndexPruning(base, pruning.fold(Set.empty[Expression])(_.filters) ++
          normalized(partitionFilters ++ dataFilters),
          pruning.fold(Set.empty[Expression])(_.mixed) ++ normalized(mixedFilters))
        val keptPartitions = kept.collect { case (p, fs, st) if fs.nonEmpty => new IndexedPartition(p.values, fs, st) }
        Some(new LogFileIndex(spark, root, keptPartitions, tableSchema, partitionSchema, options, readVersion,
          timeTravel, hasDeletionVectors, keptPartitions.iterator.flatMap(_.files).map(_.size).sum, Some(by)))
      }
    }

  private def normalized(filters: Seq[Expression]) =
    IndexPruning.normalized(filters, StructType(tableSchema.fields ++ partitionSchema.fields))

  private def dataSchema: StructType =
    StructType(tableSchema.fields.filterNot(f => partitionSchema.fieldNames.exists(_.equalsIgnoreCase(f.name))))

  override def allFiles(): Seq[FileStatus] = files.map(status).toSeq
  override def inputFiles: Array[String] = files.map(_.path.toString).toArray
  override def sizeInBytes: Long = totalBytes
  override def refresh(): Unit = ()

  // Two indexes pruned from one by the same filters are one (Spark then reuses a scan of both sides of a self-join
  // with equal filters); any other is itself only.
  override def equals(other: Any): Boolean = other match {
    case o: LogFileIndex => (o eq this) || (pruning.isDefined && o.pruning == pruning)
    case _ => false
  }
  override def hashCode(): Int = pruning.fold(System.identityHashCode(this))(_.hashCode)
}
