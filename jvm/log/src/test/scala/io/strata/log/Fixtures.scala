package io.strata.log

import java.nio.file.{Files, Path => JPath, Paths}

/** Where the tests find what lies outside their module, whichever directory their JVM runs in (jvm/log, jvm/spark). */
object Fixtures {
  /** The repository: the nearest directory at or above the working directory that holds build.sbt. */
  lazy val repoRoot: JPath = Iterator.iterate(Paths.get("").toAbsolutePath)(_.getParent).takeWhile(_ != null)
    .find(d => Files.isRegularFile(d.resolve("build.sbt")))
    .getOrElse(throw new AssertionError(s"No build.sbt at or above ${Paths.get("").toAbsolutePath}"))

  /**
   * delta-spark's golden tables (read-only fixtures, see shared/fixtures/README.md): STRATA_GOLDEN_TABLES, else
   * shared/fixtures/delta-golden beside the repository, else the workplace's copy.
   */
  lazy val goldenRoot: JPath = sys.env.get("STRATA_GOLDEN_TABLES").map(Paths.get(_)).getOrElse(
    Seq(repoRoot.resolveSibling("shared"), Paths.get("/work/shared")).map(_.resolve("fixtures").resolve("delta-golden"))
      .find(Files.isDirectory(_)).getOrElse(Paths.get("/work/shared/fixtures/delta-golden"))).toAbsolutePath.normalize

  /** One golden table, which must be there. */
  def goldenTable(name: String): JPath = Some(goldenRoot.resolve(name)).filter(Files.isDirectory(_))
    .getOrElse(throw new AssertionError(s"golden table $name not found under $goldenRoot"))

  /** Peer jars `make peer-jars` fetches (delta-spark, to compare bytes with; never shipped). */
  def peersDir: JPath = repoRoot.resolve("build").resolve("peers")
}
