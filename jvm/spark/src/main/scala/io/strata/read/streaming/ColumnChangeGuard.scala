package io.strata.read.streaming

import io.strata.config.StreamReadOptions
import io.strata.log.{ColumnMapping, Metadata, NonAdditiveChange, NonAdditiveChanges, StreamSourceChangeException}
import io.strata.table.{PhysicalSchema, TableSchema, TypeWideningChanges}
import org.apache.spark.sql.types.DataType

/** The changes from one schema of a table to another that a stream cannot read across unasked. */
final case class SchemaChanges(nonAdditive: Seq[NonAdditiveChange], widenings: Seq[TypeWidening]) {
  def isEmpty: Boolean = nonAdditive.isEmpty && widenings.isEmpty
  def nonEmpty: Boolean = !isEmpty
  def describe: String = (nonAdditive.map(_.describe) ++ widenings.map(_.describe)).mkString(", ")
}

/**
 * The streaming source across RENAME / DROP COLUMN on a column-mapped table and across a type widening on any table
 * (as delta-spark's source, without its schema log). `read`: the metadata the query reads under (the table's at
 * `readVersion`, when this run started).
 *
 * A running query stops at the commit that renames, drops or widens a column it reads, its rows before that commit
 * delivered: its schema cannot change while it runs. A restarted query reads under the table's new schema; it
 * checks what changed between the schema its last delivered rows were read under and the new one, and reads on
 * only when options allowSourceColumnRename / allowSourceColumnDrop / allowSourceColumnTypeChange accept those
 * changes (older files are then read widened, as a batch read reads them).
 */
final class ColumnChangeGuard(tableName: String, read: Metadata, readVersion: Long, options: StreamReadOptions) {
  val mapped: Boolean = ColumnMapping.enabled(read)
  /** Whether a restart can meet a change to refuse: the read schema is mapped or records a widening. */
  val guardsRestarts: Boolean = mapped || TypeWideningChanges.hasTypeChanges(TableSchema.of(read).schema)
  private val readTop = topLevel(read)
  /** Top-level physical name -> the column's type in physical names (a nested rename changes no type here). */
  private val readTypes = physicalTypes(read)
  private val readMaxId = ColumnMapping.maxColumnId(read)

  /**
   * A commit's metadata met while the query runs: a rename, drop or widening of a read column stops it. Metadata up
   * to `readVersion` is older than the read schema: a restarted query checks that span once ([[refusedOnRestart]]).
   */
  def checkCommit(version: Long, m: Metadata): Unit = if (version > readVersion) {
    val changes = between(read, m)
    if (changes.nonEmpty) throw stop(version, changes, allowed = refused(changes, Some(version)).isEmpty)
  }

  /** The changes from `before` to `after`, made by the commit at `version`, the options refuse. */
  def refused(before: Metadata, after: Metadata, version: Long): SchemaChanges =
    refused(between(before, after), Some(version))

  /**
   * The changes from `before` (the schema rows were last delivered under) to the read schema the options refuse,
   * whatever commits made them: only `always` allows them here (a version allows the change of its commit alone).
   */
  def refusedOnRestart(before: Metadata): SchemaChanges = refused(between(before, read), None)

  def between(before: Metadata, after: Metadata): SchemaChanges =
    SchemaChanges(NonAdditiveChanges.between(before, after), SourceTypeChanges.between(before, after))

  private def refused(c: SchemaChanges, version: Option[Long]): SchemaChanges = {
    def allows(a: io.strata.config.SchemaChangeAllowance) = a.always || version.exists(a.allows)
    SchemaChanges(c.nonAdditive.filterNot(n => allows(if (n.isRename) options.allowColumnRename
      else options.allowColumnDrop)), if (allows(options.allowColumnTypeChange)) Nil else c.widenings)
  }

  def stop(version: Long, changes: SchemaChanges, allowed: Boolean): StreamSourceChangeException = {
    val remedy = if (allowed) "The stream's options allow it: restart the query to read on under the table's new " +
      s"schema (${TableSchema.of(read).schema.simpleString} until then)."
    else {
      val names = Seq(
        Option.when(changes.nonAdditive.exists(_.isRename))(StreamReadOptions.AllowColumnRename),
        Option.when(changes.nonAdditive.exists(_.isDrop))(StreamReadOptions.AllowColumnDrop),
        Option.when(changes.widenings.nonEmpty)(StreamReadOptions.AllowColumnTypeChange)).flatten
      def set(value: String) = names.map(o => s"$o=$value").mkString(" and ")
      val confs = names.flatMap(options.streamConf)
      val conf = if (confs.isEmpty) "" else s" (or session conf ${confs.mkString(" and ")} set to one of those values)"
      s"To read on under the table's new schema, restart the query with option ${set("always")} (or ${set(s"$version")}" +
        s" for this version's change only)$conf; or start a new query (a new checkpoint location) with " +
        s"startingVersion=$version."
    }
    // A widening alone has its own condition: the other one speaks of column mapping, which widening does not need.
    val condition = if (changes.nonAdditive.isEmpty) "STRATA_STREAM_TYPE_WIDENING"
      else "STRATA_STREAM_NON_ADDITIVE_SCHEMA_CHANGE"
    StreamSourceChangeException(condition, Map("table" -> tableName,
      "version" -> version.toString, "changes" -> changes.describe, "remedy" -> remedy))
  }

  /**
   * Whether files written under a schema where a column had type `old` read as the stream's `streamed`: the same
   * type, or, before the read schema's version (older than it), a type the read schema widened.
   */
  def readsAs(old: DataType, streamed: DataType, version: Long): Boolean =
    old.catalogString == streamed.catalogString ||
      (version <= readVersion && SourceTypeChanges.readableAs(old, streamed))

  /**
   * Top-level columns of `m` (the metadata of `version`) the read schema cannot read files written under `m` as,
   * compared by physical column: one of another type, or one added after the read schema (the query must restart to
   * read it). Metadata up to `readVersion` is older than the read schema, which reads its files as a batch read of
   * the table reads old files (a column dropped since is left out; nested fields added since read as null; types
   * widened since read widened).
   */
  def unreadable(m: Metadata, version: Long): Seq[String] = if (version <= readVersion) Nil else {
    val schema = TableSchema.of(m).schema
    val types = physicalTypes(m)
    topLevel(m).toSeq.flatMap { case (physical, (name, id)) =>
      readTop.get(physical) match {
        case Some(_) if readTypes.get(physical) == types.get(physical) => None
        case None if id <= readMaxId => None
        case _ => Some(s"${schema(name).name} ${schema(name).dataType.simpleString}")
      }
    }
  }

  def samePartitioning(m: Metadata): Boolean =
    ColumnMapping.physicalPartitionColumns(m) == ColumnMapping.physicalPartitionColumns(read)

  private def physicalTypes(m: Metadata): Map[String, String] =
    PhysicalSchema.forWrite(TableSchema.of(m).schema).fields.map(f => f.name -> f.dataType.catalogString).toMap

  /** physical name -> (logical name, id) of the top-level columns. */
  private def topLevel(m: Metadata): Map[String, (String, Long)] =
    ColumnMapping.physicalFields(m).collect { case (Seq(p), Seq(l), id) => p -> (l -> id) }.toMap
}
