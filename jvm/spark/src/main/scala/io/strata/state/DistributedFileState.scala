package io.strata.state

import java.time.ZoneId

import io.strata.log.{Action, ActionCodec, AddFile, Checkpoints, FileNames, RemoveFile, Snapshot, SnapshotHead,
  TableLog}
import io.strata.table.{CatalystValues, PartitionPredicate, StatsSkipping, TableSchema}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.functions.{broadcast, col, count, max, struct, sum, when}
import org.apache.spark.sql.types.{BooleanType, LongType, StringType, StructField, StructType}
import org.apache.spark.util.SerializableConfiguration

/**
 * The live files of one version, reconstructed by Spark jobs instead of on the driver (delta-spark's way for big
 * tables): the checkpoint parts (Parquet, only their `add` column) and the commit files are read by tasks, each
 * action keyed as the driver's replay keys it ([[Snapshot.replayKey]]: path relative to the table, deletion vector
 * id) and ordered by (version, position in its file); a shuffle on the key keeps each key's last action among the
 * commits (PROTOCOL.md, "Action Reconciliation": a remove hides the add), and the checkpoint's adds stand unless a
 * commit after it touched their key, leaving the live adds. Pruning runs in the job too (partition filters on the
 * typed partition values, [[StatsSkipping]] on statistics), so only the selected files reach the driver; totals are
 * Spark aggregates. Nothing is cached: each question is one job.
 */
final class DistributedFileState(spark: SparkSession, val head: SnapshotHead, hadoopConf: Configuration,
                                 zone: ZoneId) {
  import DistributedFileState._

  private val table = TableSchema.of(head.metadata)
  private val dataSchema = StructType(table.schema.fields.filterNot(f =>
    table.partitionSchema.fieldNames.exists(_.equalsIgnoreCase(f.name))))

  /**
   * The checkpoint's adds (key, JSON line unless only totals are wanted, size, live rows or -1), read by one task per
   * part with only the `add` column decoded: a
   * checkpoint holds the reconciled state (PROTOCOL.md, "Checkpoints": one action per key), so its removes are
   * tombstones that hide nothing in it, and nothing that comes after it.
   */
  private def checkpointAdds(selector: FileSelector, withAction: Boolean): DataFrame =
    checkpointRows("add", KeyedSchema) {
      // Pruned where read: only the selected adds become rows (selection is per file, so it commutes with the
      // anti-join below).
      case (root, f: AddFile) if selector.keeps(f) => Some(Row(Snapshot.replayKey(root, f.path, f.dvId),
        if (withAction) ActionCodec.serialize(f) else null, f.size, f.logicalRows.getOrElse(-1L)))
      case _ => None
    }

  /**
   * One task per checkpoint part, decoding only its `column` (the log core's decoder); `row` makes each action a row
   * of `schema` (None: dropped), given the table's root.
   */
  private def checkpointRows(column: String, schema: StructType)(row: (Path, Action) => Option[Row]): DataFrame = {
    val sc = spark.sparkContext
    val conf = sc.broadcast(new SerializableConfiguration(hadoopConf))
    val root = head.tablePath.toString
    val parts = head.segment.checkpointFiles.map(_.toString)
    val rows = sc.parallelize(parts, math.max(1, parts.size)).mapPartitions(_.flatMap { p =>
      val rootPath = new Path(root)
      Checkpoints.read(new Path(p), conf.value.value, Seq(column)).flatMap(a => row(rootPath, a))
    })
    spark.createDataFrame(rows, schema)
  }

  /**
   * The file actions of the commits after the checkpoint (key, version, position in its file, add?, JSON line), each
   * commit file parsed in a task by our own codec (the checks the driver's replay makes).
   */
  private def commitActions: DataFrame = {
    val sc = spark.sparkContext
    val conf = sc.broadcast(new SerializableConfiguration(hadoopConf))
    val root = head.tablePath.toString
    val rows = sc.parallelize(commitVersions, math.max(1, math.min(commitVersions.size, sc.defaultParallelism * 4)))
      .mapPartitions { vs =>
        val log = TableLog.forPath(new Path(root), conf.value.value)
        vs.flatMap { v =>
          log.readCommit(v).iterator.zipWithIndex.flatMap { case (a, i) =>
            row(log.tablePath, a, v, i.toLong, ActionCodec.serialize(a))
          }
        }
      }
    spark.createDataFrame(rows, ActionSchema)
  }

  private lazy val commitVersions: Seq[Long] = head.segment.commitFiles.flatMap(p => FileNames.classify(p.getName))
    .collect { case FileNames.DeltaFile(v) => v }.sorted

  /** The commits' bytes are small enough to send their keys to every checkpoint task (no shuffle of the checkpoint). */
  private def commitsAreSmall: Boolean = {
    val fs = head.tablePath.getFileSystem(hadoopConf)
    head.segment.commitFiles.iterator.map(fs.getFileStatus(_).getLen).sum <= BroadcastCommitBytes
  }

  /**
   * The live adds (JSON line, size, live rows or -1) that `selector` keeps (PROTOCOL.md, "Action Reconciliation"): among the commits, each key's last
   * action (by version, then position), when it is an add, reconciled by a shuffle on the key; and the checkpoint's
   * adds whose key no commit after it touches (an anti-join, broadcast when the commits are small).
   */
  private def live(selector: FileSelector, withAction: Boolean = true): DataFrame = {
    val columns = Seq(col("action"), col("size"), col("rows"))
    val fromCheckpoint = head.segment.checkpointVersion.map(_ => checkpointAdds(selector, withAction))
    if (commitVersions.isEmpty) fromCheckpoint.get.select(columns: _*)
    else {
      import spark.implicits._
      val last = lastOfCommits
      val fromCommits = last.where(col("last.isAdd")).select(col("last.action").as("action")).as[String]
        .flatMap { l =>
          val f = ActionCodec.parse(l).asInstanceOf[AddFile]
          if (selector.keeps(f)) Some((l, f.size, f.logicalRows.getOrElse(-1L))) else None
        }.toDF("action", "size", "rows")
      fromCheckpoint.fold(fromCommits) { cp =>
        val touched = last.select(col("key"))
        cp.join(if (commitsAreSmall) broadcast(touched) else touched, Seq("key"), "left_anti")
          .select(columns: _*).union(fromCommits)
      }
    }
  }

  /** Each key's last file action in the commits after the checkpoint (key; last: version, position, isAdd, action). */
  private def lastOfCommits: DataFrame = commitActions.groupBy(col("key"))
    .agg(max(struct(col("version"), col("position"), col("isAdd"), col("action"))).as("last"))

  /**
   * Every file action a checkpoint of this version holds, as JSON lines: the live adds (reconciled as [[select]]
   * reconciles them) and the tombstones deleted after `tombstoneCutoff` (as the driver's checkpoint keeps them): the
   * commits' keys whose last action is a remove, and the checkpoint's removes no commit after it touched.
   */
  def checkpointFileActions(tombstoneCutoff: Long): DataFrame = {
    import spark.implicits._
    val adds = live(all).select(col("action"))
    val fromCheckpoint = head.segment.checkpointVersion.map(_ => checkpointRemoves(tombstoneCutoff))
    val removes = if (commitVersions.isEmpty) fromCheckpoint.map(_.select(col("action"))) else {
      val last = lastOfCommits
      val fromCommits = last.where(!col("last.isAdd")).select(col("last.action").as("action")).as[String]
        .filter((l: String) =>
          ActionCodec.parse(l).asInstanceOf[RemoveFile].deletionTimestamp.forall(_ > tombstoneCutoff))
        .toDF("action")
      Some(fromCheckpoint.fold(fromCommits) { cp =>
        val touched = last.select(col("key"))
        cp.join(if (commitsAreSmall) broadcast(touched) else touched, Seq("key"), "left_anti").select(col("action"))
          .union(fromCommits)
      })
    }
    removes.fold(adds)(adds.union)
  }

  /** The checkpoint's removes deleted after `cutoff` (key, JSON line), one task per part, only `remove` decoded. */
  private def checkpointRemoves(cutoff: Long): DataFrame = checkpointRows("remove", RemoveSchema) {
    case (root, r: RemoveFile) if r.deletionTimestamp.forall(_ > cutoff) =>
      Some(Row(Snapshot.replayKey(root, r.path, r.dvId), ActionCodec.serialize(r)))
    case _ => None
  }

  /**
   * The live files that `partitionFilters` (over partition columns) and `dataFilters` (over data columns, skipped by
   * statistics) may match, collected to the driver: the same files the driver's `LogFileIndex` (package read)
   * selects for the same filters.
   */
  def select(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[AddFile] = {
    val selector = FileSelector(PartitionPredicate(table.partitionSchema, partitionFilters), dataSchema, dataFilters,
      table.partitionSchema, zone)
    describing(s"Strata: files of ${head.tablePath} version ${head.version}") {
      live(selector).rdd.map(_.getString(0)).collect().toSeq.map(l => ActionCodec.parse(l).asInstanceOf[AddFile])
    }
  }

  private def all = FileSelector(PartitionPredicate(table.partitionSchema, Nil), dataSchema, Nil,
    table.partitionSchema, zone)

  /** The live files' paths as the table names them (absolute), for `inputFiles()`. */
  def paths: Seq[String] = {
    val root = head.tablePath.toString
    describing(s"Strata: file paths of ${head.tablePath} version ${head.version}") {
      live(all).rdd.mapPartitions { rows =>
        val rootPath = new Path(root)
        rows.map(r => Snapshot.absolutePath(rootPath,
          ActionCodec.parse(r.getString(0)).asInstanceOf[AddFile].path).toString)
      }.collect().toSeq
    }
  }

  /** Files, bytes, and logical rows (None unless every file states `numRecords`), as one Spark aggregate. */
  def totals: Totals = describing(s"Strata: totals of ${head.tablePath} version ${head.version}") {
    val files = live(all, withAction = false)
    val r: Row = files.agg(count(col("size")), sum(col("size")), sum(when(col("rows") < 0, 1L).otherwise(0L)),
      sum(when(col("rows") >= 0, col("rows")).otherwise(0L))).head()
    def long(i: Int) = if (r.isNullAt(i)) 0L else r.getLong(i)
    Totals(long(0), long(1), if (long(2) == 0) Some(long(3)) else None)
  }

  private def describing[T](what: String)(body: => T): T = {
    val sc = spark.sparkContext
    val before = sc.getLocalProperty("spark.job.description")
    sc.setJobDescription(what)
    try body finally sc.setJobDescription(before)
  }
}

object DistributedFileState {
  /**
   * Which files a listing keeps: partition filters on the file's typed partition values (in the session zone), then
   * statistics skipping; the driver index's code ([[PartitionPredicate]], [[StatsSkipping]]). Serializable: tasks
   * build their predicates where they run.
   */
  private final case class FileSelector(partitions: PartitionPredicate, dataSchema: StructType,
                                        dataFilters: Seq[Expression], partitionSchema: StructType, zone: ZoneId) {
    @transient private lazy val skipping = StatsSkipping(dataSchema, dataFilters, partitionSchema)
    private val everything = partitions.filters.isEmpty && dataFilters.isEmpty

    def keeps(f: AddFile): Boolean = everything || {
      val values = CatalystValues.partitionRow(partitionSchema, f.partitionValues, zone)
      // Partition values also bound the filters that mix partition and data columns, as on the driver.
      partitions.keeps(values) && skipping.mayMatch(f.stats, values)
    }
  }

  /** A version's live files, bytes, and rows when every file's statistics count them. */
  final case class Totals(files: Long, bytes: Long, rows: Option[Long])

  /** Commits of at most this many bytes have their keys broadcast to the checkpoint's tasks. */
  private val BroadcastCommitBytes = 64L << 20

  private val KeyedSchema = StructType(Seq(StructField("key", StringType, nullable = false),
    StructField("action", StringType, nullable = true), StructField("size", LongType, nullable = false),
    StructField("rows", LongType, nullable = false)))

  private val RemoveSchema = StructType(Seq(StructField("key", StringType, nullable = false),
    StructField("action", StringType, nullable = false)))

  private val ActionSchema = StructType(Seq(StructField("key", StringType, nullable = false),
    StructField("version", LongType, nullable = false), StructField("position", LongType, nullable = false),
    StructField("isAdd", BooleanType, nullable = false), StructField("action", StringType, nullable = false)))

  /** A file action as a row of [[ActionSchema]]; None for any other action. */
  private def row(root: Path, a: io.strata.log.Action, version: Long, position: Long, line: => String): Option[Row] =
    a match {
      case f: AddFile => Some(Row(Snapshot.replayKey(root, f.path, f.dvId), version, position, true, line))
      case r: RemoveFile => Some(Row(Snapshot.replayKey(root, r.path, r.dvId), version, position, false, line))
      case _ => None
    }
}
