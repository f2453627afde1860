package io.strata.log

import java.net.URI
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path => JPath}

import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

/**
 * Every Delta table in the delta-spark golden set (read-only fixtures, see /work/shared/fixtures/README.md) either
 * loads completely and correctly, or is refused with a Strata error that names the feature, file or version.
 */
class GoldenTablesSuite extends AnyFunSuite with LogTestSupport {
  private val root: JPath = Fixtures.goldenRoot

  /** Every directory below `root` holding a `_delta_log` directory, as a path relative to `root`. */
  private lazy val tables: Seq[String] = if (!Files.isDirectory(root)) Nil else {
    val s = Files.walk(root, 4)
    try s.iterator.asScala.filter(p => p.getFileName.toString == FileNames.LogDirName && Files.isDirectory(p))
      .map(p => root.relativize(p.getParent).toString).toSeq.sorted
    finally s.close()
  }

  /**
   * Tables Strata must refuse: a reader feature or version it does not implement, or a log the protocol says is
   * broken (no metaData, no protocol, a gap in the versions, a checkpoint without metaData or protocol).
   * Every other table must load (see [[judgement]] for the few exceptions).
   */
  private val mustReject = Set(
    "deltalog-invalid-protocol-version", "versions-not-contiguous", "deltalog-state-reconstruction-without-metadata",
    "deltalog-state-reconstruction-without-protocol",
    // (issue 24: v2-checkpoint-json / -parquet, spark-variant-checkpoint, type-widening(-nested) now load, and so do
    // the column-mapped tables, modes id and name, icebergCompatV2's too: a writer feature only blocks writes)
    "deltalog-state-reconstruction-from-checkpoint-missing-metadata",
    "deltalog-state-reconstruction-from-checkpoint-missing-protocol",
    "data-reader-absolute-paths-escaped-chars") // its log has no metaData action at all

  /**
   * Tables where loading and a clean refusal are both defensible; a refusal must then be for exactly this reason
   * (the text its message must contain). delta-spark reads the schemaString-less ones (as an empty schema).
   */
  private val judgement = Map(
    // metaData without schemaString (required by PROTOCOL.md; delta-spark treats it as an empty schema)
    "canonicalized-paths-normal-a" -> "metaData.schemaString", "canonicalized-paths-normal-b" -> "metaData.schemaString",
    "canonicalized-paths-special-a" -> "metaData.schemaString", "canonicalized-paths-special-b" -> "metaData.schemaString",
    "deltalog-commit-info" -> "metaData.schemaString", "update-deleted-directory" -> "metaData.schemaString",
    // its _last_checkpoint is damaged (only a hint: must not be the reason) and its metaData has no schemaString
    "corrupted-last-checkpoint" -> "metaData.schemaString",
    // the Hadoop .crc of 00000000000000000010.checkpoint.parquet is stale (covers 10,752 of its 14,800 bytes);
    // commits 0..14 are all there to rebuild the table without it
    "checkpoint" -> "00000000000000000010.checkpoint.parquet")

  private val summary = new java.util.concurrent.ConcurrentSkipListMap[String, String]()

  /** The raw log lines of a table's commit files (to know which features and versions it talks about). */
  private def rawProtocols(logDir: JPath): Seq[Protocol] = {
    val s = Files.list(logDir)
    try s.iterator.asScala.filter(_.getFileName.toString.matches("""\d{20}\.json""")).toSeq.flatMap { f =>
      new String(Files.readAllBytes(f), UTF_8).split("\n").filter(_.contains("\"protocol\"")).flatMap { l =>
        try Some(ActionCodec.parse(l)).collect { case p: Protocol => p } catch { case NonFatal(_) => None }
      }
    } finally s.close()
  }

  private def highestVersion(logDir: JPath): Long = {
    val s = Files.list(logDir)
    try s.iterator.asScala.flatMap(p => FileNames.classify(p.getFileName.toString)).map(_.version).max
    finally s.close()
  }

  /** A table path as delta-spark compares them: absolute, qualified with the file scheme, URI-normalized. */
  private def canonical(table: JPath, actionPath: String): String = {
    val u = new URI(actionPath)
    val abs = if (u.getScheme != null) u
      else if (u.getPath.startsWith("/")) new URI("file", null, u.getPath, null)
      else table.toUri.resolve(u)
    new URI(abs.getScheme, Option(abs.getAuthority).filter(_.nonEmpty).orNull, abs.getPath, null, null).normalize.toString
  }

  /**
   * Live files after replaying JSON commits 0..version with plain Jackson (independent of ActionCodec), keyed by path
   * and deletion vector id (storage type, path or inline data, offset) as PROTOCOL.md says.
   */
  private def jsonReplay(table: JPath, version: Long): Seq[String] = {
    val live = scala.collection.mutable.LinkedHashMap.empty[(String, String), String]
    def key(a: com.fasterxml.jackson.databind.JsonNode) = {
      val path = canonical(table, a.get("path").asText)
      val dv = Option(a.get("deletionVector")).filterNot(_.isNull).map(d => d.get("storageType").asText +
        d.get("pathOrInlineDv").asText + Option(d.get("offset")).filterNot(_.isNull).fold("")("@" + _.asText))
      (path, dv.getOrElse(""))
    }
    (0L to version).foreach { v =>
      val f = table.resolve(FileNames.LogDirName).resolve(f"$v%020d.json")
      new String(Files.readAllBytes(f), UTF_8).split("\n").filter(_.trim.nonEmpty).foreach { line =>
        val n = ActionCodec.mapper.readTree(line)
        Option(n.get("add")).foreach(a => live(key(a)) = key(a)._1)
        Option(n.get("remove")).foreach(r => live.remove(key(r)))
      }
    }
    live.values.toSeq
  }

  /** Whether the fixture holds any file outside `_delta_log` (some golden tables are log-only). */
  private def hasDataFiles(table: JPath): Boolean = {
    val s = Files.walk(table)
    try s.iterator.asScala.exists(p => Files.isRegularFile(p) &&
      !table.relativize(p).iterator.asScala.exists(_.toString == FileNames.LogDirName))
    finally s.close()
  }

  private def logFiles(logDir: JPath): Seq[String] = {
    val s = Files.list(logDir)
    try s.iterator.asScala.map(_.getFileName.toString).toSeq finally s.close()
  }

  if (tables.isEmpty) {
    test("golden tables") { fail(s"No golden tables under $root: set STRATA_GOLDEN_TABLES to shared/fixtures/delta-golden.") }
  }

  tables.foreach { rel =>
    test(s"golden table $rel") {
      val dir = root.resolve(rel)
      val logDir = dir.resolve(FileNames.LogDirName)
      val outcome = try {
        val snap = TableLog.forPath(hpath(dir), newConf()).snapshot()
        ProtocolSupport.checkReadable(snap.protocol, snap.tablePath.toString)
        Right(snap)
      } catch {
        case e: UnsupportedProtocolException => Left(e)
        case e: CorruptLogException => Left(e)
        case e: MissingLogFileException => Left(e)
        case e: TableNotFoundException => Left(e)
        // anything else (including other StrataExceptions, NPE, MatchError, ...) fails the test here
      }
      outcome match {
        case Right(snap) =>
          summary.put(rel, s"loaded: version ${snap.version}, ${snap.files.size} files, protocol " +
            s"(${snap.protocol.minReaderVersion},${snap.protocol.minWriterVersion})")
          info(summary.get(rel))
          assert(!mustReject(rel), s"$rel must be refused but loaded")
          assert(snap.version == highestVersion(logDir), "the snapshot is at the highest version in _delta_log")
          // the live files are what an independent replay of the JSON commits gives (when they are all there)
          val commits = logFiles(logDir).flatMap(FileNames.classify).collect { case FileNames.DeltaFile(v) => v }.toSet
          if ((0L to snap.version).forall(commits)) {
            val expected = jsonReplay(dir, snap.version).sorted
            assert(snap.files.map(f => canonical(dir, f.path)).sorted == expected, "live files differ from the log's")
          }
          // every add resolves to a data file, unless the fixture holds no data files at all (a log-only table)
          if (hasDataFiles(dir)) {
            val fs = snap.tablePath.getFileSystem(newConf())
            val missing = snap.files.map(f => snap.absolutePath(f.path)).filterNot(fs.exists)
            assert(missing.isEmpty, s"${missing.size} add paths do not resolve to a file, e.g. ${missing.take(3)}")
          }
        case Left(e) =>
          val msg = e.getMessage
          summary.put(rel, s"rejected: ${e.getClass.getSimpleName}: $msg")
          info(summary.get(rel))
          if (!mustReject(rel)) {
            val reason = judgement.getOrElse(rel, fail(s"$rel must load, but: $msg"))
            assert(msg.contains(reason), s"$rel may only be refused for '$reason', but: $msg")
          }
          val protocols = rawProtocols(logDir)
          val named = e match {
            case _: UnsupportedProtocolException =>
              val features = protocols.flatMap(p => p.readerFeatures.getOrElse(Set.empty) ++
                p.writerFeatures.getOrElse(Set.empty))
              features.exists(msg.contains) || """(reader|writer) version \d+""".r.findFirstIn(msg).isDefined
            case _: CorruptLogException | _: MissingLogFileException =>
              logFiles(logDir).exists(f => msg.contains(f)) || """\d{20}\.(json|checkpoint)""".r.findFirstIn(msg).isDefined ||
                """version \d+""".r.findFirstIn(msg).isDefined
            case _: TableNotFoundException => msg.contains(new Path(dir.toUri).toUri.getPath.stripSuffix("/"))
          }
          assert(named, s"the message names no feature, file or version: $msg")
      }
    }
  }

  override def afterAll(): Unit = {
    try {
      if (!summary.isEmpty) {
        val lines = summary.asScala.toSeq.map { case (t, s) => s"  $t -> $s" }
        println(s"Golden tables (${summary.size}):\n${lines.mkString("\n")}")
      }
    } finally super.afterAll()
  }
}
