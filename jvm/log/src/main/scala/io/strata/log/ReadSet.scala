package io.strata.log

/**
 * A set of rows a transaction read, as a predicate over one file's log entry: its partition values and statistics.
 * It is printable (conflict messages and docs name it) and evaluable against a concurrent writer's file, so the
 * conflict checker can tell whether that file may hold rows the transaction would have seen. Implementations that
 * need Spark (SQL predicates over partition values and min/max statistics) live outside this package.
 */
trait FilePredicate {
  def description: String
  /** False only when no row of a file with this entry can match; true when unsure. */
  def mayMatch(partitionValues: Map[String, Option[String]], stats: Option[String]): Boolean
  override def toString: String = description
}

object FilePredicate {
  /** Every row of the table (an unfiltered read, a whole-table overwrite). */
  case object WholeTable extends FilePredicate {
    val description = "the whole table"
    def mayMatch(partitionValues: Map[String, Option[String]], stats: Option[String]): Boolean = true
  }
}

/**
 * What a transaction's outcome depends on (PROTOCOL.md, "Optimistic Concurrency Control"; Delta's conflict rules):
 *  - `predicates`: the rows it read; a concurrent add that may match one conflicts under serializable isolation;
 *  - `files`: the files it read or removes (absolute paths); a concurrent remove of one conflicts at every level,
 *    whatever its `dataChange`, since a compaction that rewrote a file still moved its rows elsewhere;
 *  - `appIds`: application ids whose recorded version it read (idempotent writes);
 *  - `fromVersion`: the oldest table version its input read; commits after it and up to the transaction's own read
 *    version are validated like concurrent winners (a write whose input read the table earlier than the write began).
 */
final case class ReadSet(
    predicates: Vector[FilePredicate] = Vector.empty,
    files: Set[String] = Set.empty,
    appIds: Set[String] = Set.empty,
    fromVersion: Option[Long] = None)
