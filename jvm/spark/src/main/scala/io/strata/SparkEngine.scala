package io.strata

/**
 * Names Spark in every commit's `commitInfo.engineInfo` ("Strata/<version> Apache-Spark/4.1.1"): the log core finds
 * it through `META-INF/services/io.strata.log.Engine` in the connector's jar.
 */
final class SparkEngine extends io.strata.log.Engine {
  def name: String = s"Apache-Spark/${org.apache.spark.SPARK_VERSION}"
}
