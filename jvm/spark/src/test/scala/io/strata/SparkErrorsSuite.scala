package io.strata

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, ObjectInputStream, ObjectOutputStream}

import scala.jdk.CollectionConverters._

import io.strata.{log => l}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.SparkThrowable
import org.scalatest.funsuite.AnyFunSuite

/** Strata's exceptions reach Spark as SparkThrowables with Strata's condition, SQLSTATE and parameters. */
class SparkErrorsSuite extends AnyFunSuite with SparkTestSession {
  private def causes(e: Throwable): Seq[Throwable] = Iterator.iterate(e)(_.getCause).takeWhile(_ != null).toSeq

  test("an error the log core raises is a SparkThrowable and still its log-core class") {
    val e = intercept[l.TableNotFoundException](
      l.TableLog.forPath(new Path(tempDir().resolve("none").toUri), new Configuration()).snapshot())
    val st = e.asInstanceOf[SparkThrowable]
    assert(st.getCondition == "STRATA_TABLE_NOT_FOUND" && st.getErrorClass == "STRATA_TABLE_NOT_FOUND")
    assert(st.getSqlState == "42P01")
    assert(st.getMessageParameters.asScala.keySet == Set("path"))
    assert(e.getMessage.startsWith("[STRATA_TABLE_NOT_FOUND] No Strata/Delta table at "))
    // Spark's defaults would look the condition up in Spark's own list; ours answer without it.
    assert(!st.isInternalError && st.getBreakingChangeInfo == null && st.getQueryContext.isEmpty)
    assert(st.getDefaultMessageTemplate == "No Strata/Delta table at <path>: there is no _delta_log with commits there.")
  }

  test("every kind of Strata exception is made as a SparkThrowable of its log-core class") {
    val kinds: Seq[(l.ErrorKind[_ <: l.StrataException], Class[_])] = Seq(
      l.StrataException -> classOf[l.StrataException],
      l.MalformedActionException -> classOf[l.MalformedActionException],
      l.CorruptLogException -> classOf[l.CorruptLogException],
      l.MissingLogFileException -> classOf[l.MissingLogFileException],
      l.UnsupportedProtocolException -> classOf[l.UnsupportedProtocolException],
      l.TableNotFoundException -> classOf[l.TableNotFoundException],
      l.TableAlreadyExistsException -> classOf[l.TableAlreadyExistsException],
      l.UnsafeLogStoreException -> classOf[l.UnsafeLogStoreException],
      l.InvalidTableOperationException -> classOf[l.InvalidTableOperationException],
      l.ConcurrentAppendException -> classOf[l.ConcurrentAppendException],
      l.ConcurrentDeleteReadException -> classOf[l.ConcurrentDeleteReadException],
      l.ConcurrentDeleteDeleteException -> classOf[l.ConcurrentDeleteDeleteException],
      l.MetadataChangedException -> classOf[l.MetadataChangedException],
      l.ProtocolChangedException -> classOf[l.ProtocolChangedException],
      l.ConcurrentTransactionException -> classOf[l.ConcurrentTransactionException],
      l.ConcurrentDomainMetadataException -> classOf[l.ConcurrentDomainMetadataException],
      l.LogReplacedException -> classOf[l.LogReplacedException],
      l.CommitRetriesExhaustedException -> classOf[l.CommitRetriesExhaustedException],
      l.ConstraintViolationException -> classOf[l.ConstraintViolationException],
      l.StreamSourceChangeException -> classOf[l.StreamSourceChangeException])
    kinds.foreach { case (kind, cls) =>
      val e = kind("STRATA_CORRUPT_LOG", "broken")
      assert(cls.isInstance(e) && e.isInstanceOf[SparkThrowable], kind)
      assert(e.getClass.getSimpleName == cls.getSimpleName, e.getClass)
      assert(e.getSqlState == "XX001" && e.asInstanceOf[SparkThrowable].getSqlState == "XX001")
    }
  }

  test("a task's Strata exception keeps its condition across Java serialization (executor to driver)") {
    val e = l.ConstraintViolationException("STRATA_NOT_NULL_VIOLATION", Map("column" -> "id", "table" -> "t"))
    val bytes = new ByteArrayOutputStream()
    new ObjectOutputStream(bytes).writeObject(e)
    val back = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray)).readObject()
    val st = back.asInstanceOf[l.ConstraintViolationException with SparkThrowable]
    assert(st.getCondition == "STRATA_NOT_NULL_VIOLATION" && st.getSqlState == "23502")
    assert(st.getMessage == e.getMessage)
  }

  test("a write's option error arrives through Spark's API with its condition and SQLSTATE") {
    val path = tempDir().resolve("t").toString
    val e = intercept[l.InvalidTableOperationException](
      spark.range(1).write.format("strata").option("compresion", "zstd").save(path))
    assert(e.asInstanceOf[SparkThrowable].getCondition == "STRATA_UNKNOWN_OPTION")
    assert(e.getSqlState == "42616")
    assert(e.getMessageParameters.asScala("option") == "compresion")
    assert(e.getMessageParameters.asScala("closest") == "compression")
  }

  test("a row breaking a rule fails the job with the condition on the task's exception (V2) or message (V1)") {
    val t = freshTable("errs", "(id BIGINT, s STRING, CONSTRAINT positive CHECK (id >= 0)) USING strata")
    // Spark rethrows a failed task's SparkThrowable itself (not wrapped in the job's failure).
    val v2 = intercept[Exception](spark.sql(s"INSERT INTO $t VALUES (-1, 'b')").collect())
    val violation = causes(v2).collectFirst { case c: l.ConstraintViolationException => c }.getOrElse(fail(v2))
    assert(violation.asInstanceOf[SparkThrowable].getCondition == "STRATA_CHECK_CONSTRAINT_VIOLATION")
    assert(violation.getSqlState == "23001")
    assert(violation.getMessageParameters.asScala == Map("constraint" -> "CHECK constraint positive (id >= 0)",
      "values" -> "id = -1"))
    val e = intercept[Exception](
      spark.range(-1, 0).selectExpr("id", "'b' AS s").write.format("strata").mode("append").save(location(t)))
    // V1 writes check with raise_error: Spark's USER_RAISED_EXCEPTION, whose message opens with Strata's condition.
    val raised = causes(e).collectFirst { case t: SparkThrowable if t.getCondition == "USER_RAISED_EXCEPTION" => t }
      .getOrElse(fail("no USER_RAISED_EXCEPTION", e))
    assert(raised.getMessageParameters.get("errorMessage").startsWith("[STRATA_CHECK_CONSTRAINT_VIOLATION] CHECK " +
      "constraint positive (id >= 0) violated by row with values: id = -1"), raised.getMessageParameters)
  }
}
