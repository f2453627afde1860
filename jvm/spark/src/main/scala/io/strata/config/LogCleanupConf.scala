package io.strata.config

import io.strata.log.InvalidTableOperationException
import org.apache.spark.sql.SparkSession

/** Session settings of `cleanup_log` (the `spark.strata.*` namespace of the other session confs). */
object LogCleanupConf {
  /**
   * `false` lets `cleanup_log(retention_hours => n)` keep less history than the table's `delta.logRetentionDuration`
   * (default `true`: refused, as delta-spark's retention check refuses a short VACUUM).
   */
  val RetentionCheckKey = "spark.strata.logCleanup.retentionCheck.enabled"

  def retentionCheck(spark: SparkSession): Boolean = spark.conf.getOption(RetentionCheckKey) match {
    case None => true
    case Some(v) => v.trim.toLowerCase match {
      case "true" => true
      case "false" => false
      case _ => throw InvalidTableOperationException("STRATA_INVALID_CONF_VALUE", Map(
        "setting" -> s"Session conf $RetentionCheckKey", "value" -> v, "allowed" -> "true or false"))
    }
  }
}
