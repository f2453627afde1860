package io.strata.dml

import io.strata.log.{Snapshot, TableLog}
import io.strata.read.StrataScanBuilder
import io.strata.log.PostCommitHook
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/**
 * The table a DELETE, UPDATE or MERGE changes, as the catalog loaded it: its name, the snapshot the statement was
 * analyzed against, its log, its scan (merge-on-read reads the table as a query would) and what runs after
 * the commit (auto-compaction).
 */
final case class RowLevelTarget(name: String, snapshot: Snapshot, log: TableLog,
                                scanBuilder: CaseInsensitiveStringMap => StrataScanBuilder, postCommit: PostCommitHook)
