package io.strata.log

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path => JPath}
import java.security.MessageDigest

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.{BeforeAndAfterAll, Suite}

import scala.jdk.CollectionConverters._

/** `column = value` over a file's log partition values (a file without the value may hold anything). */
final case class PartitionIs(column: String, value: String) extends FilePredicate {
  val description = s"partition $column = $value"
  def mayMatch(pv: Map[String, Option[String]], stats: Option[String]): Boolean =
    !pv.contains(column) || pv(column).contains(value)
}

/** Temp tables on the real local file system, written through the real log code. */
trait LogTestSupport extends BeforeAndAfterAll { self: Suite =>
  private val created = new java.util.concurrent.ConcurrentLinkedQueue[JPath]()

  def tempDir(prefix: String = "strata-log"): JPath = {
    val d = Files.createTempDirectory(prefix)
    created.add(d)
    d
  }

  override def afterAll(): Unit = {
    try created.asScala.foreach(LogTestSupport.deleteRecursively)
    finally super.afterAll()
  }

  def newConf(): Configuration = new Configuration()

  def hpath(p: JPath): Path = new Path(p.toUri)

  def logDir(table: JPath): JPath = table.resolve(FileNames.LogDirName)

  def deltaFile(table: JPath, v: Long): JPath = logDir(table).resolve(f"$v%020d.json")
  def checkpointFile(table: JPath, v: Long): JPath = logDir(table).resolve(f"$v%020d.checkpoint.parquet")

  val SimpleSchema: String =
    """{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},""" +
      """{"name":"p","type":"string","nullable":true,"metadata":{}}]}"""

  def metadata(partitionColumns: Seq[String] = Nil, configuration: Map[String, String] = Map.empty,
               schema: String = SimpleSchema): Metadata =
    Metadata(id = java.util.UUID.randomUUID().toString, schemaString = schema, partitionColumns = partitionColumns,
      configuration = configuration, createdTime = Some(System.currentTimeMillis()))

  /** Creates a table (version 0) with the given metadata and initial files; returns its log. */
  def createTable(table: JPath, meta: Metadata = metadata(), files: Seq[AddFile] = Nil,
                  conf: Configuration = newConf()): TableLog = {
    val log = TableLog.forPath(hpath(table), conf)
    val txn = log.startTransaction()
    txn.updateMetadata(meta)
    val r = txn.commit(files, Operation("CREATE TABLE"))
    assert(r.version == 0L)
    log
  }

  def partitionIs(column: String, value: String): FilePredicate = PartitionIs(column, value)

  def add(path: String, partitionValues: Map[String, Option[String]] = Map.empty, size: Long = 10L,
          stats: Option[String] = None): AddFile =
    AddFile(path, partitionValues, size, System.currentTimeMillis(), dataChange = true, stats = stats)

  def append(log: TableLog, files: AddFile*): CommitResult =
    log.startTransaction().commit(files, Operation("WRITE", Map("mode" -> "\"Append\"")))

  /** Writes a commit file by hand (as another writer, or a corrupt one, would). */
  def writeCommit(table: JPath, version: Long, actions: Seq[Action]): Unit = {
    Files.createDirectories(logDir(table))
    Files.write(deltaFile(table, version), actions.map(ActionCodec.serialize).mkString("", "\n", "\n").getBytes(UTF_8))
  }

  /** Every regular file below `dir` with a digest of its bytes. */
  def contentDigests(dir: JPath): Map[String, String] = {
    val s = Files.walk(dir)
    try s.iterator.asScala.filter(Files.isRegularFile(_)).map { p =>
      val md = MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(p))
      dir.relativize(p).toString -> md.map("%02x".format(_)).mkString
    }.toMap
    finally s.close()
  }

  /** Names of the files in `_delta_log` (no checksum or temporary files). */
  def logFileNames(table: JPath): Seq[String] = {
    val s = Files.list(logDir(table))
    try s.iterator.asScala.map(_.getFileName.toString).toSeq.sorted finally s.close()
  }

  def commitVersions(table: JPath): Seq[Long] =
    logFileNames(table).flatMap(FileNames.classify).collect { case FileNames.DeltaFile(v) => v }.sorted

  def latestVersion(table: JPath): Long = commitVersions(table).max

  /** The actions of a commit file as written on disk. */
  def actionsOf(file: JPath): Seq[Action] =
    new String(Files.readAllBytes(file), UTF_8).split("\n").toSeq.filter(_.nonEmpty).map(ActionCodec.parse)
}

object LogTestSupport {
  def deleteRecursively(p: JPath): Unit = {
    if (Files.isDirectory(p, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
      val s = Files.list(p)
      try s.iterator.asScala.toList.foreach(deleteRecursively) finally s.close()
    }
    Files.deleteIfExists(p)
  }

  def copyRecursively(from: JPath, to: JPath): Unit = {
    val s = Files.walk(from)
    try s.iterator.asScala.foreach { src =>
      val dst = to.resolve(from.relativize(src).toString)
      if (Files.isDirectory(src)) Files.createDirectories(dst) else Files.copy(src, dst)
    } finally s.close()
  }
}
