package io.strata.log

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path => JPath}

import org.scalatest.funsuite.AnyFunSuite

class CorruptLogSuite extends AnyFunSuite with LogTestSupport {

  private def name(v: Long): String = f"$v%020d.json"
  private def cpName(v: Long): String = f"$v%020d.checkpoint.parquet"

  private def dataFile(table: JPath, file: String): AddFile = {
    Files.write(table.resolve(file), s"data of $file".getBytes(UTF_8))
    add(file, size = file.length + 8L)
  }

  /** Versions 0..n: version 0 adds a0, version v adds fv and gv (3 lines: commitInfo, add, add). Data files exist. */
  private def buildTable(n: Int): JPath = {
    val table = tempDir("corrupt")
    val log = createTable(table, files = Seq(dataFile(table, "a0.parquet")))
    (1 to n).foreach(v => append(log, dataFile(table, s"f$v.parquet"), dataFile(table, s"g$v.parquet")))
    table
  }

  private def expectedFiles(v: Int): Set[String] =
    Set("a0.parquet") ++ (1 to v).flatMap(i => Seq(s"f$i.parquet", s"g$i.parquet"))

  /** The table as a reader in a new JVM sees it (no snapshot cached from before the damage). */
  private def open(table: JPath): TableLog = {
    val log = TableLog.forPath(hpath(table), newConf())
    SnapshotCache.invalidate(log.tablePath.toString)
    log
  }

  /** The load must fail with `T`, and leave every file of the table (data and log) byte-identical. */
  private def loadFails[T <: StrataException](table: JPath, load: TableLog => Any = _.snapshot())(
      implicit ct: scala.reflect.ClassTag[T]): T = {
    val before = contentDigests(table)
    val e = intercept[T](load(open(table)))
    assert(contentDigests(table) == before, "a failed load must not touch any file")
    e
  }

  private def lines(file: JPath): Seq[String] = new String(Files.readAllBytes(file), UTF_8).split("\n").toSeq

  private def deleteWithCrc(file: JPath): Unit = {
    Files.delete(file)
    Files.deleteIfExists(file.resolveSibling(s".${file.getFileName}.crc"))
  }

  test("a commit file with invalid JSON in the middle names the file and the line") {
    val table = buildTable(5)
    val f = deltaFile(table, 2)
    val ls = lines(f)
    assert(ls.size == 3)
    Files.write(f, Seq(ls(0), """{"add":{"path":"f2.parquet", oops""", ls(2)).mkString("", "\n", "\n").getBytes(UTF_8))
    val e = loadFails[CorruptLogException](table)
    assert(e.getMessage.contains(name(2)), e.getMessage)
    assert(e.getMessage.contains("line 2"), e.getMessage)
    assert(e.getMessage.contains("version 2"))
    // versions before the damage still load
    assert(open(table).snapshotAt(1).files.map(_.path).toSet == expectedFiles(1))
    // reading that commit on its own fails the same way
    intercept[CorruptLogException](open(table).readCommit(2))
  }

  test("a truncated commit file (cut in the middle of its last line) names the file") {
    val table = buildTable(5)
    val f = deltaFile(table, 5)
    val bytes = Files.readAllBytes(f)
    val text = new String(bytes, UTF_8)
    val lastStart = text.stripSuffix("\n").lastIndexOf('\n') + 1
    val cut = lastStart + (text.length - lastStart) / 2
    Files.write(f, text.substring(0, cut).getBytes(UTF_8))
    val e = loadFails[CorruptLogException](table)
    assert(e.getMessage.contains(name(5)), e.getMessage)
    assert(e.getMessage.contains("line 3"), e.getMessage)
    assert(open(table).snapshotAt(4).files.map(_.path).toSet == expectedFiles(4))
  }

  test("an empty commit file names the file") {
    val table = buildTable(5)
    Files.write(deltaFile(table, 3), Array.emptyByteArray)
    val e = loadFails[CorruptLogException](table)
    assert(e.getMessage.contains(name(3)) && e.getMessage.contains("empty"), e.getMessage)
    // a file of blank lines is just as empty
    Files.write(deltaFile(table, 3), "\n\n".getBytes(UTF_8))
    assert(loadFails[CorruptLogException](table).getMessage.contains(name(3)))
  }

  test("a missing commit in the middle names the missing file: missing (its own condition), not corrupt") {
    val table = buildTable(5)
    Files.delete(deltaFile(table, 3))
    val e = loadFails[MissingLogFileException](table)
    assert(e.getMessage.contains(name(3)), e.getMessage)
    assert(e.getMessage.contains("missing") && e.getCondition == "STRATA_LOG_FILE_MISSING")
    assert(!e.isInstanceOf[CorruptLogException])
    // read on its own, the commit is missing too
    assert(intercept[MissingLogFileException](open(table).readCommit(3)).getMessage.contains(name(3)))
    val e2 = loadFails[MissingLogFileException](table, _.snapshotAt(4))
    assert(e2.getMessage.contains(name(3)))
    assert(open(table).snapshotAt(2).files.map(_.path).toSet == expectedFiles(2))
    // a writer cannot commit on top of a broken log either, and writes nothing
    val before = contentDigests(table)
    intercept[MissingLogFileException](append(open(table), add("new.parquet")))
    assert(contentDigests(table) == before)
  }

  test("a missing checkpoint whose earlier commits were cleaned up names the checkpoint") {
    val table = buildTable(12)
    assert(Files.exists(checkpointFile(table, 10)))
    assert(new String(Files.readAllBytes(logDir(table).resolve("_last_checkpoint")), UTF_8).contains("\"version\":10"))
    deleteWithCrc(checkpointFile(table, 10))
    (0 to 9).foreach(v => Files.delete(deltaFile(table, v)))
    val e = loadFails[MissingLogFileException](table)
    assert(e.getMessage.contains(cpName(10)), e.getMessage)
  }

  test("a missing checkpoint whose commits are all still there is rebuilt around") {
    val table = buildTable(12)
    deleteWithCrc(checkpointFile(table, 10))
    val snap = open(table).snapshot()
    assert(snap.version == 12L)
    assert(snap.files.map(_.path).toSet == expectedFiles(12))
    assert(snap.segment.checkpointVersion.isEmpty)
    assert(snap.segment.commitFiles.map(_.getName) == (0L to 12L).map(name))
  }

  test("a corrupt _last_checkpoint is only a hint: the table still loads") {
    val table = buildTable(12)
    val hint = logDir(table).resolve("_last_checkpoint")
    deleteWithCrc(hint)
    Files.write(hint, "\u0000garbage{{{ not json".getBytes(UTF_8))
    val snap = open(table).snapshot()
    assert(snap.version == 12L)
    assert(snap.segment.checkpointVersion.contains(10L))
    assert(snap.files.map(_.path).toSet == expectedFiles(12))
    // with a real gap as well, the error is about the gap, not about the hint
    Files.delete(deltaFile(table, 11))
    val e = loadFails[MissingLogFileException](table)
    assert(e.getMessage.contains(name(11)), e.getMessage)
    // a hint that points at a version that never existed is ignored just the same
    Files.write(hint, """{"version":99,"size":3}""".getBytes(UTF_8))
    assert(open(table).snapshotAt(10).files.map(_.path).toSet == expectedFiles(10))
  }

  test("an unreadable checkpoint file (with the commits before it cleaned up) is named") {
    val table = buildTable(12)
    val cp = checkpointFile(table, 10)
    deleteWithCrc(cp)
    Files.write(cp, "this is not parquet".getBytes(UTF_8))
    (0 to 9).foreach(v => Files.delete(deltaFile(table, v)))
    val e = loadFails[CorruptLogException](table)
    assert(e.getMessage.contains(cpName(10)), e.getMessage)
  }

  test("a malformed action inside a checkpoint is a CorruptLogException naming the checkpoint file") {
    val table = buildTable(12)
    val snap10 = open(table).snapshotAt(10)
    val cp = checkpointFile(table, 10)
    deleteWithCrc(cp)
    // a metaData row without its required id
    Checkpoints.write(hpath(cp), Iterator(snap10.protocol, snap10.metadata.copy(id = null)) ++
      snap10.files.iterator, newConf())
    (0 to 9).foreach(v => Files.delete(deltaFile(table, v)))
    val e = loadFails[CorruptLogException](table)
    assert(e.getMessage.contains(cpName(10)), e.getMessage)
    assert(e.getMessage.contains("metaData.id"), e.getMessage)
  }

  test("an add path that is not a valid URI reference is a CorruptLogException naming the commit file") {
    val table = buildTable(2)
    writeCommit(table, 3, Seq(
      CommitInfo(ActionCodec.mapper.createObjectNode().put("operation", "WRITE")),
      AddFile("p=50%/bad path.parquet", Map.empty, 1L, 1L, dataChange = true)))
    val e = loadFails[CorruptLogException](table)
    assert(e.getMessage.contains(name(3)), e.getMessage)
    assert(open(table).snapshotAt(2).files.size == 5)
  }

  private def handWrittenTable(protocol: Protocol): JPath = {
    val table = tempDir("protocol")
    val file = dataFile(table, "a.parquet")
    writeCommit(table, 0, Seq(
      CommitInfo(ActionCodec.mapper.createObjectNode().put("timestamp", 1L).put("operation", "CREATE TABLE")),
      protocol, metadata(), file))
    table
  }

  test("reader version 4 is refused naming the version") {
    val table = handWrittenTable(Protocol(4, 7))
    val snap = open(table).snapshot()
    val e = intercept[UnsupportedProtocolException](ProtocolSupport.checkReadable(snap.protocol, table.toString))
    assert(e.getMessage.contains("reader version 4"), e.getMessage)
    val before = contentDigests(table)
    intercept[UnsupportedProtocolException](append(open(table), add("b.parquet")))
    assert(contentDigests(table) == before)
  }

  test("writing to a table with writer version 8 fails naming it, without a new version") {
    val table = handWrittenTable(Protocol(1, 8))
    val snap = open(table).snapshot()
    ProtocolSupport.checkReadable(snap.protocol, table.toString) // readable
    val before = contentDigests(table)
    val e = intercept[UnsupportedProtocolException](append(open(table), add("b.parquet")))
    assert(e.getMessage.contains("writer version 8"), e.getMessage)
    assert(contentDigests(table) == before)
    assert(latestVersion(table) == 0L)
  }

  test("reader 3 with an unknown reader feature names it") {
    val table = handWrittenTable(Protocol(3, 7, Some(Set("futureFeature")), Some(Set("futureFeature"))))
    val snap = open(table).snapshot()
    val e = intercept[UnsupportedProtocolException](ProtocolSupport.checkReadable(snap.protocol, table.toString))
    assert(e.getMessage.contains("futureFeature"), e.getMessage)
    val w = intercept[UnsupportedProtocolException](append(open(table), add("b.parquet")))
    assert(w.getMessage.contains("futureFeature"))
    assert(latestVersion(table) == 0L)
  }

  test("a log without protocol or metaData is corrupt, naming what is missing") {
    val table = tempDir()
    writeCommit(table, 0, Seq(metadata(), add("a.parquet")))
    assert(loadFails[CorruptLogException](table).getMessage.contains("no protocol"))
    val table2 = tempDir()
    writeCommit(table2, 0, Seq(Protocol(1, 2), add("a.parquet")))
    assert(loadFails[CorruptLogException](table2).getMessage.contains("no metaData"))
  }

  test("no table at all: TableNotFoundException naming the path") {
    val dir = tempDir("empty")
    val e = intercept[TableNotFoundException](open(dir).snapshot())
    assert(e.getMessage.contains(dir.getFileName.toString))
    assert(open(dir).snapshotOption().isEmpty)
    Files.createDirectories(logDir(dir))
    intercept[TableNotFoundException](open(dir).snapshotAt(0))
  }
}
