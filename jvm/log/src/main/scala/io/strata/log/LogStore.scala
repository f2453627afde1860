package io.strata.log

import java.io.{FileNotFoundException, IOException}
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Paths, StandardOpenOption, FileAlreadyExistsException => NioExists}
import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileAlreadyExistsException, FileContext, FileStatus, FileSystem, Options, Path}

import scala.util.control.NonFatal

/**
 * Storage for `_delta_log`. The one guarantee a commit needs is [[putIfAbsent]]: create a file with its whole
 * content only if no file of that name exists, atomically across processes, and never show a partial file.
 * Which implementation serves a table is chosen by URI scheme in [[LogStore.forPath]].
 */
trait LogStore {
  def fs: FileSystem

  /** The lines of a log file. */
  def read(path: Path): Seq[String] = {
    val in = fs.open(path)
    try new String(in.readAllBytes(), UTF_8).split("\n", -1).toSeq.filter(_.nonEmpty)
    finally in.close()
  }

  /** The actions of one checkpoint file (part). */
  def readCheckpoint(path: Path): Iterator[Action] = Checkpoints.read(path, fs.getConf)

  /** The actions of one checkpoint file whose action column is one of `columns` ([[Checkpoints.read]]). */
  def readCheckpoint(path: Path, columns: Seq[String]): Iterator[Action] = Checkpoints.read(path, fs.getConf, columns)

  /** Writes a checkpoint file whole under a temporary name, then renames it into place; returns its size. */
  def writeCheckpoint(path: Path, actions: Iterator[Action],
                      format: Checkpoints.Format = Checkpoints.Format.Default): Long = {
    val tmp = tempPath(path)
    try {
      val size = Checkpoints.write(tmp, actions, fs.getConf, format)
      if (!fs.rename(tmp, path) && !fs.exists(path)) throw new IOException(s"Could not rename $tmp to $path")
      size
    } finally fs.delete(tmp, false)
  }

  /** Creates `path` holding `lines` (newline-separated) or throws [[FileAlreadyExistsException]]. */
  def putIfAbsent(path: Path, lines: Seq[String]): Unit

  /** Replaces `path` (used only for hints such as `_last_checkpoint`, never for commits). */
  def overwrite(path: Path, lines: Seq[String]): Unit = {
    val tmp = tempPath(path)
    write(tmp, lines)
    if (!fs.rename(tmp, path)) {
      fs.delete(path, false)
      if (!fs.rename(tmp, path)) { fs.delete(tmp, false); throw new IOException(s"Could not write $path") }
    }
  }

  /** The files in a log directory, or nothing when it does not exist. */
  def list(dir: Path): Seq[FileStatus] =
    try fs.listStatus(dir).toSeq catch { case _: FileNotFoundException => Nil }

  /** One log file's status, or None when it does not exist: one metadata call, where [[list]] lists the whole log. */
  def status(path: Path): Option[FileStatus] =
    try Some(fs.getFileStatus(path)) catch { case _: FileNotFoundException => None }

  protected def tempPath(path: Path): Path = new Path(path.getParent, s".${path.getName}.${UUID.randomUUID()}.tmp")

  protected def write(path: Path, lines: Seq[String]): Unit = {
    val out = fs.create(path, false)
    try { out.write(lines.mkString("", "\n", "\n").getBytes(UTF_8)); out.hsync() } finally out.close()
  }
}

object LogStore {
  /** Hadoop/Spark conf key naming the LogStore class for a scheme (a class with a public `(FileSystem)` constructor). */
  def implKey(scheme: String): String = s"strata.logStore.$scheme.impl"

  /**
   * Chooses the log store for a table path by URI scheme; unsafe schemes fail rather than commit unsafely. Object
   * stores without a Strata log store (GCS, Azure) are refused by the path's scheme before their file system is
   * loaded, so the refusal is the same whether or not their connector is on the class path.
   */
  def forPath(tablePath: Path, conf: Configuration): LogStore = {
    def configured(scheme: String) = Option(conf.get(implKey(scheme))).orElse(Option(conf.get("spark.hadoop." + implKey(scheme))))
    val named = Option(tablePath.toUri.getScheme).map(_.toLowerCase)
    named.filter(configured(_).isEmpty).flatMap(refusal(tablePath, _)).foreach(m => throw UnsafeLogStoreException("STRATA_UNSAFE_LOG_STORE",
      m))
    val fs = tablePath.getFileSystem(conf)
    // The scheme the table path names (what the user configures), not the one its FileSystem class reports.
    val scheme = named.orElse(Option(fs.getUri.getScheme).map(_.toLowerCase)).getOrElse("file")
    configured(scheme) match {
      case Some(cls) =>
        try Class.forName(cls).getConstructor(classOf[FileSystem]).newInstance(fs).asInstanceOf[LogStore]
        catch { case NonFatal(e) =>
          throw UnsafeLogStoreException("STRATA_UNSAFE_LOG_STORE",
            s"Cannot use log store class '$cls' set by ${implKey(scheme)}: $e. " +
            "It must extend io.strata.log.LogStore and have a public constructor taking a Hadoop FileSystem.")
        }
      case None => scheme match {
        case "file" => new LocalLogStore(fs)
        case "hdfs" | "viewfs" => new HdfsLogStore(fs)
        case "s3a" | "s3" if fs.getClass.getName == S3LogStore.S3AFileSystemClass => new S3LogStore(fs)
        case "s3a" | "s3" => throw UnsafeLogStoreException("STRATA_UNSAFE_LOG_STORE",
          s"Strata commits to S3 only through Hadoop's S3A client (${S3LogStore.S3AFileSystemClass}, hadoop-aws " +
            s"3.4.2+), which can create a commit with a conditional PUT; $tablePath is served by " +
            s"${fs.getClass.getName}. Set spark.hadoop.fs.$scheme.impl=${S3LogStore.S3AFileSystemClass}.")
        case other => throw UnsafeLogStoreException("STRATA_UNSAFE_LOG_STORE", refusal(tablePath, other).getOrElse(
          s"Strata cannot commit safely to $tablePath: the '$other' file system has no atomic put-if-absent " +
            s"that Strata knows to use (Strata commits to 'file', 'hdfs', 'viewfs', 's3a' and 's3' paths), and committing " +
            s"without one can lose concurrent commits. ${bringYourOwn(other)}"))
      }
    }
  }

  private def bringYourOwn(scheme: String): String =
    s"To commit anyway, set spark.hadoop.${implKey(scheme)} to a LogStore class (extending io.strata.log.LogStore, " +
      "with a public constructor taking a Hadoop FileSystem) whose putIfAbsent is atomic on that store."

  /** Why Strata does not commit to the object stores it knows but has no log store for; None for other schemes. */
  private def refusal(tablePath: Path, scheme: String): Option[String] = {
    val missing = scheme match {
      case "gs" => Some("on Google Cloud Storage a safe commit is an upload that creates the commit object only if " +
        "no object of that name exists (the precondition ifGenerationMatch=0), and Strata has no log store that " +
        "issues it yet: none has been tested against a GCS server")
      case "abfs" | "abfss" => Some("on Azure Data Lake Storage a safe commit must appear whole under its name " +
        "only if no file of that name exists; the ABFS connector's create without overwrite refuses an existing " +
        "file, but creates the file empty and appends its content afterwards (a reader can see an empty or partial " +
        "commit), and its rename without overwrite is atomic only on accounts with a hierarchical namespace. " +
        "Strata has no log store for ABFS yet: none has been tested against Azure")
      case "wasb" | "wasbs" => Some("the WASB connector (Azure Blob Storage, deprecated in Hadoop) has neither a " +
        "create that atomically refuses an existing blob (it checks, then writes) nor an atomic rename (it copies, " +
        "then deletes), so concurrent writers could replace each other's commits")
      case _ => None
    }
    missing.map(m => s"Strata cannot commit safely to $tablePath: $m. ${bringYourOwn(scheme)}")
  }
}

/**
 * The local file system: the content goes to a temporary file, then a hard link gives it its final name.
 * link(2) fails if the name exists, atomically across processes, and the file is complete before it is visible.
 */
final class LocalLogStore(val fs: FileSystem) extends LogStore {
  override def putIfAbsent(path: Path, lines: Seq[String]): Unit = {
    val target = Paths.get(fs.makeQualified(path).toUri)
    Files.createDirectories(target.getParent)
    val tmp = target.resolveSibling(s".${target.getFileName}.${UUID.randomUUID()}.tmp")
    val ch = java.nio.channels.FileChannel.open(tmp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)
    try {
      ch.write(java.nio.ByteBuffer.wrap(lines.mkString("", "\n", "\n").getBytes(UTF_8)))
      ch.force(true)
    } finally ch.close()
    try Files.createLink(target, tmp)
    catch {
      case _: NioExists => throw new FileAlreadyExistsException(s"$path already exists")
      case e: UnsupportedOperationException => throw UnsafeLogStoreException("STRATA_UNSAFE_LOG_STORE",
        s"The file system under $path does not support hard links, which Strata's local log store needs for " +
          s"atomic commits ($e).")
    } finally Files.deleteIfExists(tmp)
  }
}

/**
 * HDFS: write a temporary file, then rename it without overwrite. FileContext's rename(NONE) is atomic on HDFS only
 * (object stores emulate it with copy and delete), so this store serves `hdfs` and `viewfs` paths alone.
 */
final class HdfsLogStore(val fs: FileSystem) extends LogStore {
  override def putIfAbsent(path: Path, lines: Seq[String]): Unit = {
    val tmp = tempPath(path)
    write(tmp, lines)
    try FileContext.getFileContext(fs.getUri, fs.getConf).rename(tmp, path, Options.Rename.NONE)
    catch {
      case e: FileAlreadyExistsException => fs.delete(tmp, false); throw e
      case NonFatal(e) => fs.delete(tmp, false); throw e
    }
  }
}
