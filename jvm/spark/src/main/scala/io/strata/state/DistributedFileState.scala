package io.strata.state

import java.time.ZoneId

import scala.util.control.NonFatal

import io.strata.config.ReadConf
import io.strata.log.{Action, ActionCodec, AddFile, CheckpointStructs, Checkpoints, FileNames, Metadata, RemoveFile,
  Snapshot, SnapshotHead, StrataException, TableLog}
import io.strata.table.{CatalystValues, PartitionPredicate, StatsSkipping, TableSchema}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.util.MapData
import org.apache.spark.sql.functions.{broadcast, col, count, max, struct, sum, when}
import org.apache.spark.sql.types.{BooleanType, LongType, MapType, StringType, StructField, StructType}
import org.apache.spark.util.SerializableConfiguration
import org.apache.spark.SparkException

/**
 * The live files of one version, reconstructed by Spark jobs instead of on the driver (delta-spark's way for big
 * tables): the checkpoint parts (Parquet, only their `add` column) and the commit files are read by tasks, each
 * action keyed as the driver's replay keys it ([[Snapshot.replayKey]]: path relative to the table, deletion vector
 * id) and ordered by (version, position in its file); a shuffle on the key keeps each key's last action among the
 * commits (PROTOCOL.md, "Action Reconciliation": a remove hides the add), and the checkpoint's adds stand unless a
 * commit after it touched their key, leaving the live adds. Pruning runs in the job too (partition filters on the
 * typed partition values, [[StatsSkipping]] on statistics), so only the selected files reach the driver; totals are
 * Spark aggregates. The reconciled adds are kept persisted between queries ([[StateCache]]): a later query of the
 * same version selects from them without reconciling again, and a newer version applies only its new commits.
 */
final class DistributedFileState(spark: SparkSession, val head: SnapshotHead, hadoopConf: Configuration,
                                 zone: ZoneId) {
  import DistributedFileState._

  private val table = TableSchema.of(head.metadata)
  private val dataSchema = StructType(table.schema.fields.filterNot(f =>
    table.partitionSchema.fieldNames.exists(_.equalsIgnoreCase(f.name))))

  /**
   * The checkpoint's adds as [[StateSchema]] rows, read by one task per part with only the `add` column decoded: a
   * checkpoint holds the reconciled state (PROTOCOL.md, "Checkpoints": one action per key), so its removes are
   * tombstones that hide nothing in it, and nothing that comes after it.
   */
  private def checkpointAdds: DataFrame = checkpointRows("add", StateSchema) {
    case (root, f: AddFile) => Some(stateRow(root, f))
    case _ => None
  }

  /**
   * One task per checkpoint part, decoding only its `column` (the log core's decoder, read failures thrown as the
   * driver's replay throws them); `row` makes each action a row of `schema` (None: dropped), given the table's root.
   */
  private def checkpointRows(column: String, schema: StructType)(row: (Path, Action) => Option[Row]): DataFrame = {
    val sc = spark.sparkContext
    val conf = sc.broadcast(new SerializableConfiguration(hadoopConf))
    val root = head.tablePath.toString
    val parts = head.segment.checkpointFiles.map(_.toString)
    val rows = sc.parallelize(parts, math.max(1, parts.size)).mapPartitions(_.flatMap { p =>
      val rootPath = new Path(root)
      checked(new Path(p), Checkpoints.read(new Path(p), conf.value.value, Seq(column))).flatMap(a => row(rootPath, a))
    })
    spark.createDataFrame(rows, schema)
  }

  /**
   * The file actions of commits `versions` (key, version, position in its file, add?, JSON line), each commit file
   * parsed in a task by our own codec (the checks the driver's replay makes).
   */
  private def commitActions(versions: Seq[Long]): DataFrame = {
    val sc = spark.sparkContext
    val conf = sc.broadcast(new SerializableConfiguration(hadoopConf))
    val root = head.tablePath.toString
    val rows = sc.parallelize(versions, math.max(1, math.min(versions.size, sc.defaultParallelism * 4)))
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

  /** Commits `versions` are small enough to send their keys to every task of the base (no shuffle of the base). */
  private def commitsAreSmall(versions: Set[Long]): Boolean = {
    val fs = head.tablePath.getFileSystem(hadoopConf)
    head.segment.commitFiles.iterator.filter(p => FileNames.classify(p.getName).exists {
      case FileNames.DeltaFile(v) => versions(v)
      case _ => false
    }).map(fs.getFileStatus(_).getLen).sum <= BroadcastCommitBytes
  }

  /**
   * The live adds after `commits` are applied to `base` (a reconciled state: the checkpoint's adds, or a cached
   * state of an earlier version), as [[StateSchema]] rows (PROTOCOL.md, "Action Reconciliation"): among the commits,
   * each key's last action (by version, then position), when it is an add, reconciled by a shuffle on the key; and
   * the base's adds whose key no commit touches (an anti-join, broadcast when the commits are small).
   */
  private def reconciled(base: Option[DataFrame], commits: Seq[Long]): DataFrame =
    if (commits.isEmpty) base.get
    else {
      val root = head.tablePath.toString
      val last = lastOf(commits)
      val fromCommits = spark.createDataFrame(last.where(col("last.isAdd")).select(col("last.action")).rdd
        .mapPartitions { rs =>
          val rootPath = new Path(root)
          rs.map(r => stateRow(rootPath, ActionCodec.parse(r.getString(0)).asInstanceOf[AddFile]))
        }, StateSchema)
      base.fold(fromCommits) { b =>
        val touched = last.select(col("key"))
        b.join(if (commitsAreSmall(commits.toSet)) broadcast(touched) else touched, Seq("key"), "left_anti")
          .union(fromCommits)
      }
    }

  /**
   * This version's live adds ([[StateSchema]]), reconciled once and kept persisted ([[StateCache]], at the storage
   * level of [[ReadConf.stateStorageLevel]]): from the cached state of an earlier version of the table when only
   * commits of this log segment separate them, else from the checkpoint and commits.
   */
  private lazy val state: DataFrame = ReadConf.stateStorageLevel(spark) match {
    case None => fromCheckpoint // `NONE`: nothing kept; each query reconciles
    case Some(level) =>
      val log = TableLog.forPath(head.tablePath, hadoopConf)
      // The stamp is of the segment's last commit: the head's version (a head is read from one segment).
      val stamp = head.segment.commitStamp.filter(_ => head.segment.version == head.version)
      StateCache.stateOf(spark.sparkContext, head.tablePath.toString, head.metadata.id, head.version, stamp,
          log.commitStamp) {
        (previous, persist) =>
          val from = previous.filter(p => p.depth < StateCache.MaxDepth &&
            p.version >= head.segment.checkpointVersion.getOrElse(-1L) && commitVersions.contains(p.version + 1))
          val df = from.fold(fromCheckpoint)(p => reconciled(Some(p.state), commitVersions.filter(_ > p.version)))
          if (persist) describing(s"$Reconciling ${head.tablePath} version ${head.version}") {
            try df.persist(level).count() catch { case e: Throwable => df.unpersist(); throw e }
          }
          StateCache.Entry(spark.sparkContext, head.metadata.id, head.version, stamp, df,
            from.fold(0)(_.depth + 1))
      }
  }

  /** This version's live adds reconciled from its checkpoint and commits (nothing cached used). */
  private def fromCheckpoint: DataFrame =
    reconciled(head.segment.checkpointVersion.map(_ => checkpointAdds), commitVersions)

  /** Each key's last file action in commits `versions` (key; last: version, position, isAdd, action). */
  private def lastOf(versions: Seq[Long]): DataFrame = commitActions(versions).groupBy(col("key"))
    .agg(max(struct(col("version"), col("position"), col("isAdd"), col("action"))).as("last"))

  /**
   * Every file action a checkpoint of this version holds, as JSON lines: the live adds (the reconciled state reads
   * select from) and the tombstones deleted after `tombstoneCutoff` (as the driver's checkpoint keeps them): the
   * commits' keys whose last action is a remove, and the checkpoint's removes no commit after it touched.
   */
  def checkpointFileActions(tombstoneCutoff: Long): DataFrame = {
    import spark.implicits._
    val adds = state.select(col("action"), col("stats")).as[(String, String)].map { case (a, s) =>
      ActionCodec.serialize(ActionCodec.parse(a).asInstanceOf[AddFile].copy(stats = Option(s)))
    }.toDF("action")
    tombstones(tombstoneCutoff).map(_.select(col("action"))).fold(adds)(adds.union)
  }

  /**
   * The version's tombstones deleted after `cutoff` (key, JSON line): the commits' keys whose last action is a
   * remove, and the checkpoint's removes no commit after it touched. None when there can be none.
   */
  private def tombstones(cutoff: Long): Option[DataFrame] = {
    import spark.implicits._
    val fromCheckpoint = head.segment.checkpointVersion.map(_ => checkpointRemoves(cutoff))
    if (commitVersions.isEmpty) fromCheckpoint else {
      val last = lastOf(commitVersions)
      val fromCommits = last.where(!col("last.isAdd")).select(col("key"), col("last.action").as("action"))
        .as[(String, String)]
        .filter(r => ActionCodec.parse(r._2).asInstanceOf[RemoveFile].deletionTimestamp.forall(_ > cutoff))
        .toDF("key", "action")
      Some(fromCheckpoint.fold(fromCommits) { cp =>
        val touched = last.select(col("key"))
        cp.join(if (commitsAreSmall(commitVersions.toSet)) broadcast(touched) else touched, Seq("key"), "left_anti")
          .select(col("key"), col("action")).union(fromCommits)
      })
    }
  }

  /**
   * The files the live adds read (key, file): each add's data file and its deletion vector's file, absolute: what
   * time travel checks against VACUUM ([[DistributedVacuumCheck]]).
   */
  private[state] def fileRefs: DataFrame = {
    import spark.implicits._
    val root = head.tablePath.toString
    state.select(col("key"), col("action")).as[(String, String)].mapPartitions { rs =>
      val rootPath = new Path(root)
      rs.flatMap { case (k, a) =>
        val f = ActionCodec.parse(a).asInstanceOf[AddFile]
        (Snapshot.absolutePath(rootPath, f.path).toString +: f.deletionVector.flatMap(d =>
          scala.util.Try(d.file(rootPath)).toOption.flatten).map(_.toString).toSeq).map(k -> _)
      }
    }.toDF("key", "file")
  }

  /** Every tombstone of the version (key, its deletion timestamp or null): when each removed file left the table. */
  private[state] def removedAt: Option[DataFrame] = {
    import spark.implicits._
    tombstones(Long.MinValue).map(_.as[(String, String)].map { case (k, a) =>
      (k, ActionCodec.parse(a).asInstanceOf[RemoveFile].deletionTimestamp)
    }.toDF("key", "removedAt"))
  }

  /** Runs `body`'s jobs as this state's jobs do (described; a Strata error raised in a task thrown as itself). */
  private[state] def run[T](what: String)(body: => T): T = describing(s"Strata: $what ${head.tablePath}")(body)

  /**
   * Whether every live file's partition values convert exactly to typed partition columns
   * ([[CheckpointStructs.partitionValuesConvert]]: a checkpoint's `partitionValues_parsed` needs it of all of them),
   * decided by the tasks over the state, each partition-value map once per task.
   */
  def partitionValuesConvert(): Boolean = head.metadata.partitionColumns.nonEmpty && {
    val metadata = ActionCodec.serialize(head.metadata)
    val rows = state
    describing(s"Strata: partition values of ${head.tablePath} version ${head.version}") {
      rows.select(col("partitionValues")).queryExecution.toRdd.mapPartitions { it =>
        val m = ActionCodec.parse(metadata).asInstanceOf[Metadata]
        val seen = new java.util.HashSet[String]()
        val distinct = it.map(_.getMap(0)).filter(pv => seen.add(partitionKey(pv))).map(partitionValues)
        Iterator(CheckpointStructs.partitionValuesConvert(m, distinct))
      }.collect().forall(identity)
    }
  }

  /** The checkpoint's removes deleted after `cutoff` (key, JSON line), one task per part, only `remove` decoded. */
  private def checkpointRemoves(cutoff: Long): DataFrame = checkpointRows("remove", RemoveSchema) {
    case (root, r: RemoveFile) if r.deletionTimestamp.forall(_ > cutoff) =>
      Some(Row(Snapshot.replayKey(root, r.path, r.dvId), ActionCodec.serialize(r)))
    case _ => None
  }

  private def selector(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): FileSelector =
    FileSelector(PartitionPredicate(table.partitionSchema, partitionFilters), dataSchema, dataFilters,
      table.partitionSchema, zone)

  /**
   * The live files that `partitionFilters` (over partition columns) and `dataFilters` (over data columns, skipped by
   * statistics) may match, collected to the driver: the same files the driver's `LogFileIndex` (package read)
   * selects for the same filters. Selected in tasks over the cached state: only the kept files' actions are parsed.
   */
  def select(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[AddFile] = {
    val keep = selector(partitionFilters, dataFilters)
    val rows = state
    describing(s"Strata: files of ${head.tablePath} version ${head.version}") {
      // Catalyst rows: only a kept file's action becomes a String, and each distinct partition is decided once.
      rows.select(col("action"), col("stats"), col("partitionValues")).queryExecution.toRdd.mapPartitions { it =>
        val partitions = new java.util.HashMap[String, Option[InternalRow]]()
        def stats(r: InternalRow) = if (r.isNullAt(1)) null else r.getUTF8String(1).toString
        it.filter { r =>
          val m = r.getMap(2)
          val key = partitionKey(m)
          var values = partitions.get(key)
          if (values == null) { values = keep.partitionKept(partitionValues(m)); partitions.put(key, values) }
          values.exists(v => keep.statsKept(Option(stats(r)), v))
        }.map(r => (r.getUTF8String(0).toString, stats(r)))
      }.collect().toSeq
    }.map { case (a, s) => ActionCodec.parse(a).asInstanceOf[AddFile].copy(stats = Option(s)) }
  }

  /** The live files' paths as the table names them (absolute), for `inputFiles()`. */
  def paths: Seq[String] = {
    val root = head.tablePath.toString
    val rows = state
    describing(s"Strata: file paths of ${head.tablePath} version ${head.version}") {
      rows.select(col("action")).rdd.mapPartitions { rs =>
        val rootPath = new Path(root)
        rs.map(r =>
          Snapshot.absolutePath(rootPath, ActionCodec.parse(r.getString(0)).asInstanceOf[AddFile].path).toString)
      }.collect().toSeq
    }
  }

  /** Files, bytes, and logical rows (None unless every file states `numRecords`), as one Spark aggregate. */
  def totals: Totals = {
    val files = state
    describing(s"Strata: totals of ${head.tablePath} version ${head.version}") {
      val r: Row = files.agg(count(col("size")), sum(col("size")), sum(when(col("rows") < 0, 1L).otherwise(0L)),
        sum(when(col("rows") >= 0, col("rows")).otherwise(0L))).head()
      def long(i: Int) = if (r.isNullAt(i)) 0L else r.getLong(i)
      Totals(long(0), long(1), if (long(2) == 0) Some(long(3)) else None)
    }
  }

  /**
   * Runs `body`'s jobs under the description `what`. A Strata error raised in a task (a corrupt checkpoint or commit)
   * is thrown as itself, as the driver's replay throws it, not inside Spark's job failure.
   */
  private def describing[T](what: String)(body: => T): T = {
    val sc = spark.sparkContext
    val before = sc.getLocalProperty("spark.job.description")
    sc.setJobDescription(what)
    try body catch {
      case e: SparkException => throw Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null)
        .collectFirst { case s: StrataException => s }.getOrElse(e)
    } finally sc.setJobDescription(before)
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

    /** The file's typed partition values when its partition is kept, else None. */
    def partitionKept(partitionValues: Map[String, Option[String]]): Option[InternalRow] = {
      val values = CatalystValues.partitionRow(partitionSchema, partitionValues, zone)
      if (everything || partitions.keeps(values)) Some(values) else None
    }

    /** Whether statistics skipping keeps a file of a kept partition (partition values also bound mixed filters). */
    def statsKept(stats: Option[String], values: InternalRow): Boolean = everything || skipping.mayMatch(stats, values)
  }

  /** The actions of checkpoint file `file`, its read failures thrown as the driver's replay throws them. */
  private def checked(file: Path, actions: => Iterator[Action]): Iterator[Action] = new Iterator[Action] {
    private def guard[T](body: => T): T = try body catch { case NonFatal(e) => throw Checkpoints.readFailure(file, e) }
    private lazy val inner = guard(actions)
    def hasNext: Boolean = guard(inner.hasNext)
    def next(): Action = guard(inner.next())
  }

  /** A version's live files, bytes, and rows when every file's statistics count them. */
  final case class Totals(files: Long, bytes: Long, rows: Option[Long])

  /** Commits of at most this many bytes have their keys broadcast to the checkpoint's tasks. */
  private val BroadcastCommitBytes = 64L << 20

  /** Description of the job that reconciles (and caches) a version's state: tests count these jobs. */
  val Reconciling = "Strata: reconciling the state of"

  /**
   * A live add as the state keeps it: replay key, the action's JSON without its statistics, the statistics, partition
   * values (what selection reads, without parsing the action), size and live rows (-1 unknown).
   */
  private val StateSchema = StructType(Seq(StructField("key", StringType, nullable = false),
    StructField("action", StringType, nullable = false), StructField("stats", StringType, nullable = true),
    StructField("partitionValues", MapType(StringType, StringType, valueContainsNull = true), nullable = false),
    StructField("size", LongType, nullable = false), StructField("rows", LongType, nullable = false)))

  private def stateRow(root: Path, f: AddFile): Row = Row(Snapshot.replayKey(root, f.path, f.dvId),
    ActionCodec.serialize(f.copy(stats = None)), f.stats.orNull, f.partitionValues.map { case (k, v) => k -> v.orNull },
    f.size, f.logicalRows.getOrElse(-1L))

  private def partitionValues(m: MapData): Map[String, Option[String]] = {
    val (keys, values) = (m.keyArray(), m.valueArray())
    (0 until m.numElements()).map { i =>
      keys.getUTF8String(i).toString -> (if (values.isNullAt(i)) None else Some(values.getUTF8String(i).toString))
    }.toMap
  }

  /** A partition-value map as one string (a lookup key): each key and value, a null value apart from any string. */
  private def partitionKey(m: MapData): String = {
    val (keys, values) = (m.keyArray(), m.valueArray())
    val b = new java.lang.StringBuilder
    var i = 0
    while (i < m.numElements()) {
      b.append(keys.getUTF8String(i).toString).append('\u0000')
      if (values.isNullAt(i)) b.append('\u0001') else b.append('\u0002').append(values.getUTF8String(i).toString)
      b.append('\u0000')
      i += 1
    }
    b.toString
  }

  private val RemoveSchema = StructType(Seq(StructField("key", StringType, nullable = false),
    StructField("action", StringType, nullable = false)))

  private val ActionSchema = StructType(Seq(StructField("key", StringType, nullable = false),
    StructField("version", LongType, nullable = false), StructField("position", LongType, nullable = false),
    StructField("isAdd", BooleanType, nullable = false), StructField("action", StringType, nullable = false)))

  /** A file action as a row of [[ActionSchema]]; None for any other action. */
  private def row(root: Path, a: Action, version: Long, position: Long, line: => String): Option[Row] =
    a match {
      case f: AddFile => Some(Row(Snapshot.replayKey(root, f.path, f.dvId), version, position, true, line))
      case r: RemoveFile => Some(Row(Snapshot.replayKey(root, r.path, r.dvId), version, position, false, line))
      case _ => None
    }
}
