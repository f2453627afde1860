package io.strata.config

import org.apache.spark.sql.SparkSession

/**
 * Session defaults for the properties of new tables: `spark.strata.properties.defaults.<name>` sets `delta.<name>`
 * on every table created in the session (CREATE TABLE, CTAS, a first path write) unless the statement sets it, e.g.
 * `spark.strata.properties.defaults.enableDeletionVectors=true`. Existing tables keep their properties.
 */
object TableDefaults {
  val Prefix = "spark.strata.properties.defaults."

  /** The session's defaults as table properties (`delta.<name>` -> value); validated where they are applied. */
  def session(): Map[String, String] = SparkSession.getActiveSession.fold(Map.empty[String, String]) { s =>
    s.conf.getAll.collect { case (k, v) if k.startsWith(Prefix) && k.length > Prefix.length =>
      "delta." + k.substring(Prefix.length) -> v
    }
  }

  /** `props` of a table being created, with the session's defaults for the keys it leaves out. */
  def forNewTable(props: Map[String, String], isNew: Boolean): Map[String, String] =
    if (!isNew) props else {
      val set = props.keySet.map(_.toLowerCase(java.util.Locale.ROOT))
      props ++ session().filterNot { case (k, _) => set(k.toLowerCase(java.util.Locale.ROOT)) }
    }
}
