package io.strata.optimize

import io.strata.config.{ReadConf, WriteConf, WriteSettings}
import io.strata.log.{AddFile, CommitResult, CommittedVersion, PostCommitHook, RemoveFile, TableLog}
import io.strata.table.{PartitionValues, TableSchema}
import org.apache.spark.sql.SparkSession

import scala.util.control.NonFatal

/**
 * Auto-compaction (`delta.autoOptimize.autoCompact` = `true`, `auto` or `legacy`): after a Strata commit, each
 * partition it touched that holds at least `minNumFiles` files smaller than `minFileSize` is compacted
 * ([[Optimizer]], bin-packing of the files below `minFileSize` into files of up to `maxFileSize`) in one separate
 * `dataChange=false` commit, marked `auto: true` in its parameters. The user's write has committed by then: a
 * failure here (a conflict, a job error, a bad setting) is logged and never fails it.
 *
 * Thresholds, each a session conf or else a table property (`strata.autoCompact.*`), else delta-spark's default:
 * `spark.strata.autoCompact.minNumFiles` (50), `.minFileSize` (64 MiB), `.maxFileSize` (128 MiB), resolved by
 * [[WriteConf]] ([[WriteSettings]]).
 */
object AutoCompaction {
  private val logger = org.slf4j.LoggerFactory.getLogger(getClass)

  /**
   * Auto-compaction as a write's post-commit hook, which the entry points (data source, catalog tables, DML) hand to
   * their writes: it runs when the table's properties as committed enable it, on the partitions the commit added
   * files to or removed files from.
   */
  object Hook extends PostCommitHook {
    val name = "auto-compaction"
    def run(commit: CommittedVersion): Unit = if (!enabled(commit.metadata.configuration)) ()
    else if (!commit.readFileState && aboveThreshold(commit)) {
      // Compacting needs the file state on the driver, which a table above the threshold never gets.
      logger.info(s"Auto-compaction skipped after version ${commit.version} of ${commit.log.tablePath}: the table " +
        "is above the distributed-state threshold.")
    } else {
      // A blind append over the head of a table below the threshold: the table asks for compaction, which builds
      // the snapshot the append went without (as the append did before it committed over heads).
      val touched = commit.actions.collect {
        case a: AddFile => a.partitionValues
        case r: RemoveFile => r.partitionValues.getOrElse(Map.empty)
      }.distinct
      afterCommit(commit.log, commit.result, touched)
    }
  }

  /** Whether a commit made over its head is of a table above the distributed-state threshold (the head's size). */
  private def aboveThreshold(commit: CommittedVersion): Boolean = {
    val size = commit.log.sizeAfter(commit.version)
    SparkSession.getActiveSession.forall(ReadConf.distributedState(_, size))
  }

  /** Whether the active session's conf (delta-spark's `autoCompact.enabled`), else the table's property, enables it. */
  def enabled(tableProperties: Map[String, String]): Boolean = WriteConf.internal(
    k => SparkSession.getActiveSession.flatMap(_.conf.getOption(k)), tableProperties)(WriteSettings.AutoCompact)

  /**
   * Runs after `result` committed files in `touched` partitions (their log values) of the table at `log`; returns
   * what the compaction did, if it ran and succeeded. Never throws.
   */
  def afterCommit(log: TableLog, result: CommitResult, touched: Seq[Map[String, Option[String]]]): Option[OptimizeResult] =
    try {
      val spark = SparkSession.getActiveSession
      if (result.alreadyCommitted || touched.isEmpty || spark.isEmpty) None else {
        val snapshot = log.snapshot()
        val conf = WriteConf.internal(spark.get.conf.getOption, snapshot.metadata.configuration)
        if (!conf(WriteSettings.AutoCompact)) None else {
          val minFiles = conf(WriteSettings.AutoCompactMinNumFiles)
          val minSize = conf(WriteSettings.AutoCompactMinFileSize)
          val maxSize = conf(WriteSettings.AutoCompactMaxFileSize)
          val schema = TableSchema.of(snapshot.metadata).partitionSchema
          val partitions = PartitionValues.keySet(touched, schema, None) // as OPTIMIZE groups them
          // Per touched partition, its small files; the partitions with enough of them are compacted. Only the
          // touched partitions' files are built (a commit to a table of a million files builds a few).
          val crowded = snapshot.filesByPartition.filter { case (values, _) => partitions.contains(values) }
            .flatMap { case (_, files) => files.filter(_.size < minSize) }
            .groupBy(f => PartitionValues.typedKey(f.partitionValues, schema, None)).values
            .filter(_.size >= minFiles).map(_.head.partitionValues).toSeq
          if (crowded.isEmpty) None else {
            val r = Optimizer.run(spark.get, log, OptimizeRequest(targetFileSize = Some(maxSize), auto = true,
              partitions = Some(crowded), smallFileSize = Some(minSize), maxCommits = Some(1)))
            logger.info(s"Auto-compaction of ${log.tablePath} after version ${result.version}: ${r.filesRemoved} " +
              s"files into ${r.filesAdded} (versions ${r.versions.mkString(", ")}; ${r.groupsConflicted} groups lost " +
              "to concurrent changes).")
            Some(r)
          }
        }
      }
    } catch {
      case NonFatal(e) =>
        logger.warn(s"Auto-compaction of ${log.tablePath} after version ${result.version} failed; the write itself " +
          "committed.", e)
        None
    }
}
