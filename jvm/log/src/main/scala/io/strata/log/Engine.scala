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

  /** commitInfo.engineInfo: "Strata/<version>" and the engine the connector supplies, if any. Looked up once. */
  lazy val info: String = {
    val engines = try ServiceLoader.load(classOf[Engine], classOf[Engine].getClassLoader).asScala.map(_.name).toSeq
    catch { case NonFatal(e) => logger.warn("Cannot load the engine named in commitInfo.engineInfo", e); Nil }
    (s"Strata/$strataVersion" +: engines).mkString(" ")
  }
}
