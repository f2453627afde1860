package io.strata.log

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper

/**
 * Every error condition Strata raises, read from `io/strata/error-conditions.json` (modelled on Spark's
 * error-conditions.json): a stable name (`STRATA_...`) with its message template, whose `<name>` placeholders the
 * error's parameters fill, and its SQLSTATE (5 characters: class 42 analysis, 40 transaction conflicts, 23
 * integrity constraints, 0A unsupported, XX corrupt data, ...). A condition raised with several wordings has the
 * template `<message>`: its name and SQLSTATE are the stable part, the message says what is wrong this time.
 */
object ErrorConditions {
  val Resource = "/io/strata/error-conditions.json"

  final case class Condition(name: String, template: String, sqlState: String) {
    /** The placeholders of the template, in order of first appearance. */
    lazy val parameters: Seq[String] = Placeholder.findAllMatchIn(template).map(_.group(1)).toSeq.distinct

    /** The template with `values` in its placeholders; they must be exactly the template's parameters. */
    def format(values: Map[String, String]): String = {
      if (values.keySet != parameters.toSet) throw new IllegalArgumentException(s"Error condition $name takes " +
        s"parameters ${parameters.mkString(", ")}, not ${values.keys.mkString(", ")}.")
      Placeholder.replaceAllIn(template, m => scala.util.matching.Regex.quoteReplacement(values(m.group(1))))
    }
  }

  private val Placeholder = "<([A-Za-z][A-Za-z0-9_]*)>".r

  /** The conditions by name, read once. */
  lazy val all: Map[String, Condition] = {
    val in = classOf[Condition].getResourceAsStream(Resource)
    if (in == null) throw new IllegalStateException(s"$Resource is missing from Strata's jar.")
    val root = try new ObjectMapper().readTree(in) finally in.close()
    root.properties().asScala.map { e =>
      val lines = e.getValue.get("message").elements().asScala.map(_.asText).mkString("\n")
      e.getKey -> Condition(e.getKey, lines, e.getValue.get("sqlState").asText)
    }.toMap
  }

  def apply(name: String): Condition =
    all.getOrElse(name, throw new IllegalArgumentException(s"Unknown error condition $name (not in $Resource)."))

  /** The error message: `[CONDITION] ` and the filled-in template, as Spark's error messages start. */
  def message(name: String, parameters: Map[String, String]): String = s"[$name] ${apply(name).format(parameters)}"
}
