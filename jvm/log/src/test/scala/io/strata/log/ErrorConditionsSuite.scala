package io.strata.log

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files

import scala.jdk.CollectionConverters._

import org.scalatest.funsuite.AnyFunSuite

/**
 * io/strata/error-conditions.json against the code: every condition the main sources of both modules name exists
 * there, every entry is named by the code and has a valid SQLSTATE, and exceptions carry condition, SQLSTATE and
 * parameters with the `[CONDITION] ` message prefix.
 */
class ErrorConditionsSuite extends AnyFunSuite with LogTestSupport {
  private val ConditionLiteral = "\"(STRATA_[A-Z0-9_]+)\"".r

  /** (file, condition) for every condition literal in the main sources of the log core and the connector. */
  private lazy val used: Seq[(String, String)] = Seq("jvm/log/src/main", "jvm/spark/src/main").flatMap { dir =>
    val s = Files.walk(Fixtures.repoRoot.resolve(dir))
    try s.iterator.asScala.filter(_.toString.endsWith(".scala")).toSeq.flatMap { p =>
      val text = new String(Files.readAllBytes(p), UTF_8)
      ConditionLiteral.findAllMatchIn(text).map(m => Fixtures.repoRoot.relativize(p).toString -> m.group(1)).toSeq
    } finally s.close()
  }

  test("the code finds conditions to check (the scan works)") {
    assert(used.map(_._2).toSet.size > 40, used)
    assert(used.exists { case (f, c) => f.endsWith("StrataOptions.scala") && c == "STRATA_UNKNOWN_OPTION" })
  }

  test("every condition the code raises is in the resource") {
    val missing = used.filterNot { case (_, c) => ErrorConditions.all.contains(c) }
    assert(missing.isEmpty, s"conditions not in ${ErrorConditions.Resource}: ${missing.mkString(", ")}")
  }

  test("every condition in the resource is raised somewhere, with a 5-character SQLSTATE and a message") {
    val names = used.map(_._2).toSet
    val unused = ErrorConditions.all.keySet -- names
    assert(unused.isEmpty, s"conditions no code raises: ${unused.toSeq.sorted.mkString(", ")}")
    ErrorConditions.all.values.foreach { c =>
      assert(c.sqlState.matches("[0-9A-Z]{5}"), s"${c.name}: SQLSTATE '${c.sqlState}'")
      assert(c.name.matches("STRATA_[A-Z0-9_]+"), c.name)
      assert(c.template.trim.nonEmpty, c.name)
    }
  }

  test("a template takes exactly its parameters, values inserted as written") {
    val c = ErrorConditions("STRATA_UNKNOWN_OPTION")
    assert(c.parameters == Seq("option", "closest", "known"))
    assert(c.format(Map("option" -> "a$1<b>", "closest" -> "ab", "known" -> "ab, cd")) ==
      "Unknown option 'a$1<b>'. Did you mean 'ab'? Known options: ab, cd.")
    assert(intercept[IllegalArgumentException](c.format(Map("option" -> "x"))).getMessage.contains("closest"))
    assert(intercept[IllegalArgumentException](ErrorConditions("STRATA_NO_SUCH_THING")).getMessage
      .contains("STRATA_NO_SUCH_THING"))
  }

  test("an exception carries its condition, SQLSTATE and parameters; its message opens with [CONDITION]") {
    val e = TableNotFoundException("/data/t")
    assert(e.getCondition == "STRATA_TABLE_NOT_FOUND" && e.getSqlState == "42P01" && e.path == "/data/t")
    assert(e.getMessageParameters.asScala == Map("path" -> "/data/t"))
    assert(e.getMessage == "[STRATA_TABLE_NOT_FOUND] No Strata/Delta table at /data/t: there is no _delta_log with " +
      "commits there.")
    assert(e.messageText == e.getMessage.stripPrefix("[STRATA_TABLE_NOT_FOUND] "))

    val conflict = ConcurrentAppendException(7L, "WRITE", "it added a file")
    assert(conflict.getCondition == "STRATA_CONCURRENT_APPEND" && conflict.getSqlState == "40001")
    assert(conflict.winningVersion == 7L && conflict.winningOperation == "WRITE")
    assert(conflict.getMessage.startsWith("[STRATA_CONCURRENT_APPEND] ConcurrentAppendException: the transaction " +
      "conflicts with version 7 (WRITE), committed concurrently: it added a file."))
  }

  test("errors raised by the log core name their condition (no connector: the log core's own classes)") {
    val missing = intercept[TableNotFoundException](TableLog.forPath(new org.apache.hadoop.fs.Path(
      tempDir().resolve("none").toUri), new org.apache.hadoop.conf.Configuration()).snapshot())
    assert(missing.getClass == classOf[TableNotFoundException])
    assert(missing.getCondition == "STRATA_TABLE_NOT_FOUND")
    val bad = intercept[InvalidTableOperationException](TableProperties.validate(Map("delta.appendOnly" -> "yes"), "t"))
    assert(bad.getCondition == "STRATA_INVALID_TABLE_PROPERTY_VALUE" && bad.getSqlState == "42616")
    assert(bad.getMessageParameters.asScala == Map("setting" -> "Table property delta.appendOnly of t",
      "value" -> "yes", "allowed" -> "true or false"))
  }
}
