package io.strata.log

/** Base of every error Strata raises on purpose; the message always names the thing that is wrong. */
class StrataException(message: String, cause: Throwable = null) extends RuntimeException(message, cause)

/** A log line that is not a well-formed action (the reader wraps it with the file and line number). */
final class MalformedActionException(message: String) extends StrataException(message)

/** The log itself is unreadable: a corrupt or truncated commit, a missing checkpoint, a gap in the versions. */
final class CorruptLogException(message: String, cause: Throwable = null) extends StrataException(message, cause)

/** The table needs a protocol version or feature this Strata does not implement. */
final class UnsupportedProtocolException(message: String) extends StrataException(message)

/** No table (no `_delta_log` with commits) at the given location. */
final class TableNotFoundException(val path: String)
  extends StrataException(s"No Strata/Delta table at $path: there is no _delta_log with commits there.")

/** CREATE of a table that exists (or was created while the statement ran). */
final class TableAlreadyExistsException(val path: String, val version: Long)
  extends StrataException(s"Table $path already exists (version $version). Use mode 'append' or 'overwrite', " +
    "INSERT, or CREATE OR REPLACE / REPLACE TABLE to replace it.")

/** The storage under the table cannot give the atomic put-if-absent a commit needs. */
final class UnsafeLogStoreException(message: String) extends StrataException(message)

/** The request is invalid on this table (bad option, schema mismatch, append-only violation...). */
class InvalidTableOperationException(message: String) extends StrataException(message)

/**
 * Another writer committed first and its changes logically conflict with this transaction.
 * `winningVersion` and `winningOperation` name the commit that won.
 */
sealed abstract class ConcurrentModificationException(
    val kind: String, val winningVersion: Long, val winningOperation: String, detail: String)
  extends StrataException(
    s"$kind: the transaction conflicts with version $winningVersion ($winningOperation), committed concurrently: " +
      s"$detail. Retry the operation on the new version.")

final class ConcurrentAppendException(v: Long, op: String, detail: String)
  extends ConcurrentModificationException("ConcurrentAppendException", v, op, detail)
final class ConcurrentDeleteReadException(v: Long, op: String, detail: String)
  extends ConcurrentModificationException("ConcurrentDeleteReadException", v, op, detail)
final class ConcurrentDeleteDeleteException(v: Long, op: String, detail: String)
  extends ConcurrentModificationException("ConcurrentDeleteDeleteException", v, op, detail)
final class MetadataChangedException(v: Long, op: String, detail: String)
  extends ConcurrentModificationException("MetadataChangedException", v, op, detail)
final class ProtocolChangedException(v: Long, op: String, detail: String)
  extends ConcurrentModificationException("ProtocolChangedException", v, op, detail)
final class ConcurrentTransactionException(v: Long, op: String, detail: String)
  extends ConcurrentModificationException("ConcurrentTransactionException", v, op, detail)

/** Commit retries ran out while other writers kept winning (each time without a logical conflict). */
final class CommitRetriesExhaustedException(attempts: Int, lastVersion: Long)
  extends StrataException(s"Gave up committing after $attempts attempts: other writers kept committing first " +
    s"(last seen version $lastVersion). Raise strata.commit.maxRetries or reduce write contention.")

/** A written row breaks a CHECK constraint of the table (raised inside a task; nothing is committed). */
final class ConstraintViolationException(message: String) extends StrataException(message)

/**
 * A streaming read met a commit it cannot turn into appended rows (one that removed or rewrote rows, an incompatible
 * schema change, a replaced table). Nothing of that commit was streamed.
 */
final class StreamSourceChangeException(message: String) extends StrataException(message)
