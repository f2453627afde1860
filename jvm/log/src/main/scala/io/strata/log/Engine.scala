package io.strata.log

import java.util.ServiceLoader

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

/**
 * The engine a connector runs the log core in, named in every commit's `commitInfo.engineInfo` after Strata's own
 * version ("Strata/<version> Apache-Spark/4.1.1"). The log core knows no engine: a connector supplies one as a
 * [[java.util.ServiceLoader]] provider of this trait (a class with a public no-argument constructor, listed in its
 * jar's `META-INF/services/io.strata.log.Engine`), so every commit made through its jar names it, whichever entry
 * point started the write.
 */
trait Engine {
  /** `<name>/<version>`, as delta-spark's engineInfo names the engine ("Apache-Spark/4.1.1"). */
  def name: String

  /**
   * The exception `kind` makes for `condition` (Strata's errors are made here, so that an engine can hand its own
   * error handling subclasses it understands, e.g. Spark's `SparkThrowable`). The default is the log core's class.
   */
  def exception[E <: StrataException](kind: ErrorKind[E], condition: String, parameters: Map[String, String],
                                      cause: Throwable): E = kind.plain(condition, parameters, cause)
}

object Engine {
  private val logger = org.slf4j.LoggerFactory.getLogger(classOf[Engine])

  /** Strata's version, from `io/strata/strata-version.properties` (the connector's build writes it), else "unknown". */
  lazy val strataVersion: String = {
    val in = classOf[Engine].getResourceAsStream("/io/strata/strata-version.properties")
    if (in == null) "unknown" else try {
      val p = new java.util.Properties(); p.load(in); p.getProperty("version", "unknown")
    } finally in.close()
  }

  /** The engines connectors supply (normally one), looked up once. */
  private lazy val engines: Seq[Engine] =
    try ServiceLoader.load(classOf[Engine], classOf[Engine].getClassLoader).asScala.toSeq
    catch { case NonFatal(e) => logger.warn("Cannot load the engine named in commitInfo.engineInfo", e); Nil }

  /** commitInfo.engineInfo: "Strata/<version>" and the engine the connector supplies, if any. */
  lazy val info: String = (s"Strata/$strataVersion" +: engines.map(_.name)).mkString(" ")

  /** A Strata exception, made by the first engine a connector supplies (the log core's class without one). */
  def exception[E <: StrataException](kind: ErrorKind[E], condition: String, parameters: Map[String, String],
                                      cause: Throwable): E = engines.headOption match {
    case Some(engine) => engine.exception(kind, condition, parameters, cause)
    case None => kind.plain(condition, parameters, cause)
  }
}
