package io.strata.dml

import io.strata.log.ActionCodec
import io.strata.write.InputReads
import org.apache.spark.sql.catalyst.expressions.{Expression, Literal}
import org.apache.spark.sql.catalyst.plans.logical.{Join, MergeRows}

import scala.util.Try

/**
 * The clauses of the MERGE running on this thread, as delta-spark records them in commitInfo's operationParameters
 * (`predicate`, and `matchedPredicates`, `notMatchedPredicates`, `notMatchedBySourcePredicates`: JSON lists of
 * {actionType, predicate}). Read from the analyzed plan's MergeRows node, whose instructions are the clauses in
 * order (plus the carry-over of unchanged rows, which is no clause).
 */
object MergeClauses {
  def current(): Map[String, String] = Try {
    InputReads.currentPlan().flatMap(_.collectFirst { case m: MergeRows => m }).map { m =>
      val on = m.child.collectFirst { case j: Join => j.condition }.flatten
      Map(
        "predicate" -> ActionCodec.mapper.writeValueAsString(on.map(sql).toArray),
        "matchedPredicates" -> json(m.matchedInstructions.flatMap(describe)),
        "notMatchedPredicates" -> json(m.notMatchedInstructions.flatMap(describe)),
        "notMatchedBySourcePredicates" -> json(m.notMatchedBySourceInstructions.flatMap(describe)))
    }.getOrElse(Map.empty)
  }.getOrElse(Map.empty)

  private def describe(i: MergeRows.Instruction): Option[Map[String, String]] = {
    val (kind, condition) = i match {
      case k: MergeRows.Keep => (k.context match {
        case MergeRows.Copy => None
        case MergeRows.Insert => Some("insert")
        case _ => Some("update")
      }, k.condition)
      case d: MergeRows.Discard => (Some("delete"), d.condition)
      case s: MergeRows.Split => (Some("update"), s.condition)
      case _ => (None, Literal.TrueLiteral)
    }
    kind.map(k => Map("actionType" -> k) ++
      (if (condition == Literal.TrueLiteral) Map.empty else Map("predicate" -> sql(condition))))
  }

  private def sql(e: Expression): String = Try(e.sql).getOrElse(e.toString)

  private def json(items: Seq[Map[String, String]]): String = {
    import scala.jdk.CollectionConverters._
    ActionCodec.mapper.writeValueAsString(items.map(_.asJava).asJava)
  }
}
