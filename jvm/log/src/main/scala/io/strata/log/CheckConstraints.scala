package io.strata.log

import java.util.Locale

/** A CHECK constraint as the Delta protocol stores it: table property `delta.constraints.<name>` = SQL predicate. */
final case class CheckConstraint(name: String, predicate: String) {
  def property: String = CheckConstraints.Prefix + name
  override def toString: String = s"CHECK constraint $name ($predicate)"
}

/**
 * The CHECK constraints of a table (PROTOCOL.md, "Check Constraints"). Names are case-insensitive and kept in
 * lower case, as delta-spark keeps them. A row satisfies a constraint only when the predicate is TRUE: NULL fails it,
 * as in delta-spark (Spark's own V2 constraint checks let NULL pass; Strata follows the table format).
 */
object CheckConstraints {
  val Prefix = "delta.constraints."

  def isConstraintProperty(key: String): Boolean = key.toLowerCase(Locale.ROOT).startsWith(Prefix)

  def of(metadata: Metadata): Seq[CheckConstraint] = of(metadata.configuration)

  def of(configuration: Map[String, String]): Seq[CheckConstraint] =
    configuration.toSeq.collect {
      case (k, v) if isConstraintProperty(k) => CheckConstraint(k.substring(Prefix.length).toLowerCase(Locale.ROOT), v)
    }.sortBy(_.name)

  /** The configuration with constraint `name` added; an existing name (in any case) or an empty one is refused. */
  def add(configuration: Map[String, String], name: String, predicate: String, table: String): Map[String, String] = {
    val key = name.toLowerCase(Locale.ROOT)
    if (key.isEmpty || !key.matches("[a-z0-9_]+")) throw InvalidTableOperationException("STRATA_INVALID_CONSTRAINT",
      s"Constraint name '$name' is not valid: use letters, digits and underscores.")
    if (predicate.trim.isEmpty) throw InvalidTableOperationException("STRATA_INVALID_CONSTRAINT",
      s"CHECK constraint $name has no predicate.")
    of(configuration).find(_.name == key).foreach { c => throw InvalidTableOperationException(
      "STRATA_CONSTRAINT_ALREADY_EXISTS", Map("table" -> table, "name" -> key, "constraint" -> c)) }
    configuration + (Prefix + key -> predicate)
  }

  /** The configuration without constraint `name`; a missing one is an error unless `ifExists`. */
  def drop(configuration: Map[String, String], name: String, ifExists: Boolean, table: String): Map[String, String] = {
    val key = name.toLowerCase(Locale.ROOT)
    val keys = configuration.keys.filter(k => isConstraintProperty(k) && k.substring(Prefix.length).equalsIgnoreCase(key))
    if (keys.isEmpty && !ifExists) throw InvalidTableOperationException("STRATA_CONSTRAINT_NOT_FOUND",
      Map("table" -> table, "name" -> key, "existing" -> of(configuration).map(_.name).mkString(", ")))
    configuration -- keys
  }
}
