package io.strata.log

import scala.jdk.CollectionConverters._

/**
 * Base of every error Strata raises on purpose. `condition` names what went wrong, stably (a condition of
 * [[ErrorConditions]], with its message template and SQLSTATE); the message is `[CONDITION] ` and the template filled
 * with `messageParameters`. `getCondition`, `getSqlState` and `getMessageParameters` are those of Spark's
 * `SparkThrowable`, which the log core cannot name: an [[Engine]] makes the exceptions (through the class's
 * companion, an [[ErrorKind]]) and may return subclasses its engine understands, as the Spark connector's are
 * `SparkThrowable`s. Throw them through the companion: `throw CorruptLogException("STRATA_CORRUPT_LOG", "...")`.
 */
class StrataException(val condition: String, val messageParameters: Map[String, String], cause: Throwable)
  extends RuntimeException(ErrorConditions.message(condition, messageParameters), cause) {
  def getCondition: String = condition
  def getSqlState: String = ErrorConditions(condition).sqlState
  def getMessageParameters: java.util.Map[String, String] = messageParameters.asJava
  /** The message without its `[CONDITION] ` prefix. */
  def messageText: String = ErrorConditions(condition).format(messageParameters)
}

/**
 * The companion of a Strata exception class: makes its exceptions through the engine (see [[Engine.exception]]).
 * `apply(condition, message)` is for conditions whose template is `<message>`.
 */
abstract class ErrorKind[E <: StrataException](val plain: (String, Map[String, String], Throwable) => E) {
  def make(condition: String, parameters: Map[String, String], cause: Throwable): E =
    Engine.exception(this, condition, parameters, cause)
  def apply(condition: String, message: String): E = make(condition, Map("message" -> message), null)
  def apply(condition: String, message: String, cause: Throwable): E = make(condition, Map("message" -> message), cause)
  def apply(condition: String, parameters: Map[String, Any]): E =
    make(condition, parameters.map { case (k, v) => k -> String.valueOf(v) }, null)
}

object StrataException extends ErrorKind[StrataException](new StrataException(_, _, _))

/** A log line that is not a well-formed action (the reader wraps it with the file and line number). */
class MalformedActionException(c: String, p: Map[String, String], t: Throwable) extends StrataException(c, p, t)
object MalformedActionException extends ErrorKind[MalformedActionException](new MalformedActionException(_, _, _))

/** The log itself is unreadable: a corrupt or truncated commit, a missing checkpoint, a gap in the versions. */
class CorruptLogException(c: String, p: Map[String, String], t: Throwable) extends StrataException(c, p, t)
object CorruptLogException extends ErrorKind[CorruptLogException](new CorruptLogException(_, _, _))

/** The table needs a protocol version or feature this Strata does not implement. */
/**
 * A log file that must be there is not (a commit deleted, a log cleaned up or put back from an older copy): missing,
 * not corrupt. Readers that expect files to go away (a version read back after a failed put, a commit cleaned up
 * while it was read) catch this one alone; malformed content stays a [[CorruptLogException]].
 */
class MissingLogFileException(c: String, p: Map[String, String], t: Throwable) extends StrataException(c, p, t)
object MissingLogFileException extends ErrorKind[MissingLogFileException](new MissingLogFileException(_, _, _))

class UnsupportedProtocolException(c: String, p: Map[String, String], t: Throwable) extends StrataException(c, p, t)
object UnsupportedProtocolException
  extends ErrorKind[UnsupportedProtocolException](new UnsupportedProtocolException(_, _, _))

/** No table (no `_delta_log` with commits) at the given location. */
class TableNotFoundException(c: String, p: Map[String, String], t: Throwable) extends StrataException(c, p, t) {
  def path: String = p("path")
}
object TableNotFoundException extends ErrorKind[TableNotFoundException](new TableNotFoundException(_, _, _)) {
  def apply(path: String): TableNotFoundException = apply("STRATA_TABLE_NOT_FOUND", Map("path" -> path))
}

/** CREATE of a table that exists (or was created while the statement ran). */
class TableAlreadyExistsException(c: String, p: Map[String, String], t: Throwable) extends StrataException(c, p, t) {
  def path: String = p("path")
}
object TableAlreadyExistsException
  extends ErrorKind[TableAlreadyExistsException](new TableAlreadyExistsException(_, _, _)) {
  /** CREATE (or a V1 write in mode 'error') of a table at `path` that holds `version`. */
  def apply(path: String, version: Long): TableAlreadyExistsException =
    apply("STRATA_TABLE_ALREADY_EXISTS", Map("path" -> path, "version" -> version))
}

/** The storage under the table cannot give the atomic put-if-absent a commit needs. */
class UnsafeLogStoreException(c: String, p: Map[String, String], t: Throwable) extends StrataException(c, p, t)
object UnsafeLogStoreException extends ErrorKind[UnsafeLogStoreException](new UnsafeLogStoreException(_, _, _))

/** The request is invalid on this table (bad option, schema mismatch, append-only violation...): see the condition. */
class InvalidTableOperationException(c: String, p: Map[String, String], t: Throwable) extends StrataException(c, p, t)
object InvalidTableOperationException
  extends ErrorKind[InvalidTableOperationException](new InvalidTableOperationException(_, _, _))

/**
 * Another writer committed first and its changes logically conflict with this transaction.
 * `winningVersion` and `winningOperation` name the commit that won.
 */
sealed abstract class ConcurrentModificationException(c: String, p: Map[String, String], t: Throwable)
  extends StrataException(c, p, t) {
  def winningVersion: Long = p("winningVersion").toLong
  def winningOperation: String = p("winningOperation")
}

/** The companion of a conflict: `apply(winning version, winning operation, what conflicts)`. */
abstract class ConflictKind[E <: ConcurrentModificationException](condition: String,
    plain: (String, Map[String, String], Throwable) => E) extends ErrorKind[E](plain) {
  def apply(winningVersion: Long, winningOperation: String, detail: String): E =
    apply(condition, Map("winningVersion" -> winningVersion, "winningOperation" -> winningOperation, "detail" -> detail))
}

class ConcurrentAppendException(c: String, p: Map[String, String], t: Throwable)
  extends ConcurrentModificationException(c, p, t)
object ConcurrentAppendException
  extends ConflictKind("STRATA_CONCURRENT_APPEND", new ConcurrentAppendException(_, _, _))
class ConcurrentDeleteReadException(c: String, p: Map[String, String], t: Throwable)
  extends ConcurrentModificationException(c, p, t)
object ConcurrentDeleteReadException
  extends ConflictKind("STRATA_CONCURRENT_DELETE_READ", new ConcurrentDeleteReadException(_, _, _))
class ConcurrentDeleteDeleteException(c: String, p: Map[String, String], t: Throwable)
  extends ConcurrentModificationException(c, p, t)
object ConcurrentDeleteDeleteException
  extends ConflictKind("STRATA_CONCURRENT_DELETE_DELETE", new ConcurrentDeleteDeleteException(_, _, _))
class MetadataChangedException(c: String, p: Map[String, String], t: Throwable)
  extends ConcurrentModificationException(c, p, t)
object MetadataChangedException extends ConflictKind("STRATA_METADATA_CHANGED", new MetadataChangedException(_, _, _))
class ProtocolChangedException(c: String, p: Map[String, String], t: Throwable)
  extends ConcurrentModificationException(c, p, t)
object ProtocolChangedException extends ConflictKind("STRATA_PROTOCOL_CHANGED", new ProtocolChangedException(_, _, _))
class ConcurrentTransactionException(c: String, p: Map[String, String], t: Throwable)
  extends ConcurrentModificationException(c, p, t)
object ConcurrentTransactionException
  extends ConflictKind("STRATA_CONCURRENT_TRANSACTION", new ConcurrentTransactionException(_, _, _))

/** Both transactions wrote the same metadata domain (PROTOCOL.md, "Domain Metadata": they conflict). */
class ConcurrentDomainMetadataException(c: String, p: Map[String, String], t: Throwable)
  extends ConcurrentModificationException(c, p, t)
object ConcurrentDomainMetadataException
  extends ConflictKind("STRATA_CONCURRENT_DOMAIN_METADATA", new ConcurrentDomainMetadataException(_, _, _))

/**
 * The commit file of the version a transaction read is no longer the one it read (another [[FileStamp]], or gone):
 * the log was replaced under the table since. Its commit would land on another history; nothing is committed.
 */
class LogReplacedException(c: String, p: Map[String, String], t: Throwable)
  extends ConcurrentModificationException(c, p, t)
object LogReplacedException extends ConflictKind("STRATA_LOG_REPLACED", new LogReplacedException(_, _, _))

/** Commit retries ran out while other writers kept winning (each time without a logical conflict). */
class CommitRetriesExhaustedException(c: String, p: Map[String, String], t: Throwable) extends StrataException(c, p, t)
object CommitRetriesExhaustedException
  extends ErrorKind[CommitRetriesExhaustedException](new CommitRetriesExhaustedException(_, _, _)) {
  def apply(attempts: Int, lastVersion: Long): CommitRetriesExhaustedException =
    apply("STRATA_COMMIT_RETRIES_EXHAUSTED", Map("attempts" -> attempts, "lastVersion" -> lastVersion))
}

/** A written row breaks a rule of the table (raised inside a task; nothing is committed). */
class ConstraintViolationException(c: String, p: Map[String, String], t: Throwable) extends StrataException(c, p, t)
object ConstraintViolationException
  extends ErrorKind[ConstraintViolationException](new ConstraintViolationException(_, _, _))

/**
 * A streaming read met a commit it cannot turn into appended rows (one that removed or rewrote rows, an incompatible
 * schema change, a replaced table). Nothing of that commit was streamed.
 */
class StreamSourceChangeException(c: String, p: Map[String, String], t: Throwable) extends StrataException(c, p, t)
object StreamSourceChangeException
  extends ErrorKind[StreamSourceChangeException](new StreamSourceChangeException(_, _, _))
