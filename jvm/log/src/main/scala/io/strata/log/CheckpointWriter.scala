package io.strata.log

import java.util.concurrent.{Callable, Executors, Future}

import com.fasterxml.jackson.databind.node.ObjectNode
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import scala.util.control.NonFatal

/** What a checkpoint write produced: its files (parts in order), actions and bytes. */
final case class WrittenCheckpoint(version: Long, files: Seq[Path], actions: Long, bytes: Long)

/**
 * Writes a classic checkpoint of a snapshot (PROTOCOL.md, "Checkpoints"): one file, or `n.checkpoint.o.p.parquet`
 * parts of at most `partSize` actions each when it holds more (delta-spark's SQL conf
 * `spark.databricks.delta.checkpoint.partSize`, which Spark copies into every Hadoop configuration it makes, or
 * Strata's Hadoop setting `strata.checkpoint.partSize`, which wins). Parts are written in parallel, each from its own
 * slice of the snapshot's files (nothing is copied into a list first), each whole before it appears; `_last_checkpoint`
 * is written only after every part is there, and a reader uses a multi-part checkpoint only when all its parts are.
 * A failed part deletes the parts this attempt created.
 */
object CheckpointWriter {
  val PartSizeKey = "strata.checkpoint.partSize"
  val DeltaPartSizeKey = "spark.databricks.delta.checkpoint.partSize"
  /** delta-spark's default: a table below five million actions gets a single file. */
  val DefaultPartSize = 5000000L

  /** Actions per part from the Hadoop configuration (Strata's setting over delta-spark's), validated. */
  def partSize(conf: Configuration): Long = Seq(PartSizeKey, DeltaPartSizeKey).flatMap(k => Option(conf.get(k)).map(k -> _))
    .headOption.map { case (k, v) =>
      v.trim.toLongOption.filter(_ > 0).getOrElse(throw InvalidTableOperationException("STRATA_INVALID_CONF_VALUE",
        Map("setting" -> k, "value" -> v, "allowed" -> "a positive whole number (actions per checkpoint part)")))
    }.getOrElse(DefaultPartSize)

  /** How rows are written for a table with `s`'s metadata (`delta.checkpoint.writeStatsAsStruct` / `...AsJson`). */
  def format(s: Snapshot): Checkpoints.Format = {
    val structs = if (writesStructs(s.metadata)) Some(CheckpointStructs.of(s.metadata, s.filesByPartition.map(_._1)))
      else None
    Checkpoints.Format(structs, statsAsJson = flag(s.metadata, CheckpointStructs.WriteStatsAsJsonKey, default = true))
  }

  def write(log: TableLog, snapshot: Snapshot, partSize: Long, tombstoneCutoff: Long): WrittenCheckpoint = {
    // delta.checkpointPolicy = v2: one UUID-named file in the V2 spec (checkpointMetadata first, no sidecars).
    val v2 = V2Checkpoints.writes(snapshot)
    val header: IndexedSeq[Action] = ((if (v2) Iterator(V2Checkpoints.metadataAction(snapshot.version)) else Iterator.empty) ++
      Iterator(snapshot.protocol, snapshot.metadata) ++
      snapshot.transactions.valuesIterator ++ snapshot.domains.valuesIterator.filterNot(_.removed)).toIndexedSeq
    val tombstones = snapshot.tombstones
    val kept = tombstones.indices.filter(i => tombstones(i).deletionTimestamp.forall(_ > tombstoneCutoff))
    val files = snapshot.files
    val total = header.size.toLong + kept.size + files.size
    val parts = if (v2) 1L else math.max(1L, (total + partSize - 1) / partSize)
    require(parts <= Int.MaxValue / 2, s"$parts checkpoint parts")
    val n = parts.toInt
    def action(i: Long): Action =
      if (i < header.size) header(i.toInt)
      else if (i < header.size + kept.size) tombstones(kept((i - header.size).toInt))
      else files((i - header.size - kept.size).toInt)
    val format = this.format(snapshot).copy(v2 = v2)
    val paths = if (v2) Seq(V2Checkpoints.uuidPath(log.logPath, snapshot.version))
      else if (n == 1) Seq(FileNames.checkpointFile(log.logPath, snapshot.version))
      else (1 to n).map(p => FileNames.checkpointPart(log.logPath, snapshot.version, p, n))
    val bounds = (0 to n).map(k => total * k / n)
    val tasks = paths.indices.map { k =>
      new Callable[Long] {
        def call(): Long = log.store.writeCheckpoint(paths(k),
          Iterator.range(0, (bounds(k + 1) - bounds(k)).toInt).map(j => action(bounds(k) + j)), format)
      }
    }
    val bytes = runAll(tasks, paths, log)
    val hint = lastCheckpointHint(snapshot.version, total, n, bytes, files.size.toLong)
    if (v2) hint.putObject("v2Checkpoint").put("path", paths.head.getName).put("sizeInBytes", bytes)
      .put("modificationTime", log.store.fs.getFileStatus(paths.head).getModificationTime)
    log.store.overwrite(FileNames.lastCheckpoint(log.logPath), Seq(ActionCodec.mapper.writeValueAsString(hint: ObjectNode)))
    WrittenCheckpoint(snapshot.version, paths, total, bytes)
  }

  private def lastCheckpointHint(version: Long, total: Long, parts: Int, bytes: Long, adds: Long): ObjectNode = {
    val hint = ActionCodec.mapper.createObjectNode().put("version", version).put("size", total)
    if (parts > 1) hint.put("parts", parts)
    hint.put("sizeInBytes", bytes).put("numOfAddFiles", adds)
  }

  // ---- checkpoints written elsewhere (the connector's distributed checkpoint: parts written by Spark tasks) --------

  /** The non-file actions a checkpoint of `head`'s version holds, in the order [[write]] puts them first. */
  def headerActions(head: SnapshotHead): Seq[Action] =
    Seq(head.protocol, head.metadata) ++ head.transactions.values ++ head.domains.values.filterNot(_.removed)

  /**
   * The row format of a classic checkpoint of a table with protocol `p` and metadata `m`, written without the file
   * state (each part by a task of its own); `typedPartitions`: whether every partition value of the version converts
   * exactly ([[CheckpointStructs.partitionValuesConvert]], asked of the file state where it is: only read when the
   * table writes `delta.checkpoint.writeStatsAsStruct`). None when the table must not use multi-part classic
   * checkpoints (the `v2Checkpoint` feature, `delta.checkpointPolicy = v2`).
   */
  def formatWithoutFiles(p: Protocol, m: Metadata, typedPartitions: => Boolean): Option[Checkpoints.Format] = {
    if (TableFeatures.V2Checkpoint.supportedBy(p) || TableFeatures.V2Checkpoint.isUsedBy(m)) None
    else {
      val structs = if (writesStructs(m)) Some(CheckpointStructs.forTable(m, typedPartitions)) else None
      Some(Checkpoints.Format(structs, statsAsJson = flag(m, CheckpointStructs.WriteStatsAsJsonKey, default = true)))
    }
  }

  /** Whether checkpoints of a table with metadata `m` carry `stats_parsed` (`delta.checkpoint.writeStatsAsStruct`). */
  def writesStructs(m: Metadata): Boolean = flag(m, CheckpointStructs.WriteStatsAsStructKey, default = false)

  private def flag(m: Metadata, key: String, default: Boolean): Boolean =
    m.configuration.get(key).map(_.trim.equalsIgnoreCase("true")).getOrElse(default)

  /**
   * Points `_last_checkpoint` at the classic checkpoint of `version` whose `parts` files (all written, whole) hold
   * `total` actions, `adds` of them live files, in `bytes`: the last step of a checkpoint, as in [[write]].
   */
  def recordWritten(log: TableLog, version: Long, total: Long, parts: Int, bytes: Long, adds: Long): Unit =
    log.store.overwrite(FileNames.lastCheckpoint(log.logPath),
      Seq(ActionCodec.mapper.writeValueAsString(lastCheckpointHint(version, total, parts, bytes, adds): ObjectNode)))

  /**
   * Runs the part writes (in parallel when there are several); on a failure deletes the parts this attempt created
   * (never one that was there before it: an earlier complete checkpoint of the version may be what readers rely on,
   * its commits already cleaned up), then throws.
   */
  private def runAll(tasks: Seq[Callable[Long]], paths: Seq[Path], log: TableLog): Long = {
    if (tasks.size == 1) return tasks.head.call()
    val existed = paths.filter(log.store.fs.exists).toSet
    val threads = math.min(tasks.size, math.max(1, Runtime.getRuntime.availableProcessors))
    val pool = Executors.newFixedThreadPool(threads, (r: Runnable) => {
      val t = new Thread(r, "strata-checkpoint-part"); t.setDaemon(true); t
    })
    try {
      val futures: Seq[Future[Long]] = tasks.map(t => pool.submit(t))
      val results = futures.map(f => scala.util.Try(f.get()))
      results.collectFirst { case scala.util.Failure(e) => e } match {
        case Some(e) =>
          paths.filterNot(existed).foreach { p => try log.store.fs.delete(p, false) catch { case NonFatal(_) => } }
          throw e match { case ee: java.util.concurrent.ExecutionException if ee.getCause != null => ee.getCause; case o => o }
        case None => results.map(_.get).sum
      }
    } finally pool.shutdownNow()
  }
}
