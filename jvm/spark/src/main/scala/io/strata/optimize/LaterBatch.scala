package io.strata.optimize

import io.strata.log._

/**
 * A clustered table's OPTIMIZE in several commits (`spark.strata.optimize.batchSize`): every commit restates the
 * clustering domain, so a later batch's transaction on the planned snapshot would conflict with the run's own
 * earlier commits. It commits on the latest snapshot instead, after the checks its conflict check would have made
 * against the commits since the plan: the schema, protocol and clustering columns unchanged (else the batch loses,
 * as to a metadata change), and each group's files still live with the deletion vectors they had (else the group
 * loses, as to a concurrent delete).
 */
object LaterBatch {
  /** The groups that may commit on `latest`, and the lost ones with their conflicts. */
  def rebase(planned: Snapshot, latest: Snapshot, groups: Seq[OptimizeGroup])
      : (Seq[OptimizeGroup], Seq[(OptimizeGroup, ConcurrentModificationException)]) = {
    if (latest.metadata != planned.metadata || latest.protocol != planned.protocol ||
      Clustering.columns(latest) != Clustering.columns(planned)) {
      val e = MetadataChangedException(latest.version, "unknown", "the table's schema, protocol or clustering " +
        s"columns changed after the OPTIMIZE was planned on version ${planned.version}")
      return (Nil, groups.map(_ -> e))
    }
    // A file is the same only with the same deletion vector: a DELETE since the plan that added one to a file keeps
    // its path, and rewriting the planned rows would bring the deleted ones back.
    def key(s: Snapshot, f: AddFile) = (Snapshot.absolutePath(s.tablePath, f.path).toString, f.dvId)
    val live = latest.files.iterator.map(key(latest, _)).toSet
    val (ok, gone) = groups.partition(_.files.forall(f => live(key(planned, f))))
    (ok, gone.map(g => g -> ConcurrentDeleteDeleteException(latest.version, "unknown", "a file it rewrites was " +
      s"removed or given a deletion vector after the OPTIMIZE was planned on version ${planned.version}")))
  }
}
