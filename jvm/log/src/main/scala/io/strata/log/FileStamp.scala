package io.strata.log

import org.apache.hadoop.fs.{EtagSource, FileStatus}

/**
 * What tells one log file's content from another's at the same path without reading it: its length, modification
 * time and, where the store gives one (S3A, ABFS and GCS file statuses are [[EtagSource]]s), its ETag. A commit file
 * is written once and never changed (put-if-absent), so a file of the same name with another stamp is another
 * history of the table: a log replaced under it (a directory put back from a copy, an object-store rollback, a table
 * deleted and created again). A state built from the log remembers the stamp of the commit it was built up to, and
 * is used again, or brought forward, only while that commit still has the stamp ([[LatestStateCache]], the
 * connector's distributed state cache, [[Transaction]]'s check before its commit). Object stores keep modification
 * times to the second; the ETag tells two uploads of one second apart.
 */
final case class FileStamp(length: Long, modificationTime: Long, etag: Option[String]) {
  /**
   * Whether `other` stamps the same file content: the same length and ETag when both have one (an object store's
   * listing and its HEAD may state the time with different precision; the ETag names the content), else the same
   * length and modification time.
   */
  def sameFile(other: FileStamp): Boolean = length == other.length && ((etag, other.etag) match {
    case (Some(a), Some(b)) => a == b
    case _ => modificationTime == other.modificationTime
  })

  /** A string equal for stamps of the same file on one store (a cache key): the ETag where there is one. */
  def key: String = etag.fold(s"$length@$modificationTime")(e => s"$length#$e")
}

object FileStamp {
  /** Both unknown, or both known and [[FileStamp.sameFile]]. */
  def same(a: Option[FileStamp], b: Option[FileStamp]): Boolean = (a, b) match {
    case (Some(x), Some(y)) => x.sameFile(y)
    case (None, None) => true
    case _ => false
  }

  def of(status: FileStatus): FileStamp = {
    val etag = status match {
      // Quotes are part of an HTTP ETag, not of the content's identity: a listing and a HEAD may differ in them.
      case e: EtagSource => Option(e.getEtag).map(_.stripPrefix("\"").stripSuffix("\"")).filter(_.nonEmpty)
      case _ => None
    }
    FileStamp(status.getLen, status.getModificationTime, etag)
  }
}
