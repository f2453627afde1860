package io.strata.config

import io.strata.log.InvalidTableOperationException

/**
 * Options of a streaming read (`readStream.format("strata")`). Where the stream starts: `startingVersion` (a version
 * or "latest") or `startingTimestamp`; neither reads the table's current rows first, then every later commit.
 * How much one micro-batch takes: `maxFilesPerTrigger` (default 1,000, as delta-spark) and `maxBytesPerTrigger`.
 * `allowSourceColumnRename` / `allowSourceColumnDrop` (delta-spark's reader options; `allowSourceColumnRenameAndDrop`
 * both): a query restarted after a RENAME / DROP COLUMN on a column-mapped table reads on under the new schema;
 * `allowSourceColumnTypeChange` the same after a type widening (`ALTER COLUMN ... TYPE`, schema evolution). Each
 * takes `always` (`true`) or the version of the commit whose change to allow ([[SchemaChangeAllowance]]);
 * [[withSessionConfs]] adds delta-spark's session confs for the same.
 */
final case class StreamReadOptions(
    startingVersion: Option[StartingVersion] = None,
    startingTimestamp: Option[String] = None,
    maxFilesPerTrigger: Option[Int] = None,
    maxBytesPerTrigger: Option[Long] = None,
    skipChangeCommits: Boolean = false,
    allowColumnRename: SchemaChangeAllowance = SchemaChangeAllowance.Never,
    allowColumnDrop: SchemaChangeAllowance = SchemaChangeAllowance.Never,
    allowColumnTypeChange: SchemaChangeAllowance = SchemaChangeAllowance.Never,
    checkpointHash: Option[Int] = None) {
  /** Whether a restarted query may read on across this change, made by the commit at `version` (it then reads under
   *  the table's new schema). */
  def allows(c: io.strata.log.NonAdditiveChange, version: Long): Boolean =
    (if (c.isRename) allowColumnRename else allowColumnDrop).allows(version)

  /**
   * These options plus delta-spark's session confs `spark.databricks.delta.streaming.allowSourceColumn<Change>`
   * (`always`) and `....ckpt_<hash>` (`always` or a version; the hash is the Java string hash of the source's checkpoint
   * location, `<checkpoint>/sources/<n>`, as delta-spark computes it): any of them allows a change.
   */
  def withSessionConfs(conf: String => Option[String], sourceCheckpoint: String): StreamReadOptions = {
    import StreamReadOptions._
    def session(option: String) = SchemaChangeAllowance.sessionConfs(option, conf, sourceCheckpoint.hashCode)
    val both = session(AllowColumnRenameAndDrop)
    copy(allowColumnRename = allowColumnRename ++ both ++ session(AllowColumnRename),
      allowColumnDrop = allowColumnDrop ++ both ++ session(AllowColumnDrop),
      allowColumnTypeChange = allowColumnTypeChange ++ session(AllowColumnTypeChange),
      checkpointHash = Some(sourceCheckpoint.hashCode))
  }

  /** The session conf that allows `option`'s changes for this stream alone, when its checkpoint is known. */
  def streamConf(option: String): Option[String] =
    checkpointHash.map(h => s"${StreamReadOptions.DeltaConfPrefix}.$option.ckpt_$h")
}

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
  val AllowColumnRename = "allowSourceColumnRename"
  val AllowColumnDrop = "allowSourceColumnDrop"
  val AllowColumnRenameAndDrop = "allowSourceColumnRenameAndDrop"
  val AllowColumnTypeChange = "allowSourceColumnTypeChange"
  val DefaultMaxFiles = 1000
  /** delta-spark's session confs that unblock schema changes for streams (see [[SchemaChangeAllowance]]). */
  val DeltaConfPrefix = "spark.databricks.delta.streaming"

  private val keys = Seq(StrataOptions.Path, StartingVersionKey, StartingTimestampKey, MaxFilesPerTrigger,
    MaxBytesPerTrigger, SkipChangeCommits, AllowColumnRename, AllowColumnDrop, AllowColumnRenameAndDrop,
    AllowColumnTypeChange)
  /** delta-spark's options for streams over changed tables: named so the error says what Strata offers instead. */
  private val deltaChangeOptions = Seq("ignoreDeletes", "ignoreChanges", "ignoreFileDeletion")

  def parse(options: Map[String, String]): StreamReadOptions = {
    import StrataOptions.{bad, lc}
    options.keys.find(k => Seq("schemaTrackingLocation", "schemaLocation").exists(_.equalsIgnoreCase(k))).foreach { k =>
      throw InvalidTableOperationException("STRATA_UNSUPPORTED_OPTION",
        s"Option '$k' is not supported by Strata's streaming source: it keeps no schema log. A RENAME or DROP " +
        s"COLUMN or a type widening stops the stream; restart it with $AllowColumnRename=true, $AllowColumnDrop=true " +
        s"or $AllowColumnTypeChange=true to read on under " +
        "the table's new schema.")
    }
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
    // delta-spark's values are "always" and a version; true says always here.
    def allow(name: String) = o.get(lc(name)).fold(SchemaChangeAllowance.Never)(SchemaChangeAllowance.option(name, _))
    val both = allow(AllowColumnRenameAndDrop)
    StreamReadOptions(version, timestamp, maxFiles, maxBytes, StrataOptions.boolean(o, SkipChangeCommits),
      both ++ allow(AllowColumnRename), both ++ allow(AllowColumnDrop), allow(AllowColumnTypeChange))
  }
}
