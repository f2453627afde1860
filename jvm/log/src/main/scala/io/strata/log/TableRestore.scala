package io.strata.log

import java.util.concurrent.{Callable, Executors, TimeUnit}

import org.apache.hadoop.fs.Path

import scala.jdk.CollectionConverters._

/**
 * RESTORE (not part of the protocol; delta-spark's semantics): a new version whose live files are exactly those of
 * an older version. Files are matched by path and deletion vector id, so a file whose vector changed since is
 * removed with its current vector and added again with its old one. The old metadata comes back when it differs;
 * the protocol never goes down.
 */
object TableRestore {
  /** What restoring `current` to `target` changes. */
  final case class Plan(current: Snapshot, target: Snapshot, removed: Seq[AddFile], restored: Seq[AddFile],
                        metadata: Option[Metadata]) {
    /** Nothing would change: same files, same metadata (restoring the current version, or an identical one). */
    def isEmpty: Boolean = removed.isEmpty && restored.isEmpty && metadata.isEmpty
    def operation: TableOperation.Restore =
      TableOperation.Restore(current.files, removed, restored, metadata, target.protocol)
    /** delta-spark's RESTORE metrics. */
    def metrics: Map[String, Long] = Map(
      "numRemovedFiles" -> removed.size.toLong,
      "numRestoredFiles" -> restored.size.toLong,
      "removedFilesSize" -> removed.iterator.map(_.size).sum,
      "restoredFilesSize" -> restored.iterator.map(_.size).sum,
      "numOfFilesAfterRestore" -> target.files.size.toLong,
      "tableSizeAfterRestore" -> target.sizeInBytes)
  }

  def plan(current: Snapshot, target: Snapshot): Plan = {
    def key(s: Snapshot, f: AddFile) = (s.absolutePath(f.path).toString, f.dvId)
    val past = target.files.iterator.map(f => key(target, f)).toSet
    val present = current.files.iterator.map(f => key(current, f)).toSet
    Plan(current, target,
      removed = current.files.filterNot(f => past(key(current, f))),
      restored = target.files.filterNot(f => present(key(target, f))),
      metadata = Some(target.metadata).filter(_ != current.metadata))
  }

  /**
   * The files the restored entries need that are gone (data files, and deletion vector files): each is checked on
   * the file system, up to `parallelism` at a time. Sorted; empty when all are there.
   */
  def missingFiles(log: TableLog, restored: Seq[AddFile], parallelism: Int = 16): Seq[Path] = {
    val paths = restored.flatMap { f =>
      Snapshot.absolutePath(log.tablePath, f.path) +: f.deletionVector.flatMap(_.file(log.tablePath)).toSeq
    }.distinct
    if (paths.isEmpty) return Nil
    val fs = log.store.fs
    val pool = Executors.newFixedThreadPool(math.max(1, math.min(parallelism, paths.size)), (r: Runnable) => {
      val t = new Thread(r, "strata-restore-check"); t.setDaemon(true); t
    })
    try {
      val checks = pool.invokeAll(paths.map(p => (() => if (fs.exists(p)) None else Some(p)): Callable[Option[Path]]).asJava)
      checks.asScala.flatMap(_.get()).toSeq.sortBy(_.toString)
    } finally {
      pool.shutdownNow()
      pool.awaitTermination(10, TimeUnit.SECONDS)
    }
  }
}
