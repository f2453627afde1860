package io.strata.optimize

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
 * `spark.strata.autoCompact.minNumFiles` (50), `.minFileSize` (64 MiB), `.maxFileSize` (128 MiB).
 */
object AutoCompaction {
  val Property = "delta.autoOptimize.autoCompact"
  private val logger = org.slf4j.LoggerFactory.getLogger(getClass)

  final case class Threshold(name: String, default: Long) {
    def sessionKey: String = s"spark.strata.autoCompact.$name"
    def propertyKey: String = s"strata.autoCompact.$name"
    def resolve(spark: SparkSession, properties: Map[String, String]): Long = {
      val (where, value) = spark.conf.getOption(sessionKey).map(s"session conf $sessionKey" -> _)
        .orElse(properties.get(propertyKey).map(s"table property $propertyKey" -> _))
        .getOrElse(return default)
      value.trim.toLongOption.filter(_ > 0).getOrElse(throw new IllegalArgumentException(
        s"$where has invalid value '$value': it must be a whole number > 0."))
    }
  }
  val MinNumFiles: Threshold = Threshold("minNumFiles", 50)
  val MinFileSize: Threshold = Threshold("minFileSize", 64L * 1024 * 1024)
  val MaxFileSize: Threshold = Threshold("maxFileSize", 128L * 1024 * 1024)

  /**
   * Auto-compaction as a write's post-commit hook, which the entry points (data source, catalog tables, DML) hand to
   * their writes: it runs when the table's properties as committed enable it, on the partitions the commit added
   * files to or removed files from.
   */
  object Hook extends PostCommitHook {
    val name = "auto-compaction"
    def run(commit: CommittedVersion): Unit = if (enabled(commit.metadata.configuration)) {
      val touched = commit.actions.collect {
        case a: AddFile => a.partitionValues
        case r: RemoveFile => r.partitionValues.getOrElse(Map.empty)
      }.distinct
      afterCommit(commit.log, commit.result, touched)
    }
  }

  def enabled(tableProperties: Map[String, String]): Boolean =
    tableProperties.get(Property).map(_.trim.toLowerCase).exists(v => v == "true" || v == "auto" || v == "legacy")

  /**
   * Runs after `result` committed files in `touched` partitions (their log values) of the table at `log`; returns
   * what the compaction did, if it ran and succeeded. Never throws.
   */
  def afterCommit(log: TableLog, result: CommitResult, touched: Seq[Map[String, Option[String]]]): Option[OptimizeResult] =
    try {
      val spark = SparkSession.getActiveSession
      if (result.alreadyCommitted || touched.isEmpty || spark.isEmpty) None else {
        val snapshot = log.snapshot()
        val properties = snapshot.metadata.configuration
        if (!enabled(properties)) None else {
          val minFiles = MinNumFiles.resolve(spark.get, properties)
          val minSize = MinFileSize.resolve(spark.get, properties)
          val maxSize = MaxFileSize.resolve(spark.get, properties)
          val schema = TableSchema.of(snapshot.metadata).partitionSchema
          val partitions = PartitionValues.keySet(touched, schema, None) // as OPTIMIZE groups them
          // Per touched partition, its small files; the partitions with enough of them are compacted.
          val crowded = snapshot.files.filter(f => f.size < minSize && partitions.contains(f.partitionValues))
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
