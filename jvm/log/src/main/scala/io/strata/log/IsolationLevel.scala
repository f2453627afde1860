package io.strata.log

import java.util.Locale

/**
 * How strictly a transaction is checked against the commits that won the race (table property
 * `strata.isolationLevel`). Both levels refuse a commit whose files were removed concurrently, or whose table's
 * metadata or protocol changed.
 *  - `serializable` (default): also refuses when a concurrent commit added rows to what the transaction read (an
 *    overwrite then fails rather than keep rows it did not see): the outcome equals some serial order.
 *  - `snapshot`: concurrent blind appends do not conflict; an overwrite keeps rows appended while it ran (the serial
 *    order: the overwrite, then the append). More writers succeed under contention (e.g. a nightly partition
 *    rewrite beside a stream of appends). New rows from a winner that read the table still conflict.
 */
sealed abstract class IsolationLevel(val name: String, val commitInfoName: String)

object IsolationLevel {
  case object Serializable extends IsolationLevel("serializable", "Serializable")
  case object Snapshot extends IsolationLevel("snapshot", "SnapshotIsolation")

  val Property = "strata.isolationLevel"
  private val all = Seq(Serializable, Snapshot)

  /** The level a table's configuration asks for; an unknown value is refused naming the property. */
  def of(configuration: Map[String, String]): IsolationLevel = configuration.get(Property) match {
    case None => Serializable
    case Some(v) => all.find(_.name == v.trim.toLowerCase(Locale.ROOT)).getOrElse(
      throw TableProperties.invalidValue(s"Table property $Property", v,
        s"one of ${all.map(l => s"'${l.name}'").mkString(", ")}"))
  }
}
