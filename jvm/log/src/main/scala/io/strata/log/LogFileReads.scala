package io.strata.log

import java.io.FileNotFoundException

import com.fasterxml.jackson.databind.JsonNode
import org.apache.hadoop.fs.Path

import scala.util.control.NonFatal

/**
 * Reading the log's own small files: a commit's actions (every line must parse: a log with a damaged commit is
 * corrupt, named with the file, version and line; a commit that is not there is missing, [[MissingLogFileException]])
 * and the `_last_checkpoint` hint (a damaged or missing hint is only
 * a missing shortcut: the listing finds the checkpoints).
 */
private[log] object LogFileReads {
  def commit(store: LogStore, version: Long, path: Path): Seq[Action] = {
    val lines = try store.read(path) catch {
      case e: FileNotFoundException => throw MissingLogFileException("STRATA_LOG_FILE_MISSING",
        s"Commit file $path of version $version is missing.", e)
    }
    if (lines.isEmpty) throw CorruptLogException("STRATA_CORRUPT_LOG",
      s"Commit file $path of version $version is empty.")
    lines.zipWithIndex.map { case (line, i) =>
      try ActionCodec.parse(line) catch {
        case e: MalformedActionException => throw CorruptLogException("STRATA_CORRUPT_LOG",
          s"Commit file $path of version $version is corrupt or truncated at line ${i + 1}: ${e.messageText}.", e)
      }
    }
  }

  /** `_last_checkpoint`'s JSON, when it is there and readable. */
  def lastCheckpoint(store: LogStore, logPath: Path): Option[JsonNode] =
    try Option(ActionCodec.mapper.readTree(store.read(FileNames.lastCheckpoint(logPath)).mkString)) catch {
      case _: FileNotFoundException => None
      case NonFatal(_) => None
    }
}
