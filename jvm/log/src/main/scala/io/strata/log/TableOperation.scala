package io.strata.log

/**
 * What one commit does to a table, as an object that declares what it read and what it changes (the role of
 * Iceberg's SnapshotProducer operations). [[stage]] records the read set on the transaction and returns the actions;
 * the [[ConflictChecker]] then judges concurrent commits by that read set alone. docs/concurrency.md lists each
 * operation against every other under both isolation levels.
 *
 * Orthogonal to the operation, a write may add a `txn` action (idempotent writes) and declare that its input read
 * the table ([[Transaction.readWhere]] / [[Transaction.readInputAt]]).
 */
sealed trait TableOperation {
  /** The files this operation adds. */
  def added: Seq[AddFile]
  /** Declares this operation's reads on `txn` and returns its actions. */
  def stage(txn: Transaction, now: Long): Seq[Action]
}

object TableOperation {
  /** New rows; reads nothing of the table (unless the write's input did). */
  final case class Append(added: Seq[AddFile]) extends TableOperation {
    def stage(txn: Transaction, now: Long): Seq[Action] = added
  }

  /**
   * Replaces the rows `filter` selects: `replaced` are the files holding them at the read version (whole-table
   * overwrite, replaceWhere, static partition overwrite, dynamic partition overwrite with the written partitions as
   * the filter). Reads the filtered rows and the replaced files.
   */
  final case class OverwriteByFilter(filter: FilePredicate, replaced: Seq[AddFile], added: Seq[AddFile])
      extends TableOperation {
    def stage(txn: Transaction, now: Long): Seq[Action] = {
      txn.readWhere(filter)
      txn.readFiles(replaced)
      replaced.map(_.remove(now)) ++ added
    }
  }

  /**
   * A new definition of the table (CREATE, CTAS, REPLACE, CREATE OR REPLACE, overwriteSchema) with its data:
   * every current file is replaced. `createOnly`: no version of the table may exist, not even a concurrent one.
   */
  final case class ReplaceTable(metadata: Metadata, replaced: Seq[AddFile], added: Seq[AddFile], createOnly: Boolean)
      extends TableOperation {
    def stage(txn: Transaction, now: Long): Seq[Action] = {
      if (createOnly) txn.requireNoTable()
      txn.updateMetadata(metadata)
      txn.readFiles(replaced)
      replaced.map(_.remove(now)) ++ added
    }
  }

  /**
   * A metadata change without data (ALTER TABLE, mergeSchema's new columns go with an Append instead).
   * `validated`: the files whose rows were checked against it (a new CHECK constraint); they must stay as read.
   */
  final case class ChangeMetadata(metadata: Metadata, validated: Seq[AddFile]) extends TableOperation {
    def added: Seq[AddFile] = Nil
    def stage(txn: Transaction, now: Long): Seq[Action] = {
      txn.updateMetadata(metadata)
      txn.readFiles(validated)
      Nil
    }
  }

  /**
   * Rewrites files without changing rows (compaction, Z-order): removes and adds carry `dataChange = false`, so
   * readers of changes skip them and concurrent appends do not conflict; a concurrent remove of a rewritten file does.
   */
  final case class RewriteFiles(replaced: Seq[AddFile], added: Seq[AddFile]) extends TableOperation {
    def stage(txn: Transaction, now: Long): Seq[Action] = {
      txn.readFiles(replaced)
      replaced.map(_.remove(now, dataChange = false)) ++ added.map(_.copy(dataChange = false))
    }
  }

  /**
   * Marks rows deleted with deletion vectors (merge-on-read DELETE, UPDATE, MERGE) and adds new rows. `changed`:
   * per data file, its entry as read and its entry with the grown vector (None: every row is deleted, the file goes).
   * Reads the rows `filter` selects and the changed files; a file's change is remove(old entry) + add(new entry).
   * `rebase`: how a concurrent new vector on one of the same files, on other rows, is absorbed (DELETE, UPDATE).
   */
  final case class DeleteRows(filter: FilePredicate, changed: Seq[(AddFile, Option[AddFile])], added: Seq[AddFile],
                              rebase: Option[RowDeleteRebase] = None) extends TableOperation {
    def stage(txn: Transaction, now: Long): Seq[Action] = {
      txn.readWhere(filter)
      txn.readFiles(changed.map(_._1))
      changed.map(_._1.remove(now)) ++ changed.flatMap(_._2) ++ added
    }
  }

  /**
   * Makes the table what it was at an older version (RESTORE): `removed` (live now, not then) are removed and
   * `restored` (live then, not now; a file whose deletion vector changed counts under its old vector) are added
   * again, both with `dataChange = true`; `metadata` is the old version's when it differs from the current one;
   * `protocol` the old version's, merged into the current one (never a downgrade). Reads the whole table: every
   * current file and every row, judged under serializable isolation whatever the table's level, so any concurrent
   * commit that changed the table's data, metadata or protocol conflicts (the result must equal the old version).
   */
  final case class Restore(current: Seq[AddFile], removed: Seq[AddFile], restored: Seq[AddFile],
                           metadata: Option[Metadata], protocol: Protocol) extends TableOperation {
    def added: Seq[AddFile] = restored
    def stage(txn: Transaction, now: Long): Seq[Action] = {
      txn.readWhere(FilePredicate.WholeTable)
      txn.readFiles(current)
      txn.requireSerializable()
      metadata.foreach(txn.updateMetadata)
      txn.requireProtocol(protocol)
      removed.map(_.remove(now)) ++ restored.map(_.copy(dataChange = true))
    }
  }
}
