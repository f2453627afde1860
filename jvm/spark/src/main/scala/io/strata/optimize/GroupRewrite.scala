package io.strata.optimize

import io.strata.log.{AddFile, Snapshot}
import io.strata.read.SnapshotReader
import io.strata.table.{PartitionPaths, PhysicalSchema, TableSchema}
import io.strata.write.JobFiles
import io.strata.write.v1.{DirectCommitProtocol, SparkFileWriter}
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.types.StructType

/** The files one group's job wrote, not yet committed; `discard` deletes them, `afterCommit` tidies up. */
final class RewrittenGroup(val group: OptimizeGroup, val added: Seq[AddFile], tableRoot: String,
                           jobFiles: JobFiles, rerun: Boolean) {
  def bytesAdded: Long = added.iterator.map(_.size).sum
  def discard(conf: Configuration): Unit = DirectCommitProtocol.deleteFiles(tableRoot, added, conf)
  /** A task rerun may have left a dead attempt's file: delete every file of the job the commit did not add. */
  def afterCommit(conf: Configuration): Unit = if (rerun) jobFiles.sweepAfterCommit(conf, added)
}

/**
 * One group's Spark job: reads exactly the group's files through the table's reader (deletion vectors applied, so
 * deleted rows are gone), lays the rows out (bin-packing: one task, one file; Z-order or clustering:
 * [[ZOrder.cluster]] along `curve` into
 * about `bytes / target` files) and writes them with the V1 path's writer and commit protocol ([[DirectCommitProtocol]]:
 * final names with the job's UUID, statistics from the footers, cleanup when the job fails) into the partition's
 * directory. The new files carry the group's partition values verbatim, not values parsed back from a directory.
 */
object GroupRewrite {
  def run(spark: SparkSession, snapshot: Snapshot, group: OptimizeGroup, targetFileSize: Long, zOrderBy: Seq[Seq[String]],
          numIndexedCols: Int, curve: Curve = Curve.ZOrder): RewrittenGroup = {
    val table = TableSchema.of(snapshot.metadata)
    val dataColumns = table.schema.fields.map(_.name).filterNot(table.partitionColumns.contains)
    val rows = spark.baseRelationToDataFrame(SnapshotReader.relation(spark, snapshot, Some(group.files)))
    val data = rows.select(dataColumns.map(c => rows.col("`" + c.replace("`", "``") + "`")).toIndexedSeq: _*)
    val laidOut = if (zOrderBy.isEmpty) data.coalesce(1) else {
      val numFiles = math.max(1L, math.min(Int.MaxValue.toLong, (group.bytes + targetFileSize - 1) / targetFileSize))
      ZOrder.cluster(data, zOrderBy, numFiles.toInt, group.logicalRows, curve)
    }
    val root = snapshot.tablePath.toString
    val directory = if (table.partitionColumns.isEmpty) None else
      Some(PartitionPaths.directory(PhysicalSchema.physicalColumns(table.schema, table.partitionColumns)
        .map(c => c -> group.partitionValues.getOrElse(c, None))))
    val jobFiles = new JobFiles(root)
    val committer = new DirectCommitProtocol(jobFiles, new StructType(), numIndexedCols, directory)
    jobFiles.tagged(SparkFileWriter.write(laidOut, root, Nil, committer, Map("compression" -> "snappy"),
      table.schema))
    val added = committer.addedFiles.map(_.copy(partitionValues = group.partitionValues, dataChange = false))
    new RewrittenGroup(group, added, root, jobFiles, committer.hadRerunTasks)
  }
}
