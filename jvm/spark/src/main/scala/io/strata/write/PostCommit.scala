package io.strata.write

import io.strata.log.{CommitResult, TableLog}

/**
 * What runs after a write committed (auto-compaction), handed to the write by the entry point that started it: the
 * work belongs to a layer above this package (optimize writes its files through this package), so the write only
 * knows this trait. It must never fail the write, which has committed by then.
 */
trait PostCommit {
  /**
   * `tableProperties`: the table's configuration as the write committed it; `touched`: the partitions (log values)
   * the commit added files to or removed files from.
   */
  def afterCommit(log: TableLog, tableProperties: Map[String, String], result: CommitResult,
                  touched: Seq[Map[String, Option[String]]]): Unit
}

object PostCommit {
  /** Nothing after the commit. */
  val Nothing: PostCommit = (_, _, _, _) => ()
}
