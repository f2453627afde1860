package io.strata.log

/**
 * What one commit did to the table's rows, as a reader of appended rows sees it (the streaming source).
 *
 * `appended`: the files the commit added as new rows (`dataChange = true`), in the commit's order. Files added and
 * removed with `dataChange = false` (OPTIMIZE, auto-compaction, purges) only move rows and are not listed.
 * `changesRows`: the commit also removed rows (a `dataChange = true` remove: DELETE, UPDATE, MERGE, overwrite,
 * restore, a streaming complete-mode batch), so its adds are not (only) new rows.
 */
final case class CommitChanges(
    version: Long,
    appended: IndexedSeq[AddFile],
    changesRows: Boolean,
    metadata: Option[Metadata],
    protocol: Option[Protocol],
    operation: Option[String])

object CommitChanges {
  def of(version: Long, actions: Seq[Action]): CommitChanges = CommitChanges(
    version,
    actions.iterator.collect { case a: AddFile if a.dataChange => a }.toIndexedSeq,
    actions.exists { case r: RemoveFile => r.dataChange; case _ => false },
    actions.collectFirst { case m: Metadata => m },
    actions.collectFirst { case p: Protocol => p },
    actions.collectFirst { case c: CommitInfo => c.operation }.flatten)
}
