package io.strata

import scala.jdk.CollectionConverters._

import io.strata.{log => l}
import io.strata.log.{ErrorConditions, ErrorKind}
import org.apache.spark.{BreakingChangeInfo, SparkThrowable}

/**
 * Strata's exceptions as Spark sees them: each log-core exception class has a subclass here that is also a
 * [[SparkThrowable]] with Strata's condition, SQLSTATE and message parameters, so Spark's error handling carries them
 * (Spark Connect sends them to the client, whose exception's `getCondition()` / `getSqlState()` return them; on a
 * classic session py4j reaches the JVM exception's). [[SparkEngine]] makes every Strata exception through
 * [[SparkErrors.make]]; code that catches them by their log-core class still does. Each subclass keeps its log-core
 * class's simple name.
 */
object SparkErrors {
  /** What a Strata exception answers as a [[SparkThrowable]] (Spark's defaults look conditions up in its own list). */
  trait Condition extends l.StrataException with SparkThrowable {
    override def getCondition: String = condition
    override def getSqlState: String = ErrorConditions(condition).sqlState
    override def getMessageParameters: java.util.Map[String, String] = messageParameters.asJava
    override def getDefaultMessageTemplate: String = ErrorConditions(condition).template
    override def isInternalError: Boolean = false
    override def getBreakingChangeInfo: BreakingChangeInfo = null
  }

  type Params = Map[String, String]

  final class StrataException(c: String, p: Params, t: Throwable) extends l.StrataException(c, p, t) with Condition
  final class MalformedActionException(c: String, p: Params, t: Throwable)
    extends l.MalformedActionException(c, p, t) with Condition
  final class CorruptLogException(c: String, p: Params, t: Throwable)
    extends l.CorruptLogException(c, p, t) with Condition
  final class MissingLogFileException(c: String, p: Params, t: Throwable)
    extends l.MissingLogFileException(c, p, t) with Condition
  final class UnsupportedProtocolException(c: String, p: Params, t: Throwable)
    extends l.UnsupportedProtocolException(c, p, t) with Condition
  final class TableNotFoundException(c: String, p: Params, t: Throwable)
    extends l.TableNotFoundException(c, p, t) with Condition
  final class TableAlreadyExistsException(c: String, p: Params, t: Throwable)
    extends l.TableAlreadyExistsException(c, p, t) with Condition
  final class UnsafeLogStoreException(c: String, p: Params, t: Throwable)
    extends l.UnsafeLogStoreException(c, p, t) with Condition
  final class InvalidTableOperationException(c: String, p: Params, t: Throwable)
    extends l.InvalidTableOperationException(c, p, t) with Condition
  final class ConcurrentAppendException(c: String, p: Params, t: Throwable)
    extends l.ConcurrentAppendException(c, p, t) with Condition
  final class ConcurrentDeleteReadException(c: String, p: Params, t: Throwable)
    extends l.ConcurrentDeleteReadException(c, p, t) with Condition
  final class ConcurrentDeleteDeleteException(c: String, p: Params, t: Throwable)
    extends l.ConcurrentDeleteDeleteException(c, p, t) with Condition
  final class MetadataChangedException(c: String, p: Params, t: Throwable)
    extends l.MetadataChangedException(c, p, t) with Condition
  final class ProtocolChangedException(c: String, p: Params, t: Throwable)
    extends l.ProtocolChangedException(c, p, t) with Condition
  final class ConcurrentTransactionException(c: String, p: Params, t: Throwable)
    extends l.ConcurrentTransactionException(c, p, t) with Condition
  final class ConcurrentDomainMetadataException(c: String, p: Params, t: Throwable)
    extends l.ConcurrentDomainMetadataException(c, p, t) with Condition
  final class LogReplacedException(c: String, p: Params, t: Throwable)
    extends l.LogReplacedException(c, p, t) with Condition
  final class CommitRetriesExhaustedException(c: String, p: Params, t: Throwable)
    extends l.CommitRetriesExhaustedException(c, p, t) with Condition
  final class ConstraintViolationException(c: String, p: Params, t: Throwable)
    extends l.ConstraintViolationException(c, p, t) with Condition
  final class StreamSourceChangeException(c: String, p: Params, t: Throwable)
    extends l.StreamSourceChangeException(c, p, t) with Condition

  private val constructors: Map[ErrorKind[_], (String, Params, Throwable) => l.StrataException] = Map(
    l.StrataException -> (new StrataException(_, _, _)),
    l.MalformedActionException -> (new MalformedActionException(_, _, _)),
    l.CorruptLogException -> (new CorruptLogException(_, _, _)),
    l.MissingLogFileException -> (new MissingLogFileException(_, _, _)),
    l.UnsupportedProtocolException -> (new UnsupportedProtocolException(_, _, _)),
    l.TableNotFoundException -> (new TableNotFoundException(_, _, _)),
    l.TableAlreadyExistsException -> (new TableAlreadyExistsException(_, _, _)),
    l.UnsafeLogStoreException -> (new UnsafeLogStoreException(_, _, _)),
    l.InvalidTableOperationException -> (new InvalidTableOperationException(_, _, _)),
    l.ConcurrentAppendException -> (new ConcurrentAppendException(_, _, _)),
    l.ConcurrentDeleteReadException -> (new ConcurrentDeleteReadException(_, _, _)),
    l.ConcurrentDeleteDeleteException -> (new ConcurrentDeleteDeleteException(_, _, _)),
    l.MetadataChangedException -> (new MetadataChangedException(_, _, _)),
    l.ProtocolChangedException -> (new ProtocolChangedException(_, _, _)),
    l.ConcurrentTransactionException -> (new ConcurrentTransactionException(_, _, _)),
    l.ConcurrentDomainMetadataException -> (new ConcurrentDomainMetadataException(_, _, _)),
    l.LogReplacedException -> (new LogReplacedException(_, _, _)),
    l.CommitRetriesExhaustedException -> (new CommitRetriesExhaustedException(_, _, _)),
    l.ConstraintViolationException -> (new ConstraintViolationException(_, _, _)),
    l.StreamSourceChangeException -> (new StreamSourceChangeException(_, _, _)))

  /** The SparkThrowable subclass of `kind`'s class (the log core's own class for a kind this list lacks). */
  def make[E <: l.StrataException](kind: ErrorKind[E], condition: String, parameters: Params, cause: Throwable): E =
    constructors.get(kind).fold(kind.plain(condition, parameters, cause))(_(condition, parameters, cause).asInstanceOf[E])
}
