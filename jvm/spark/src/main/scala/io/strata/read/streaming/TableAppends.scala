package io.strata.read.streaming

import io.strata.log.{AddFile, CommitChanges, InvalidTableOperationException, Metadata, MissingLogFileException,
  ProtocolSupport, StreamSourceChangeException, TableLog}
import io.strata.table.TableSchema

import java.time.{Instant, ZoneId}
import java.time.format.DateTimeFormatter
import scala.collection.mutable

/** How many files / bytes one micro-batch may take (None: no limit). At least one file is always taken. */
final case class AdmissionLimit(maxFiles: Option[Long], maxBytes: Option[Long]) {
  def admits(files: Long, bytes: Long, nextSize: Long): Boolean =
    files == 0 || (maxFiles.forall(files + 1 <= _) && maxBytes.forall(bytes + nextSize <= _))
}
object AdmissionLimit { val Unlimited: AdmissionLimit = AdmissionLimit(None, None) }

/** Where a new stream starts (options startingVersion / startingTimestamp, or neither). */
sealed trait StreamStart
object StreamStart {
  /** The table's rows when the stream starts (its latest snapshot), then every later commit. */
  case object CurrentRows extends StreamStart
  case object AfterLatest extends StreamStart
  final case class AtVersion(version: Long) extends StreamStart
  /** `zone`: the session time zone the option was read in, also the one its refusal speaks in. */
  final case class AtTimestamp(millis: Long, zone: ZoneId) extends StreamStart

  private val timeFormat = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSS")
  /** `millis` as a wall-clock time in `zone`, naming the zone: "2026-01-31 12:00:00.000 Europe/Paris". */
  def readable(millis: Long, zone: ZoneId): String =
    s"${timeFormat.format(Instant.ofEpochMilli(millis).atZone(zone))} $zone"
}

/**
 * A table's appended files as one ordered sequence, for the streaming source: first, when the stream starts from the
 * current rows, the live files of that snapshot (oldest first); then, commit by commit, the files each commit added
 * as new rows. Commits that only move rows (`dataChange = false`: OPTIMIZE, compaction) add nothing. A commit that
 * removed or rewrote rows stops the stream ([[StreamSourceChangeException]]) unless `skipChangeCommits`, which skips
 * it whole. No Spark here: positions are [[SourceOffset]]s, the Spark side only asks for the files between two.
 *
 * `schema`: the stream's schema (the table's when the query started). A commit whose schema has a column the stream
 * lacks, or a column of another type, or other partition columns, stops the stream: its rows could not be read as
 * the stream's. Columns the stream has that older files lack read as null. On a column-mapped table columns are
 * compared by physical column; a RENAME / DROP COLUMN there, and a type widening on any table, stop the stream as
 * [[ColumnChangeGuard]] says.
 */
final class TableAppends(log: TableLog, tableName: String, read: Metadata, skipChangeCommits: Boolean,
                         guard: ColumnChangeGuard) {
  val tableId: String = read.id
  private val schema = TableSchema.of(read)
  private val commits = mutable.TreeMap.empty[Long, CommitChanges]
  private var initial: Option[(Long, IndexedSeq[AddFile])] = None
  private var skipped = 0L
  /** The start position of a new stream (no rows delivered before it), set by [[startOffset]]. */
  private var freshStart: Option[SourceOffset] = None
  /** Checked on a run's first [[advance]]: the version a restarted query stops at (a refused RENAME / DROP). */
  private var restartStop: Option[(Long, StreamSourceChangeException)] = None
  private var restartChecked = false

  /** Change commits skipped so far by this source (skipChangeCommits). */
  def changeCommitsSkipped: Long = skipped

  def latestVersion(): Long = {
    val s = log.snapshot()
    if (s.metadata.id != tableId) throw StreamSourceChangeException("STRATA_STREAM_SOURCE_CHANGE",
      s"Table $tableName was replaced: its id " +
      s"changed from $tableId to ${s.metadata.id} (version ${s.version}). A stream cannot continue on another " +
      "table; start a new query (a new checkpoint location).")
    s.version
  }

  /** The position a new stream starts from. */
  def startOffset(start: StreamStart): SourceOffset = {
    val latest = latestVersion()
    val offset = start match {
      case StreamStart.CurrentRows => SourceOffset(tableId, latest, 0, initial = true)
      case StreamStart.AfterLatest => SourceOffset(tableId, latest + 1, 0, initial = false)
      case StreamStart.AtVersion(v) =>
        if (v > latest) throw InvalidTableOperationException("STRATA_STREAM_START_OUT_OF_RANGE",
          s"Option startingVersion is $v but " +
          s"the latest version of $tableName is $latest. Use a version from 0 to $latest, or 'latest'.")
        SourceOffset(tableId, v, 0, initial = false)
      case StreamStart.AtTimestamp(ms, zone) =>
        val stamps = log.commitTimestamps()
        val first = stamps.collectFirst { case (v, ts) if ts >= ms => v }.getOrElse {
          // No commit at or after it yet, so no version to start at (delta-spark refuses it too:
          // DELTA_TIMESTAMP_GREATER_THAN_COMMIT).
          val (lastVersion, lastTs) = stamps.last
          throw InvalidTableOperationException("STRATA_STREAM_START_OUT_OF_RANGE",
            s"Option startingTimestamp is ${StreamStart.readable(ms, zone)} " +
            s"but the latest commit of $tableName (version $lastVersion) was at " +
            s"${StreamStart.readable(lastTs, zone)}. Use a timestamp at or before that one, or " +
            "startingVersion=latest to stream only the commits after the latest.")
        }
        SourceOffset(tableId, first, 0, initial = false)
    }
    freshStart = Some(offset)
    offset
  }

  /**
   * The position after the files one micro-batch takes from `start`, reading no commit after `lastVersion`. Equal to
   * `start` when nothing new is there. A batch ends before a change commit it cannot stream, so the rows before it
   * are delivered; the next call then fails on it.
   */
  def advance(start: SourceOffset, limit: AdmissionLimit, lastVersion: Long): SourceOffset = {
    requireSameTable(start)
    checkRestart(start, lastVersion)
    var pos = start
    var files = 0L
    var bytes = 0L
    var full = false
    while (!full && (pos.initial || pos.version <= lastVersion)) {
      val unit = streamedAt(pos) match {
        case Right(fs) => fs
        case Left(_) if files > 0 => return pos
        case Left(stop) => throw stop
      }
      var i = pos.index.toInt
      while (i < unit.length && !full) {
        if (limit.admits(files, bytes, unit(i).size)) { files += 1; bytes += unit(i).size; i += 1 } else full = true
      }
      pos = if (i >= unit.length) pos.nextUnit else pos.copy(index = i)
    }
    pos
  }

  /** The files from `start` (inclusive) to `end` (exclusive), in stream order. */
  def filesBetween(start: SourceOffset, end: SourceOffset): IndexedSeq[AddFile] = {
    requireSameTable(start)
    requireSameTable(end)
    val out = IndexedSeq.newBuilder[AddFile]
    var pos = start
    while (SourceOffset.before(pos, end)) {
      val unit = streamedAt(pos).fold(stop => throw stop, identity)
      val sameUnit = pos.version == end.version && pos.initial == end.initial
      out ++= unit.slice(pos.index.toInt, if (sameUnit) end.index.toInt else unit.length)
      pos = if (sameUnit) end else pos.nextUnit
    }
    out.result()
  }

  /**
   * The files streamed from the unit `pos` is in: the initial snapshot's live files, or the files a commit appended
   * (none for a change commit skipped); Left for a change commit that stops the stream.
   */
  private def streamedAt(pos: SourceOffset): Either[StreamSourceChangeException, IndexedSeq[AddFile]] =
    if (pos.initial) Right(initialFiles(pos.version))
    else restartStop.collect { case (v, stop) if pos.version >= v => stop }.toLeft(()).flatMap { _ =>
      // A commit the stream cannot read (its schema, a replaced table) ends the batch before it, as a change does.
      try {
        val c = commit(pos.version)
        if (!c.changesRows) Right(c.appended)
        else if (skipChangeCommits) Right(IndexedSeq.empty)
        else Left(changeCommit(c))
      } catch { case stop: StreamSourceChangeException => Left(stop) }
    }

  /**
   * A restarted query (not a new stream's start) reads under the table's schema of now: the rows it delivered last
   * were read under the schema before `start`. A RENAME / DROP / type widening between the two that the options
   * refuse stops it at the commit that made it (the rows before that commit are delivered, under the new schema).
   * Only when the read schema is mapped or records a widening (otherwise no such change can lie between).
   */
  private def checkRestart(start: SourceOffset, lastVersion: Long): Unit = if (!restartChecked) {
    restartChecked = true
    val before = if (start.initial || start.index > 0) start.version else start.version - 1
    if (guard.guardsRestarts && !freshStart.contains(start) && before >= 0 && before <= lastVersion) {
      // A log cleaned past `before` has no such snapshot: the commits it needs are gone too, and say so when read.
      scala.util.Try(log.snapshotAt(before).metadata).toOption.filter(guard.refusedOnRestart(_).nonEmpty).foreach { delivered =>
        // Commit by commit (each change is allowed by `always` or by its own commit's version): the first one whose
        // metadata made a change the options refuse.
        val metadata = ((before + 1) to lastVersion).iterator.flatMap { v =>
          scala.util.Try(log.readCommit(v)).toOption.flatMap(_.collectFirst { case m: Metadata => m }).map(v -> _)
        }.toSeq
        val steps = metadata.zip(delivered +: metadata.map(_._2)).map { case ((v, m), prev) => (v, prev, m) }
        val at = steps.iterator.map { case (v, prev, m) => v -> guard.refused(prev, m, v) }
          .collectFirst { case (v, refused) if refused.nonEmpty => v -> refused }
          .orElse(Option.when(steps.forall { case (_, prev, m) => guard.between(prev, m).isEmpty })(
            (before + 1) -> guard.refusedOnRestart(delivered))) // no commit shows the change: allowed only always
        at.foreach { case (v, refused) => restartStop = Some(v -> guard.stop(v, refused, allowed = false)) }
      }
    }
  }

  /** Forgets what positions before `end` needed (Spark will not ask for them again). */
  def committed(end: SourceOffset): Unit = {
    commits.keys.takeWhile(_ < end.version).toSeq.foreach(commits.remove)
    if (!end.initial) initial = None
  }

  private def requireSameTable(o: SourceOffset): Unit = if (o.tableId != tableId) throw StreamSourceChangeException("STRATA_STREAM_SOURCE_CHANGE",
    s"The checkpoint's position (${o.describe}) is in table ${o.tableId}, but $tableName is now table $tableId: it " +
      "was replaced. Start a new query (a new checkpoint location).")

  private def initialFiles(version: Long): IndexedSeq[AddFile] = initial match {
    case Some((v, files)) if v == version => files
    case _ =>
      val snapshot = log.snapshotAt(version)
      ProtocolSupport.checkReadable(snapshot.protocol, tableName)
      checkSchema(snapshot.metadata, version)
      val files = snapshot.files.sortBy(f => (f.modificationTime, f.path))
      initial = Some(version -> files)
      files
  }

  private def commit(version: Long): CommitChanges = commits.getOrElse(version, {
    val actions = try log.readCommit(version) catch {
      case _: MissingLogFileException =>
        throw StreamSourceChangeException("STRATA_STREAM_SOURCE_CHANGE",
          s"The stream of $tableName needs version $version, whose commit is no " +
          "longer in the log (log cleanup keeps delta.logRetentionDuration of history). Start a new query from a " +
          "later version (option startingVersion), or from the current rows.")
    }
    val c = CommitChanges.of(version, actions)
    c.protocol.foreach(ProtocolSupport.checkReadable(_, tableName))
    c.metadata.foreach { m =>
      if (m.id != tableId) throw StreamSourceChangeException("STRATA_STREAM_SOURCE_CHANGE",
        s"Table $tableName was replaced at version " +
        s"$version (its id changed from $tableId to ${m.id}). Start a new query (a new checkpoint location).")
      guard.checkCommit(version, m)
      checkSchema(m, version)
    }
    if (c.changesRows && skipChangeCommits) skipped += 1
    commits.put(version, c)
    c
  })

  private def checkSchema(m: Metadata, version: Long): Unit = {
    val at = TableSchema.of(m)
    val streamed = schema.schema.fields.map(f => f.name.toLowerCase(java.util.Locale.ROOT) -> f).toMap
    val unreadable = if (guard.mapped) guard.unreadable(m, version) else at.schema.fields.toSeq
      .filterNot(f => streamed.get(f.name.toLowerCase(java.util.Locale.ROOT))
      .exists(s => guard.readsAs(f.dataType, s.dataType, version))).map(f => s"${f.name} ${f.dataType.simpleString}")
    val partitionsDiffer = if (guard.mapped) !guard.samePartitioning(m)
      else at.partitionColumns.map(_.toLowerCase(java.util.Locale.ROOT)) !=
        schema.partitionColumns.map(_.toLowerCase(java.util.Locale.ROOT))
    if (unreadable.nonEmpty || partitionsDiffer) throw StreamSourceChangeException("STRATA_STREAM_SOURCE_CHANGE",
      s"The schema of $tableName changed at version $version" +
        (if (unreadable.nonEmpty) s" (${unreadable.mkString(", ")} " +
          "not in the stream's schema as such)" else s" (partition columns ${at.partitionColumns.mkString(", ")})") +
        s"; the stream reads the schema it started with (${schema.schema.simpleString}). Restart the query to read " +
        "the new schema.")
  }

  private def changeCommit(c: CommitChanges): StreamSourceChangeException = StreamSourceChangeException("STRATA_STREAM_SOURCE_CHANGE",
    s"Version ${c.version} of $tableName removed or rewrote rows" + c.operation.fold("")(op => s" ($op)") +
      ": Strata's streaming source reads appended rows only. Set option skipChangeCommits=true to skip such " +
      "commits (their changes are not streamed), or start a new query from a later version (option startingVersion).")
}
