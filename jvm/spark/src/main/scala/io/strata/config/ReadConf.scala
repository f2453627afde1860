package io.strata.config

import io.strata.log.InvalidTableOperationException
import org.apache.spark.sql.SparkSession

/** Session settings of batch reads (the `spark.strata.*` namespace of the other session confs). */
object ReadConf {
  /**
   * `false` turns off answering count / min / max from the log's statistics (catalog reads' aggregate push-down and
   * the path reads' optimizer rule): every aggregate then reads the data. Default `true`.
   */
  val AggregatePushdownKey = "spark.strata.read.aggregatePushdown.enabled"

  def aggregatePushdown(spark: SparkSession): Boolean = spark.conf.getOption(AggregatePushdownKey) match {
    case None => true
    case Some(v) if v.trim.equalsIgnoreCase("true") => true
    case Some(v) if v.trim.equalsIgnoreCase("false") => false
    case Some(v) => throw InvalidTableOperationException("STRATA_INVALID_CONF_VALUE",
      Map("setting" -> AggregatePushdownKey, "value" -> v, "allowed" -> "true or false"))
  }
}
