package io.strata.log

import java.io.{File, IOException}
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files

import org.apache.hadoop.fs.{FSDataOutputStream, FileAlreadyExistsException, FileSystem, Path}

import scala.annotation.tailrec
import scala.util.control.NonFatal

/**
 * S3 through Hadoop's S3A client (`s3a://`, and `s3://` when `fs.s3.impl` is S3A). A commit is one conditional PUT
 * (`If-None-Match: *`, Hadoop 3.4.2+): S3 creates the object only if no object of that name exists, atomically, and
 * an object is visible only whole. There is no fallback: where the S3A client cannot send conditional PUTs (disabled,
 * or an S3A without them) this store refuses to commit, because S3A's plain `create(path, false)` is a HEAD then a
 * PUT and two writers can both pass the HEAD.
 *
 * Outcomes of a PUT: 412 Precondition Failed means the name exists; if it holds exactly our bytes, our own PUT landed
 * earlier and this answer is to a retry of it (a lost response, retried by the SDK or S3A), so the put succeeded;
 * otherwise another writer won ([[FileAlreadyExistsException]]). 409 ConditionalRequestConflict (a concurrent
 * conditional write in flight) is retried a bounded number of times. Any other I/O error is left to the caller,
 * which reads the version back (the commit loop in [[Transaction]]).
 *
 * The endpoint is probed once per JVM for each bucket and endpoint, before its first commit: S3A sending
 * `If-None-Match` proves nothing if the server ignores it (some S3-compatible servers do, and would then let two
 * writers replace each other's commits). The probe creates `_delta_log/.strata-probe-<uuid>` with a conditional PUT,
 * then again: the second must be refused (412); if it is accepted the store refuses to commit. The probe object is
 * deleted either way. Its cost, once per JVM per bucket and endpoint: two PUTs, a HEAD and a DELETE, then S3A's LIST
 * and, when `_delta_log/` is left empty, its directory-marker PUT (six requests, a few milliseconds on a local
 * network, one round trip each to S3).
 *
 * Checkpoints and `_last_checkpoint` are written with single uploads, never renamed (S3 has no rename): a checkpoint
 * is first written whole to a local temporary file, so a failure while writing it uploads nothing.
 */
final class S3LogStore(val fs: FileSystem) extends LogStore {
  import S3LogStore._

  @volatile private var conditionalCreateChecked = false

  /** Refuses to commit when the S3A client cannot send a conditional PUT, or the endpoint ignores one (the probe). */
  def requireConditionalCreate(path: Path): Unit = if (!conditionalCreateChecked) {
    val supported = try fs.hasPathCapability(path, ConditionalOverwrite) catch { case NonFatal(_) => false }
    if (!supported) throw UnsafeLogStoreException("STRATA_UNSAFE_LOG_STORE",
      s"Strata cannot commit safely to $path: the file system (${fs.getClass.getName}) cannot create a file with a " +
        s"conditional PUT (path capability '$ConditionalOverwrite' is missing), and without one concurrent writers " +
        s"can overwrite each other's commits. Use Hadoop's S3A client 3.4.2 or later (hadoop-aws 3.4.2, the Hadoop " +
        s"of Spark 4.1) with conditional writes enabled: spark.hadoop.$ConditionalCreateEnabledKey=true (its " +
        "default), and an S3 endpoint that honours If-None-Match on PUT.")
    val bucket = s"${fs.getUri.getHost} at $endpoint" // s3:// and s3a:// name the same bucket
    if (!ProbedEndpoints.contains(bucket)) {
      probeConditionalWrites(path)
      ProbedEndpoints.add(bucket)
    }
    conditionalCreateChecked = true
  }

  private def endpoint: String = Option(fs.getConf.get("fs.s3a.endpoint")).filter(_.nonEmpty).getOrElse("AWS S3")

  /** Creates a probe object twice with conditional PUTs: a server that honours them refuses the second (412). */
  private def probeConditionalWrites(commit: Path): Unit = {
    val probe = new Path(commit.getParent, s".strata-probe-${java.util.UUID.randomUUID()}")
    try {
      conditionalPut(probe, "first\n".getBytes(UTF_8))
      val refused = try { conditionalPut(probe, "second\n".getBytes(UTF_8)); false } catch {
        case e: IOException if isServerPreconditionFailed(e) => true
      }
      if (!refused) throw UnsafeLogStoreException("STRATA_UNSAFE_LOG_STORE",
        s"Strata cannot commit safely to ${commit.getParent}: the S3 endpoint ($endpoint) " +
          "ignored If-None-Match: a conditional PUT of an object that already existed was accepted and replaced it " +
          s"(probe object $probe, since deleted), so two writers could replace each other's commits. Use an S3 endpoint that " +
          "honours conditional writes (AWS S3 does; for other S3-compatible servers check that PUT with " +
          s"If-None-Match: * answers 412 when the object exists), or set spark.hadoop.${LogStore.implKey(Option(commit.toUri.getScheme).getOrElse(fs.getScheme))} " +
          "to a LogStore class whose putIfAbsent is atomic on that server.")
    } finally try fs.delete(probe, false) catch { case NonFatal(_) => } // only a leftover, never read as a commit
  }

  override def putIfAbsent(path: Path, lines: Seq[String]): Unit = {
    requireConditionalCreate(path)
    val bytes = lines.mkString("", "\n", "\n").getBytes(UTF_8)
    @tailrec def attempt(conflicts: Int): Unit = {
      val outcome = try { conditionalPut(path, bytes); None } catch {
        case e: IOException if isPreconditionFailed(e) => Some(Left(e))
        case e: IOException if isConditionalConflict(e) && conflicts < MaxConflictRetries => Some(Right(e))
      }
      outcome match {
        case None =>
        case Some(Left(e)) =>
          if (!holdsExactly(path, bytes)) {
            val lost = new FileAlreadyExistsException(s"$path already exists (written by another writer)")
            lost.initCause(e)
            throw lost
          } // else: our own earlier PUT of this content landed; this 412 answered a retry of it.
        case Some(Right(_)) =>
          Thread.sleep(ConflictBackoffMillis * (1L << conflicts.min(5)))
          attempt(conflicts + 1)
      }
    }
    attempt(0)
  }

  private def conditionalPut(path: Path, bytes: Array[Byte]): Unit = {
    val out: FSDataOutputStream = fs.createFile(path).overwrite(false).must(ConditionalOverwrite, true).build()
    writeWhole(out, bytes)
  }

  /** Writes and closes `out` (the upload happens at close); on a failed write the upload is aborted, never closed. */
  private def writeWhole(out: FSDataOutputStream, bytes: Array[Byte]): Unit = {
    try out.write(bytes) catch { case NonFatal(e) => abortQuietly(out); throw e }
    out.close()
  }

  private def abortQuietly(out: FSDataOutputStream): Unit =
    try out.abort() catch { case NonFatal(_) => try out.close() catch { case NonFatal(_) => } }

  /** Whether `path` holds exactly `bytes`; an error reading it is an ambiguous outcome left to the caller. */
  private def holdsExactly(path: Path, bytes: Array[Byte]): Boolean = {
    val in = fs.open(path)
    try java.util.Arrays.equals(in.readAllBytes(), bytes) finally in.close()
  }

  /** Written whole to a local file first, then uploaded: the checkpoint appears whole or not at all. */
  override def writeCheckpoint(path: Path, actions: Iterator[Action], format: Checkpoints.Format): Long = {
    val local = File.createTempFile("strata-checkpoint-", ".parquet")
    Files.delete(local.toPath) // the Parquet writer creates it
    val localPath = new Path(local.toURI)
    try {
      val size = Checkpoints.write(localPath, actions, fs.getConf, format)
      fs.copyFromLocalFile(false, true, localPath, path)
      size
    } finally {
      Files.deleteIfExists(local.toPath)
      Files.deleteIfExists(new File(local.getParentFile, s".${local.getName}.crc").toPath)
    }
  }

  /** One PUT of the whole content (an S3 object is replaced atomically); used for hints, never for commits. */
  override def overwrite(path: Path, lines: Seq[String]): Unit =
    writeWhole(fs.createFile(path).overwrite(true).build(), lines.mkString("", "\n", "\n").getBytes(UTF_8))

}

object S3LogStore {
  /** The create-file option (and path capability) of a conditional create: `If-None-Match: *` on S3A. */
  val ConditionalOverwrite = "fs.option.create.conditional.overwrite"
  /** S3A's switch for conditional creates (Hadoop 3.4.2; default true). */
  val ConditionalCreateEnabledKey = "fs.s3a.create.conditional.enabled"
  val MaxConflictRetries = 8
  private val ConflictBackoffMillis = 10L // then doubling, at most 320 ms between attempts

  /** S3A's class: `s3://` is served safely only when it maps to it (`fs.s3.impl`). */
  val S3AFileSystemClass = "org.apache.hadoop.fs.s3a.S3AFileSystem"

  private def chain(e: Throwable): Iterator[Throwable] = Iterator.iterate(e)(_.getCause).takeWhile(_ != null).take(10)

  /**
   * 412 (the object exists): S3A 3.4.2 reports it as a RemoteFileChangedException caused by the SDK's S3Exception
   * (status 412, code PreconditionFailed); a FileAlreadyExistsException is taken as the same answer.
   */
  def isPreconditionFailed(e: Throwable): Boolean = chain(e).exists { t =>
    t.isInstanceOf[FileAlreadyExistsException] || t.getClass.getSimpleName == "RemoteFileChangedException" ||
      Option(t.getMessage).exists(m => m.contains("Status Code: 412") || m.contains("PreconditionFailed"))
  }

  /** A 412 answered by the server itself (S3A's RemoteFileChangedException, or the SDK's status in the chain). */
  private def isServerPreconditionFailed(e: Throwable): Boolean = chain(e).exists { t =>
    t.getClass.getSimpleName == "RemoteFileChangedException" ||
      Option(t.getMessage).exists(m => m.contains("Status Code: 412") || m.contains("PreconditionFailed"))
  }

  /** Buckets (with their endpoint) whose server was seen refusing a conditional PUT of an existing object. */
  private val ProbedEndpoints = java.util.concurrent.ConcurrentHashMap.newKeySet[String]()

  /** 409 ConditionalRequestConflict: a conditional write raced another in flight; retryable. */
  def isConditionalConflict(e: Throwable): Boolean =
    chain(e).exists(t => Option(t.getMessage).exists(_.contains("ConditionalRequestConflict")))
}
