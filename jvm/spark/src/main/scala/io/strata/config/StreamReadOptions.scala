package io.strata.config

import io.strata.log.InvalidTableOperationException

/**
 * Options of a streaming read (`readStream.format("strata")`). Where the stream starts: `startingVersion` (a version
 * or "latest") or `startingTimestamp`; neither reads the table's current rows first, then every later commit.
 * How much one micro-batch takes: `maxFilesPerTrigger` (default 1,000, as delta-spark) and `maxBytesPerTrigger`.
 */
final case class StreamReadOptions(
    startingVersion: Option[StartingVersion] = None,
    startingTimestamp: Option[String] = None,
    maxFilesPerTrigger: Option[Int] = None,
    maxBytesPerTrigger: Option[Long] = None,
    skipChangeCommits: Boolean = false)

sealed trait StartingVersion
object StartingVersion {
  final case class At(version: Long) extends StartingVersion
  /** Only commits after the latest one when the stream starts. */
  case object Latest extends StartingVersion
}

object StreamReadOptions {
  val StartingVersionKey = "startingVersion"
  val StartingTimestampKey = "startingTimestamp"
  val MaxFilesPerTrigger = "maxFilesPerTrigger"
  val MaxBytesPerTrigger = "maxBytesPerTrigger"
  val SkipChangeCommits = "skipChangeCommits"
  val DefaultMaxFiles = 1000

  private val keys = Seq(StrataOptions.Path, StartingVersionKey, StartingTimestampKey, MaxFilesPerTrigger,
    MaxBytesPerTrigger, SkipChangeCommits)
  /** delta-spark's options for streams over changed tables: named so the error says what Strata offers instead. */
  private val deltaChangeOptions = Seq("ignoreDeletes", "ignoreChanges", "ignoreFileDeletion")

  def parse(options: Map[String, String]): StreamReadOptions = {
    import StrataOptions.{bad, lc}
    options.keys.find(k => deltaChangeOptions.exists(_.equalsIgnoreCase(k))).foreach { k =>
      throw InvalidTableOperationException("STRATA_UNSUPPORTED_OPTION",
        s"Option '$k' is not supported by Strata's streaming source: a commit " +
        s"that removes or rewrites rows stops the stream unless $SkipChangeCommits=true, which skips such commits " +
        "entirely (their rows are not streamed).")
    }
    StrataOptions.refuseChangeFeed(options, "the streaming source reads the rows commits append, not changes.")
    val o = StrataOptions.normalize(options, keys)
    val version = o.get(lc(StartingVersionKey)).map { v =>
      if (v.trim.equalsIgnoreCase("latest")) StartingVersion.Latest
      else StartingVersion.At(StrataOptions.positiveLong(StartingVersionKey, v, allowZero = true))
    }
    val timestamp = o.get(lc(StartingTimestampKey))
    if (version.isDefined && timestamp.isDefined) throw InvalidTableOperationException("STRATA_CONFLICTING_OPTIONS",
      s"Options $StartingVersionKey and $StartingTimestampKey cannot be used together: pick one.")
    val maxFiles = o.get(lc(MaxFilesPerTrigger)).map { v =>
      val n = StrataOptions.positiveLong(MaxFilesPerTrigger, v, allowZero = false)
      if (n > Int.MaxValue) bad(MaxFilesPerTrigger, v, s"a whole number from 1 to ${Int.MaxValue}")
      n.toInt
    }
    val maxBytes = o.get(lc(MaxBytesPerTrigger)).map(v => StrataOptions.byteSize(v).getOrElse(
      bad(MaxBytesPerTrigger, v, "a size > 0 in bytes, or with a unit such as 512k, 64m or 1g")))
    StreamReadOptions(version, timestamp, maxFiles, maxBytes, StrataOptions.boolean(o, SkipChangeCommits))
  }
}
