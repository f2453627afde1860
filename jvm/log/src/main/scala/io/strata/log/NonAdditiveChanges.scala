package io.strata.log

/**
 * A rename or a drop of a column between two schemas of a column-mapped table, by logical path (dotted).
 * `newName`: the path after a rename; None for a drop.
 */
final case class NonAdditiveChange(column: String, newName: Option[String]) {
  def isRename: Boolean = newName.isDefined
  def isDrop: Boolean = newName.isEmpty
  def describe: String = newName.fold(s"DROP COLUMN $column")(n => s"RENAME COLUMN $column TO $n")
}

/**
 * Which schema changes between two metadata of a column-mapped table are not additive: a column whose physical
 * column is still there under another name (RENAME COLUMN), or whose physical column is gone (DROP COLUMN). Columns
 * are compared by physical name, so a column dropped and re-added under its old name (a new physical column) is a
 * drop here, plus an addition. Added columns and type changes are not reported (callers check those as before).
 * Spark-free: the streaming source asks it for each commit with new metadata.
 */
object NonAdditiveChanges {
  /** The renames and drops from `from` to `to`, outermost only (a renamed struct's fields are not listed too). Nil
   *  when either does not use column mapping: without it a rename or drop cannot be told from a drop and an add. */
  def between(from: Metadata, to: Metadata): Seq[NonAdditiveChange] =
    if (!ColumnMapping.enabled(from) || !ColumnMapping.enabled(to)) Nil else {
      val after = ColumnMapping.physicalFields(to).map { case (p, l, _) => p -> l }.toMap
      ColumnMapping.physicalFields(from).flatMap { case (phys, logical, _) =>
        after.get(phys) match {
          case Some(now) if now.last != logical.last => Some(NonAdditiveChange(logical.mkString("."), Some(now.mkString("."))))
          case Some(_) => None
          // Only the outermost dropped field: its nested fields went with it.
          case None if phys.size == 1 || after.contains(phys.init) => Some(NonAdditiveChange(logical.mkString("."), None))
          case None => None
        }
      }
    }
}
