package io.strata.read.streaming

import io.strata.config.StreamReadOptions
import io.strata.log.{ColumnMapping, Metadata, NonAdditiveChange, NonAdditiveChanges, StreamSourceChangeException}
import io.strata.table.{PhysicalSchema, TableSchema}

/**
 * The streaming source on a column-mapped table across RENAME / DROP COLUMN (as delta-spark's source, without its
 * schema log). `read`: the metadata the query reads under (the table's at `readVersion`, when this run started).
 *
 * A running query stops at the commit that renames or drops a column it reads, its rows before that commit
 * delivered: its schema cannot change while it runs. A restarted query reads under the table's new schema; it
 * checks what changed between the schema its last delivered rows were read under and the new one, and reads on
 * only when options allowSourceColumnRename / allowSourceColumnDrop accept those changes.
 */
final class ColumnChangeGuard(tableName: String, read: Metadata, readVersion: Long, options: StreamReadOptions) {
  val mapped: Boolean = ColumnMapping.enabled(read)
  private val readTop = topLevel(read)
  /** Top-level physical name -> the column's type in physical names (a nested rename changes no type here). */
  private val readTypes = physicalTypes(read)
  private val readMaxId = ColumnMapping.maxColumnId(read)

  /**
   * A commit's metadata met while the query runs: a rename or drop of a read column stops it. Metadata up to
   * `readVersion` is older than the read schema: a restarted query checks that span once ([[refusedOnRestart]]).
   */
  def checkCommit(version: Long, m: Metadata): Unit = if (version > readVersion) {
    val changes = NonAdditiveChanges.between(read, m)
    if (changes.nonEmpty) throw stop(version, changes, allowed = changes.forall(options.allows))
  }

  def allows(c: NonAdditiveChange): Boolean = options.allows(c)

  /** The changes from `before` (the schema rows were last delivered under) to the read schema the options refuse. */
  def refusedOnRestart(before: Metadata): Seq[NonAdditiveChange] =
    NonAdditiveChanges.between(before, read).filterNot(options.allows)

  def stop(version: Long, changes: Seq[NonAdditiveChange], allowed: Boolean): StreamSourceChangeException = {
    val remedy = if (allowed) "The stream's options allow it: restart the query to read on under the table's new " +
      s"schema (${TableSchema.of(read).schema.simpleString} until then)."
    else {
      val options = Seq(
        Option.when(changes.exists(_.isRename))(s"${StreamReadOptions.AllowColumnRename}=always"),
        Option.when(changes.exists(_.isDrop))(s"${StreamReadOptions.AllowColumnDrop}=always")).flatten
      s"To read on under the table's new schema, restart the query with option ${options.mkString(" and ")}; or " +
        s"start a new query (a new checkpoint location) with startingVersion=$version."
    }
    StreamSourceChangeException("STRATA_STREAM_NON_ADDITIVE_SCHEMA_CHANGE", Map("table" -> tableName,
      "version" -> version.toString, "changes" -> changes.map(_.describe).mkString(", "), "remedy" -> remedy))
  }

  /**
   * Top-level columns of `m` (the metadata of `version`) the read schema cannot read files written under `m` as,
   * compared by physical column: one of another type, or one added after the read schema (the query must restart to
   * read it). Metadata up to `readVersion` is older than the read schema, which reads its files as a batch read of
   * the table reads old files (a column dropped since is left out; nested fields added since read as null).
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
