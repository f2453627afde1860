package io.strata

import java.io.File
import java.nio.file.Files

import scala.jdk.CollectionConverters._

/** Starts a separate JVM on the test class path (for multi-process and crash tests). */
object ChildJvm {
  def start(mainClass: String, args: String*): Process =
    startWith(Nil, Files.createTempFile("child-jvm", ".log").toFile, mainClass, args: _*)

  /** A child JVM with extra JVM options (`-D` settings), its output (stdout and stderr) going to `log`. */
  def startWith(jvmOptions: Seq[String], log: File, mainClass: String, args: String*): Process = {
    val java = new File(System.getProperty("java.home"), "bin/java").getPath
    val opts = sys.env.getOrElse("STRATA_TEST_JAVA_OPTS", "").split(" ").filter(_.nonEmpty).toSeq
    new ProcessBuilder((Seq(java, "-Xmx1g") ++ opts ++ jvmOptions ++
      Seq("-cp", System.getProperty("java.class.path"), mainClass) ++ args).asJava)
      .redirectErrorStream(true).redirectOutput(log).start()
  }

  def run(mainClass: String, args: String*): Int = {
    val p = start(mainClass, args: _*)
    p.waitFor()
  }
}
