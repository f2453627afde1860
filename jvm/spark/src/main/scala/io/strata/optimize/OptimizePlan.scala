package io.strata.optimize

import io.strata.log.{AddFile, Snapshot}
import io.strata.table.{PartitionPaths, PartitionValues, PhysicalSchema, TableSchema}

/**
 * Files of one partition that one Spark job rewrites together, and one commit unit: it commits, or loses to a
 * concurrent change of one of its files, as a whole. `partitionValues`: the log values the new files get (those of
 * the group's first file, verbatim: same spelling, NULL stays NULL).
 */
final case class OptimizeGroup(index: Int, partitionValues: Map[String, Option[String]], files: Seq[AddFile]) {
  def bytes: Long = files.iterator.map(_.size).sum
  def deletionVectors: Int = files.count(_.deletionVector.isDefined)
  /** Rows a reader sees in the group's files, when every file's statistics count them. */
  def logicalRows: Option[Long] = {
    val counts = files.map(_.logicalRows)
    if (counts.forall(_.isDefined)) Some(counts.flatten.sum) else None
  }
  def describe(partitionColumns: Seq[String]): String = {
    val where = if (partitionColumns.isEmpty) "the table" else
      "partition " + PartitionPaths.directory(partitionColumns.map(c => c -> partitionValues.getOrElse(c, None)))
    s"group $index (${files.size} files of $where)"
  }
}

/** What one optimize rewrites: groups, and the commits they go in (each a run of whole partitions). */
final case class OptimizePlan(batches: Seq[Seq[OptimizeGroup]], partitionsSelected: Int, filesSelected: Int) {
  def groups: Seq[OptimizeGroup] = batches.flatten
  def isEmpty: Boolean = batches.isEmpty
}

/**
 * Chooses the files to rewrite. Bin-packing: in each selected partition, the files below `smallFileSize` (the target
 * size, except for auto-compaction) and every
 * file with a deletion vector, smallest first, are packed into bins of at most the target size; a bin with at least
 * `minInputFiles` files, or any file with a deletion vector, is a group. Z-order: every file of each selected
 * partition forms one group (delta-spark rewrites single-file partitions too: the rows get sorted). `eligible`: the
 * files that may be rewritten at all (a clustered table: those not yet clustered by its current columns).
 * Commits: one per partition, consecutive partitions sharing one beyond `maxCommits`, and none holding more than
 * `batchSize` bytes of rewritten files (delta-spark's `optimize.batchSize`; a larger group alone).
 */
object OptimizePlanner {
  def plan(snapshot: Snapshot, selected: Map[String, Option[String]] => Boolean, targetFileSize: Long,
           minInputFiles: Int, zOrder: Boolean, maxCommits: Int, smallFileSize: Long,
           eligible: AddFile => Boolean = _ => true, batchSize: Long = Long.MaxValue): OptimizePlan = {
    val partitionSchema = TableSchema.of(snapshot.metadata).partitionSchema
    val partitionColumns = partitionSchema.fields.toSeq.map(PhysicalSchema.physicalName) // the log's keys
    val files = snapshot.files.filter(f => selected(f.partitionValues) && eligible(f))
    // One partition per typed value (files of one partition may spell it differently), in directory order. Values
    // equal in every session zone only: a rewrite must not change a zone-less timestamp some session reads apart.
    val partitions = files.groupBy(f => PartitionValues.typedKey(f.partitionValues, partitionSchema, None)).values.toSeq
      .map(fs => fs.sortBy(_.path)).sortBy(fs => PartitionPaths.directory(partitionColumns.map(c =>
        c -> fs.head.partitionValues.getOrElse(c, None))))
    var next = 0
    val perPartition: Seq[Seq[OptimizeGroup]] = partitions.map { fs =>
      val bins = if (zOrder) Seq(fs) else binPack(fs, targetFileSize, minInputFiles, smallFileSize)
      bins.map { b => next += 1; OptimizeGroup(next, fs.head.partitionValues, b) }
    }.filter(_.nonEmpty)
    val perCommit = math.max(1, math.ceil(perPartition.size.toDouble / math.max(1, maxCommits)).toInt)
    OptimizePlan(perPartition.grouped(perCommit).flatMap(p => batches(p.flatten, batchSize)).toSeq, partitions.size,
      files.size)
  }

  /** `groups` cut in their order into batches of at most `maxBytes` of rewritten files (a larger group alone). */
  def batches(groups: Seq[OptimizeGroup], maxBytes: Long): Seq[Seq[OptimizeGroup]] = cut(groups, maxBytes)(_.bytes)

  /** The bins worth rewriting among one partition's files (see [[OptimizePlanner]]). */
  def binPack(files: Seq[AddFile], target: Long, minInputFiles: Int, smallFileSize: Long): Seq[Seq[AddFile]] = {
    val candidates = files.filter(f => f.size < smallFileSize || f.deletionVector.isDefined).sortBy(f => (f.size, f.path))
    pack(candidates, target).filter(b => b.size >= minInputFiles || b.exists(_.deletionVector.isDefined))
  }

  /** `files` cut in their order into bins of at most `maxBytes` (a larger file alone), as delta-spark bins them. */
  def pack(files: Seq[AddFile], maxBytes: Long): Seq[Seq[AddFile]] = cut(files, maxBytes)(_.size)

  /** `items` cut in their order into runs of at most `maxBytes` by `bytes` (a larger item alone). */
  private def cut[T](items: Seq[T], maxBytes: Long)(bytes: T => Long): Seq[Seq[T]] = {
    val runs = Seq.newBuilder[Seq[T]]
    var run = Vector.empty[T]
    var runBytes = 0L
    items.foreach { item =>
      val b = bytes(item)
      if (run.nonEmpty && runBytes + b > maxBytes) { runs += run; run = Vector.empty; runBytes = 0L }
      run :+= item
      runBytes += b
    }
    if (run.nonEmpty) runs += run
    runs.result()
  }
}
