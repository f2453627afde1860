package io.strata.maintenance

import scala.util.Try

import io.strata.log.{AddFile, CorruptLogException, DeletionVectorDescriptor, RemoveFile}
import io.strata.table.PartitionPaths
import org.apache.hadoop.fs.Path

/**
 * Names VACUUM never lists below the table root, delta-spark's rule (DeltaTableUtils.isHiddenDirectory): a name
 * starting with `.` or `_` is hidden (`_delta_log`, `.crc` files, Spark's `_temporary`, ...) unless it starts with
 * `_delta_index` or `_change_data` or is a partition directory (`_p=1` of a column `_p`); `metadata` is hidden on
 * tables with Iceberg UniForm metadata. Applied to every directory and file name on the way down.
 */
final case class HiddenNames(partitionColumns: Seq[String], icebergMetadata: Boolean) extends (String => Boolean) {
  private val partitionPrefixes = partitionColumns.flatMap(c => Seq(c + "=", PartitionPaths.escape(c) + "=")).distinct
  def apply(name: String): Boolean =
    (icebergMetadata && name == "metadata") ||
      ((name.startsWith(".") || name.startsWith("_")) && !name.startsWith("_delta_index") &&
        !name.startsWith("_change_data") && !partitionPrefixes.exists(name.startsWith))
}

/**
 * The last check before a path is deleted, run where the delete runs: the path must have the table root's scheme
 * and authority, lie strictly below the root (no `.`/`..` segment, nothing empty), and no segment of it below the
 * root may be hidden. Listing only ever offers such paths; this guards against any mistake upstream.
 */
final case class InsideRoot(scheme: String, authority: String, rootKey: String, hidden: HiddenNames)
    extends (String => Boolean) {
  def apply(path: String): Boolean = Try {
    val uri = new Path(path).toUri
    val key = VacuumRules.key(new Path(path))
    uri.getScheme == scheme && uri.getAuthority == authority && key.startsWith(rootKey + "/") && {
      val segments = key.substring(rootKey.length + 1).split("/", -1).toSeq
      segments.nonEmpty && !segments.exists(s => s.isEmpty || s == "." || s == ".." || hidden(s))
    }
  }.getOrElse(false)
}

object InsideRoot {
  def apply(root: Path, hidden: HiddenNames): InsideRoot = {
    val uri = root.toUri
    InsideRoot(uri.getScheme, uri.getAuthority, VacuumRules.key(root), hidden)
  }
}

/** One file or empty directory found below the table root. `path`: the qualified path (`Path.toString`). */
final case class ListedFile(path: String, size: Long, modificationTime: Long, isDirectory: Boolean)

/** A file or empty directory VACUUM deletes (or would): its absolute path, size and kind. */
final case class VacuumTarget(path: String, size: Long, kind: String)

/**
 * Which listed files go, decided where the listing runs (on executors; only the targets travel back).
 *
 * - `retained`: keys of the files some version within the retention may read (the current version's files and
 *   deletion vectors, and those of tombstones newer than the cutoff). Never deleted.
 * - A file a tombstone older than the cutoff names (`expired`, with its kind) is deleted once its own modification
 *   time is older than `cutoff` too (as delta-spark requires).
 * - Any other file (a failed or running job's output, an orphan deletion vector, a change data file) and any empty
 *   directory is deleted only when older than `orphanCutoff` (at or before `cutoff`): files of a write that has not
 *   committed yet are younger than that.
 */
final case class VacuumSelector(retained: Set[String], expired: Map[String, String], cutoff: Long, orphanCutoff: Long,
                                guard: InsideRoot) extends (ListedFile => Option[VacuumTarget]) {
  def apply(f: ListedFile): Option[VacuumTarget] = {
    val key = VacuumRules.key(new Path(f.path))
    if (retained.contains(key) || !guard(f.path)) None
    else if (f.isDirectory) if (f.modificationTime < orphanCutoff) Some(VacuumTarget(f.path, 0L, "directory")) else None
    else expired.get(key) match {
      case Some(kind) => if (f.modificationTime < cutoff) Some(VacuumTarget(f.path, f.size, kind)) else None
      case None =>
        if (f.modificationTime < orphanCutoff) Some(VacuumTarget(f.path, f.size, VacuumRules.kindByName(f.path)))
        else None
    }
  }
}

/** VACUUM's reading of the log: which files the log names, resolved however hostile its paths are. */
object VacuumRules {
  val Data = "data"
  val DeletionVector = "deletion_vector"
  val Other = "other"
  private val DvName = """deletion_vector_[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\.bin""".r

  /**
   * A file's identity for VACUUM: its decoded, normalized path, without scheme or authority. A log entry protects
   * every listed file with the same key, whatever scheme, authority or encoding the entry was written with: keeping
   * a file too many is safe, deleting one too many is not.
   */
  def key(p: Path): String = {
    val s = Option(p.toUri.normalize().getPath).getOrElse("")
    if (s.length > 1 && s.endsWith("/")) s.dropRight(1) else s
  }

  /** `deletion_vector_<uuid>.bin` files are deletion vectors, `.parquet` files data, anything else other. */
  def kindByName(path: String): String = {
    val name = path.substring(path.lastIndexOf('/') + 1)
    if (DvName.pattern.matcher(name).matches()) DeletionVector
    else if (name.toLowerCase(java.util.Locale.ROOT).endsWith(".parquet")) Data
    else Other
  }

  /**
   * Where a path of an add or remove action may point. PROTOCOL.md has it URI-encoded, relative to the root or
   * absolute; a writer that did not encode it is read literally as well, and both readings are protected. A path
   * neither reading resolves refuses the vacuum: what it protects cannot be known.
   */
  def logPaths(tablePath: Path, actionPath: String): Seq[Path] = {
    val asUri = Try(io.strata.log.Snapshot.absolutePath(tablePath, actionPath)).toOption
    val literal = Try {
      val p = new Path(actionPath)
      if (p.isAbsolute) p else new Path(tablePath, p)
    }.toOption
    val all = (asUri ++ literal).toSeq
    if (all.isEmpty) throw CorruptLogException("STRATA_CORRUPT_LOG",
      s"Cannot vacuum $tablePath: the log names a file '$actionPath', " +
      "which is not a path (neither URI-encoded nor literal); nothing was deleted.")
    all
  }

  /** The file a deletion vector is stored in (None when inline). A descriptor that resolves nowhere refuses. */
  def vectorPath(tablePath: Path, dv: DeletionVectorDescriptor, dataPath: String): Option[Path] =
    try dv.file(tablePath) catch {
      case e: Exception => throw CorruptLogException("STRATA_CORRUPT_LOG",
        s"Cannot vacuum $tablePath: the deletion vector " +
        s"${dv.uniqueId} of file $dataPath does not resolve to a file (${e.getMessage}); nothing was deleted.")
    }

  /** Keys of the files an add or remove action needs: its data file and its deletion vector file. */
  def keysOf(tablePath: Path, path: String, dv: Option[DeletionVectorDescriptor]): (Seq[String], Seq[String]) =
    (logPaths(tablePath, path).map(key).distinct, dv.flatMap(vectorPath(tablePath, _, path)).map(key).toSeq)

  /**
   * Keys of the files the versions within the retention read: every live file and the files of every tombstone
   * whose deletionTimestamp is at or after `cutoff` (a tombstone without one counts as expired, as in delta-spark),
   * each with its deletion vector file.
   */
  def retainedKeys(tablePath: Path, files: Iterable[AddFile], tombstones: Iterable[RemoveFile], cutoff: Long): Set[String] = {
    val b = Set.newBuilder[String]
    files.foreach { f => val (d, v) = keysOf(tablePath, f.path, f.deletionVector); b ++= d; b ++= v }
    tombstones.filter(_.deletionTimestamp.getOrElse(0L) >= cutoff).foreach { r =>
      val (d, v) = keysOf(tablePath, r.path, r.deletionVector); b ++= d; b ++= v
    }
    b.result()
  }

  /** Keys, with their kind, of the files that tombstones older than `cutoff` name (data and deletion vectors). */
  def expiredKeys(tablePath: Path, tombstones: Iterable[RemoveFile], cutoff: Long): Map[String, String] = {
    val b = Map.newBuilder[String, String]
    tombstones.filter(_.deletionTimestamp.getOrElse(0L) < cutoff).foreach { r =>
      val (d, v) = keysOf(tablePath, r.path, r.deletionVector)
      d.foreach(b += _ -> Data)
      v.foreach(b += _ -> DeletionVector)
    }
    b.result()
  }
}
