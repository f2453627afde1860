package io.strata

import io.strata.log.{ErrorKind, StrataException}

/**
 * Names Spark in every commit's `commitInfo.engineInfo` ("Strata/<version> Apache-Spark/4.1.1"), and makes Strata's
 * exceptions `SparkThrowable`s ([[SparkErrors]]): the log core finds it through
 * `META-INF/services/io.strata.log.Engine` in the connector's jar.
 */
final class SparkEngine extends io.strata.log.Engine {
  def name: String = s"Apache-Spark/${org.apache.spark.SPARK_VERSION}"

  override def exception[E <: StrataException](kind: ErrorKind[E], condition: String, parameters: Map[String, String],
                                               cause: Throwable): E = SparkErrors.make(kind, condition, parameters, cause)
}
