package io.strata

import io.strata.ScalaSources.{Source, Use}
import io.strata.log.Fixtures
import org.scalatest.funsuite.AnyFunSuite

import scala.jdk.CollectionConverters._

/**
 * The layout's rules (docs/architecture.md), checked on the main sources of both modules read as text
 * ([[ScalaSources]]): (a) the log core (jvm/log) names no Spark class; (b) the packages io.strata.* form no cycle;
 * (c) only the forwarder package org.apache.spark.sql.strata touches Spark internals; (d) no production source
 * carries a test hook (`strata.test.` settings); (e) whether a protocol has a table feature is asked of the feature
 * registry (io.strata.log.TableFeatures) only. Each failure lists every offending place, file and line, and says
 * what to do.
 */
class ArchitectureSuite extends AnyFunSuite {
  import ArchitectureSuite._

  private lazy val logCore = ScalaSources.under(Fixtures.repoRoot, "jvm/log/src/main")
  private lazy val connector = ScalaSources.under(Fixtures.repoRoot, "jvm/spark/src/main")

  test("scanner: comments and strings blanked, imports expanded, fully qualified names found") {
    val src = new Source("X.scala", Seq(
      "package io.strata.write",
      "import io.strata.{log => l, ChildJvm}, org.apache.spark.sql.{classic, SparkSession}",
      "// io.strata.read.Gone  org.apache.spark.sql.classic",
      "/* io.strata.read.Gone /* nested */ still a comment */ val c = '\"'",
      "class X { import io.strata.table._",
      "  val s = s\"${io.strata.optimize.AutoCompaction.Property} org.apache.spark.Old\"; spark.sessionState }",
      "val t = \"\"\"io.strata.read.Gone \"\"\" + io.strata.maintenance.Vacuum").mkString("\n"))
    assert(src.pkg == "io.strata.write")
    assert(src.imports.map(u => u.line -> u.name) == Seq(2 -> "io.strata.log", 2 -> "io.strata.ChildJvm",
      2 -> "org.apache.spark.sql.classic", 2 -> "org.apache.spark.sql.SparkSession", 5 -> "io.strata.table._"))
    assert(src.uses(StrataName).map(u => u.line -> u.name) == Seq(
      6 -> "io.strata.optimize.AutoCompaction.Property", 7 -> "io.strata.maintenance.Vacuum"))
    assert(src.uses(SparkName, src.codeAndStrings).map(_.line) == Seq(6))
    assert(src.uses(InternalCall).map(u => u.line -> u.name) == Seq(6 -> "sessionState"))
    assert(packageOf("io.strata.optimize.AutoCompaction.Property", Set("io.strata", "io.strata.optimize"))
      .contains("io.strata.optimize"))
  }

  test("(a) the log core (jvm/log/src/main) references no Spark class, not even by name in a string") {
    assert(logCore.nonEmpty, "no sources under jvm/log/src/main")
    val spark = logCore.flatMap(s => s.imports.filter(_.name.startsWith("org.apache.spark")) ++
      s.uses(SparkName, s.codeAndStrings)).sortBy(u => (u.file, u.line)).distinct
    if (spark.nonEmpty) fail(s"${spark.size} Spark reference(s) in the log core:\n${spark.mkString("  ", "\n  ", "\n")}" +
      "The log core (io.strata.log) runs without Spark: move the code that needs Spark to the connector (jvm/spark), " +
      "or let the connector supply what the log core needs (as io.strata.SparkEngine names Spark in commitInfo " +
      "through io.strata.log.Engine, or a connector PostCommitHook registered on the transaction).")
  }

  test("(b) the packages io.strata.* form no cycle (edges: imports and fully qualified names)") {
    val sources = (logCore ++ connector).filter(_.pkg.startsWith("io.strata"))
    val known = sources.map(_.pkg).toSet
    val edges: Map[(String, String), Seq[Use]] = sources.flatMap { s =>
      val relative = s.imports.filterNot(_.name.startsWith("io.strata.")).map(u => u.copy(name = s"${s.pkg}.${u.name}"))
        .filter(u => packageOf(u.name, known).exists(_.startsWith(s.pkg + ".")))
      (s.imports ++ relative ++ s.uses(StrataName)).flatMap(u => packageOf(u.name, known).filter(_ != s.pkg)
        .map(to => (s.pkg, to) -> u))
    }.groupBy(_._1).map { case (e, us) => e -> us.map(_._2).distinct }
    val cycles = stronglyConnected(edges.keySet).filter(_.size > 1)
    if (cycles.nonEmpty) fail(s"${cycles.size} package cycle(s) among io.strata.*:\n" + cycles.zipWithIndex.map {
      case (group, i) =>
        val inside = edges.filter { case ((a, b), _) => group(a) && group(b) }.toSeq.sortBy(_._1)
        s"cycle ${i + 1}: ${group.toSeq.sorted.mkString(", ")}\n" +
          s"  for example ${shortestLoop(group.min, inside.map(_._1)).mkString(" -> ")}\n" +
          "  its edges, each with one use (of how many):\n" + inside.map { case ((a, b), us) =>
            s"    $a -> $b (${us.size}): ${us.head}"
          }.mkString("\n")
    }.mkString("\n") + "\nMake every dependency point one way (docs/architecture.md, \"Packages\"): for each cycle, move " +
      "what one side uses into the package that owns that concern, or into a lower package both may use, until no " +
      "edge above closes a loop.")
  }

  test("(c) only org.apache.spark.sql.strata touches Spark internals (sql.classic, .sessionState, .sharedState)") {
    val outside = connector.filterNot(s => s.pkg == Forwarders || s.pkg.startsWith(Forwarders + "."))
    val internal = outside.flatMap { s =>
      s.imports.filter(u => isClassic(u.name)) ++ s.uses(ClassicName) ++ s.uses(InternalCall)
    }.sortBy(u => (u.file, u.line)).distinct
    if (internal.nonEmpty) fail(s"${internal.size} use(s) of Spark internals outside $Forwarders:\n" +
      internal.map(u => s"  $u   [${u.name}]").mkString("\n") + "\nSpark internals (org.apache.spark.sql.classic, " +
      s"SparkSession.sessionState / sharedState) change between Spark releases: reach them only in $Forwarders " +
      "(jvm/spark/src/main/scala/org/apache/spark/sql/strata). Move each use above into a method there that takes and " +
      "returns public Spark types, and call that method instead.")
  }

  test("(d) no production source (jvm/*/src/main but jvm/testkit's) mentions a test setting `strata.test.`") {
    val modules = {
      val s = java.nio.file.Files.list(Fixtures.repoRoot.resolve("jvm"))
      try s.iterator.asScala.map(_.getFileName.toString).filter(m => m != "testkit" &&
        java.nio.file.Files.isDirectory(Fixtures.repoRoot.resolve(s"jvm/$m/src/main"))).toSeq.sorted
      finally s.close()
    }
    assert(Set("log", "spark").subsetOf(modules.toSet), s"production modules found: $modules")
    val hooks = modules.flatMap(m => ScalaSources.under(Fixtures.repoRoot, s"jvm/$m/src/main")).flatMap { s =>
      s.text.linesIterator.zipWithIndex.collect {
        case (line, i) if line.contains("strata.test.") => Use(s.file, i + 1, "strata.test.", line.trim)
      }
    }
    if (hooks.nonEmpty) fail(s"${hooks.size} test hook(s) in production sources:\n${hooks.mkString("  ", "\n  ", "\n")}" +
      "Production classes carry no test-only behaviour. Inject the fault from the test instead, through a class only " +
      "tests configure: a log store (io.strata.testkit.FaultInjectingLogStore, plugged in by strata.logStore.<scheme>" +
      ".impl; jvm/testkit, also packaged for pytest's child drivers), a Hadoop file system (the test's " +
      "io.strata.write.FaultInjectingFileSystem, plugged in by fs.file.impl), or Spark's own task and listener APIs.")
  }

  test("(e) a protocol's feature lists are queried by the feature registry and the protocol rules only") {
    val offenders = (logCore ++ connector).filterNot(s => FeatureRuleFiles(new java.io.File(s.file).getName))
      .flatMap(_.uses(FeatureCheck)).sortBy(u => (u.file, u.line))
    if (offenders.nonEmpty) fail(s"${offenders.size} feature check(s) outside the registry:\n" +
      offenders.mkString("  ", "\n  ", "\n") + "Whether a table has a feature is one question with one answer " +
      "(listed, or implied by legacy protocol versions; for readers or for writers): ask the feature's entry in " +
      "io.strata.log.TableFeatures (supportedBy for writers, readBy for readers, isUsedBy for the metadata), or add " +
      "the query there.")
  }
}

object ArchitectureSuite {
  /** The one package that may use Spark internals: forwarders for the connector. */
  val Forwarders = "org.apache.spark.sql.strata"
  val StrataName = """(?<![\w.$])(?:_root_\.)?(io\.strata(?:\.[A-Za-z_][\w$]*)*)""".r
  val SparkName = """(?<![\w$])(org\.apache\.spark)(?![\w$])""".r
  val ClassicName = """(?<![\w$])(org\.apache\.spark\.sql\.classic)(?![\w$])""".r
  val InternalCall = """\.\s*(sessionState|sharedState)(?![\w$])""".r
  /** A membership test on a protocol's feature lists (reading them whole, to write or show them, is no check). */
  val FeatureCheck = """(?<![\w$])((?:reader|writer)Features\s*\.\s*(?:exists|contains|forall|find|filter|getOrElse))""".r
  /** The feature registry and the protocol rules built on it: the files that may query the lists. */
  val FeatureRuleFiles = Set("TableFeatures.scala", "TableFeature.scala", "ProtocolSupport.scala", "FeatureDrop.scala",
    "TableProperties.scala")

  def isClassic(name: String): Boolean =
    name == "org.apache.spark.sql.classic" || name.startsWith("org.apache.spark.sql.classic.")

  /** The longest prefix of the dotted `name` that is one of the `known` packages. */
  def packageOf(name: String, known: Set[String]): Option[String] =
    name.split('.').inits.map(_.mkString(".")).find(known)

  /** Tarjan's strongly connected components of the graph with these edges. */
  def stronglyConnected(edges: Set[(String, String)]): Seq[Set[String]] = {
    val next = edges.groupMap(_._1)(_._2).withDefaultValue(Set.empty)
    val nodes = (edges.map(_._1) ++ edges.map(_._2)).toSeq.sorted
    val (index, low) = (scala.collection.mutable.Map.empty[String, Int], scala.collection.mutable.Map.empty[String, Int])
    val stack = scala.collection.mutable.Stack.empty[String]
    val found = Seq.newBuilder[Set[String]]
    def visit(v: String): Unit = {
      index(v) = index.size; low(v) = index(v); stack.push(v)
      next(v).toSeq.sorted.foreach { w =>
        if (!index.contains(w)) { visit(w); low(v) = math.min(low(v), low(w)) }
        else if (stack.contains(w)) low(v) = math.min(low(v), index(w))
      }
      if (low(v) == index(v)) {
        var group = Set.empty[String]
        var w = ""
        while (w != v) { w = stack.pop(); group += w }
        found += group
      }
    }
    nodes.foreach(v => if (!index.contains(v)) visit(v))
    found.result()
  }

  /** A shortest path from `start` back to itself over `edges` (breadth first): the packages in order. */
  def shortestLoop(start: String, edges: Seq[(String, String)]): Seq[String] = {
    val next = edges.groupMap(_._1)(_._2)
    var paths = next.getOrElse(start, Nil).sorted.map(Seq(start, _))
    var seen = Set(start)
    while (paths.nonEmpty && !paths.exists(_.last == start)) {
      seen ++= paths.map(_.last)
      paths = paths.flatMap(p => next.getOrElse(p.last, Nil).sorted.filter(n => n == start || !seen(n)).map(p :+ _))
    }
    paths.find(_.last == start).getOrElse(Seq(start))
  }
}