package io.strata.state

import io.strata.config.ReadConf
import io.strata.log.{ActionCodec, AddFile, CheckpointHook, RemoveFile, CheckpointWriter, CommittedVersion, FileNames,
  LogCleanupHook, Metadata, PostCommitHook, Protocol, SnapshotHead, StateSize, TableLog, WrittenCheckpoint}
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.strata.SparkInternals
import org.apache.spark.util.SerializableConfiguration

import scala.util.control.NonFatal

/**
 * A classic checkpoint (PROTOCOL.md, "Checkpoints") of a version whose file state the driver never holds: the file
 * actions are reconciled by [[DistributedFileState]] (the same jobs reads use, no second reconciliation), spread over
 * `n` partitions, and each Spark task writes one part `v.checkpoint.k.n.parquet` with the log core's writer
 * ([[io.strata.log.LogStore.writeCheckpoint]]: the Parquet schema of the driver's checkpoints, each part whole
 * before it appears). The non-file actions come from the version's [[SnapshotHead]] and go first into part 1.
 * `_last_checkpoint` is written last, once every part is there; a failure deletes the parts it created.
 */
object DistributedCheckpoint {
  private val logger = org.slf4j.LoggerFactory.getLogger(getClass)

  /**
   * After a blind append without the file state (the write package's `WriteBase`): when the version is due a
   * checkpoint, it is written where [[onDriver]] says. On the driver, in the committing thread
   * ([[CheckpointHook.writeOverHead]]). Else by Spark jobs on a background thread of the driver, off the commit's
   * critical path (safe as the driver's background checkpoint is: a checkpoint is only a shortcut, used once
   * complete). Never fails the commit: a failure is logged, and a later due version writes one. A checkpoint written
   * is followed by the expired-log cleanup the driver's checkpoint is followed by ([[LogCleanupHook]]).
   */
  object Hook extends PostCommitHook {
    val name = "checkpoint without the file state"

    def run(commit: CommittedVersion): Unit = if (CheckpointHook.due(commit)) {
      val (log, version) = (commit.log, commit.version)
      val size = log.sizeAfter(version)
      val spark = SparkSession.getActiveSession
      if (onDriver(spark, log, size)) CheckpointHook.writeOverHead(log, version)
      else spark match {
        case None => logger.info(s"No checkpoint of version $version of ${log.tablePath}: no active Spark session " +
          "to run its jobs.")
        case Some(spark) => background.execute { () =>
          val written = try { val head = log.headAt(version); write(spark, log, head).map(head -> _) } catch {
            case NonFatal(e) => logger.warn(s"Distributed checkpoint of version $version of ${log.tablePath} " +
              "failed; the commit itself has landed, and a later due version writes one.", e)
              None
          }
          written.foreach { case (head, w) =>
            logger.info(s"Checkpoint of version $version of ${log.tablePath}: ${w.files.size} parts, ${w.actions} " +
              "actions, written by Spark jobs.")
            // As after the driver's checkpoint: expired log files go, on the same rules (LogCleanupHook).
            try LogCleanupHook.after(log, head) catch {
              case NonFatal(e) => logger.warn(s"Log cleanup after the checkpoint of version $version of " +
                s"${log.tablePath} failed; the commit and the checkpoint have landed.", e)
            }
          }
        }
      }
    }
  }

  /**
   * Whether the checkpoint of a version committed over its head is written on the driver (else by Spark jobs): the
   * one rule, by the table's size as the log states it without reading a file action (the head's upper bound of the
   * live files: the checkpoint's `numOfAddFiles` plus the adds of the commits since). Above the distributed-state
   * threshold ([[ReadConf.distributedState]]) the driver never holds the state. Below it, a table of fewer than
   * `strata.checkpoint.backgroundMinFiles` files (Hadoop conf, default 100,000: the size from which the driver's own
   * checkpoints go to a background thread, [[CheckpointHook]]) is checkpointed on the driver: building its state
   * takes milliseconds, far less than scheduling Spark jobs, and it stays cached for later reads. A bigger table, or
   * one whose count the log does not state, by jobs: on the driver the checkpoint would build the whole state the
   * append went without (about 6 s and 300 MB of heap for 1,000,000 files) and keep it.
   */
  def onDriver(spark: Option[SparkSession], log: TableLog, size: StateSize): Boolean =
    !spark.exists(ReadConf.distributedState(_, size)) &&
      size.files.exists(_ < log.conf.getLong(CheckpointHook.BackgroundMinFilesKey, 100000L))

  private val background = java.util.concurrent.Executors.newSingleThreadExecutor { (r: Runnable) =>
    val t = new Thread(r, "strata-distributed-checkpoint"); t.setDaemon(true); t
  }

  /** Waits until every checkpoint the hook submitted so far has been written (or failed). */
  def awaitBackground(): Unit = background.submit(new Runnable { def run(): Unit = () }).get()

  /**
   * Writes the checkpoint of `head`'s version with Spark jobs, in the format the driver's [[CheckpointWriter]] uses
   * (with `delta.checkpoint.writeStatsAsStruct`, `stats_parsed` and, when every partition value converts exactly,
   * `partitionValues_parsed`); None (logged) for a table that writes V2 checkpoints (`v2Checkpoint` feature or
   * policy), whose checkpoint must be one file.
   */
  def write(spark: SparkSession, log: TableLog, head: SnapshotHead): Option[WrittenCheckpoint] = {
    val cutoff = System.currentTimeMillis() - TableLog.tombstoneRetentionMillis(head.metadata.configuration)
    val state = new DistributedFileState(spark, head, log.conf, SparkInternals.sessionZone(spark))
    // The typed partition values (writeStatsAsStruct) need every file's values to convert: a job decides, once.
    lazy val typedPartitions = state.partitionValuesConvert()
    if (CheckpointWriter.formatWithoutFiles(head.protocol, head.metadata, typedPartitions).isEmpty) {
      // Not reached by Strata's own appends: TableLog.latest keeps tables with the v2Checkpoint feature on the
      // driver path, whose checkpoints are V2 ones.
      logger.info(s"No distributed checkpoint of version ${head.version} of ${log.tablePath}: the table writes V2 " +
        "checkpoints, which the driver writes.")
      return None
    }
    val typed = CheckpointWriter.writesStructs(head.metadata) && typedPartitions
    val header = CheckpointWriter.headerActions(head).map(ActionCodec.serialize)
    // The part count is fixed before the parts are written (their names carry it): from the log's upper bound of
    // the live files (the tombstones are not known before the job; a part then holds somewhat more).
    val estimate = header.size + head.size.files.getOrElse(0L)
    val n = math.max(1L, (estimate + CheckpointWriter.partSize(log.conf) - 1) / CheckpointWriter.partSize(log.conf))
      .toInt
    val paths = if (n == 1) Seq(FileNames.checkpointFile(log.logPath, head.version))
      else (1 to n).map(k => FileNames.checkpointPart(log.logPath, head.version, k, n))
    val existed = paths.filter(log.store.fs.exists).toSet
    val conf = spark.sparkContext.broadcast(new SerializableConfiguration(log.conf))
    val root = log.tablePath.toString
    val names = paths.map(_.toString)
    val previous = spark.sparkContext.getLocalProperty("spark.job.description")
    spark.sparkContext.setJobDescription(s"Strata: checkpoint of ${log.tablePath} version ${head.version}")
    val written = try {
      state.checkpointFileActions(cutoff).rdd.map(_.getString(0)).repartition(n).mapPartitionsWithIndex { (k, lines) =>
        val store = TableLog.forPath(new Path(root), conf.value.value).store
        var adds = 0L
        var actions = 0L
        // A checkpoint holds state, not changes: every file action is dataChange = false (as the driver's are).
        val all = (if (k == 0) header.iterator ++ lines else lines).map { l =>
          actions += 1
          ActionCodec.parse(l) match {
            case f: AddFile => adds += 1; f.copy(dataChange = false)
            case r: RemoveFile => r.copy(dataChange = false)
            case a => a
          }
        }
        // Every task makes the same format (stats_parsed, partitionValues_parsed) from the version's metadata.
        val headerActions = header.map(ActionCodec.parse)
        val format = CheckpointWriter.formatWithoutFiles(headerActions.collectFirst { case p: Protocol => p }.get,
          headerActions.collectFirst { case m: Metadata => m }.get, typed).get
        val bytes = store.writeCheckpoint(new Path(names(k)), all, format)
        Iterator((adds, actions, bytes))
      }.collect()
    } catch {
      case e: Throwable =>
        paths.filterNot(existed).foreach { p => try log.store.fs.delete(p, false) catch { case NonFatal(_) => } }
        throw e
    } finally spark.sparkContext.setJobDescription(previous)
    val (adds, total, bytes) = (written.map(_._1).sum, written.map(_._2).sum, written.map(_._3).sum)
    CheckpointWriter.recordWritten(log, head.version, total, n, bytes, adds)
    Some(WrittenCheckpoint(head.version, paths, total, bytes))
  }
}
