package io.strata.log

import com.fasterxml.jackson.databind.node.ObjectNode

/**
 * The actions of the Delta transaction-log protocol (PROTOCOL.md, "Actions").
 *
 * Fields Strata does not model are kept in `extra` (the action's other JSON fields, verbatim) so that a table
 * rewritten by Strata (a checkpoint, a metadata change) never loses what another writer put there.
 */
sealed trait Action

/** Reader/writer versions and, from reader 3 / writer 7 on, the named table features. */
final case class Protocol(
    minReaderVersion: Int,
    minWriterVersion: Int,
    readerFeatures: Option[Set[String]] = None,
    writerFeatures: Option[Set[String]] = None) extends Action {
  def supportsReaderFeatures: Boolean = minReaderVersion >= 3
  def supportsWriterFeatures: Boolean = minWriterVersion >= 7
}

final case class Format(provider: String = "parquet", options: Map[String, String] = Map.empty)

final case class Metadata(
    id: String,
    name: Option[String] = None,
    description: Option[String] = None,
    format: Format = Format(),
    schemaString: String,
    partitionColumns: Seq[String] = Nil,
    configuration: Map[String, String] = Map.empty,
    createdTime: Option[Long] = None,
    extra: Option[ObjectNode] = None) extends Action {
  /** What the schema uses (types, column metadata keys), parsed once: how table features are detected. */
  lazy val schemaUse: SchemaUse = SchemaUse.of(schemaString)
}

/**
 * A data file that is part of the table. `path` is the URI-encoded path relative to the table root (or absolute);
 * `partitionValues` hold the serialized values, None for null.
 */
final case class AddFile(
    path: String,
    partitionValues: Map[String, Option[String]],
    size: Long,
    modificationTime: Long,
    dataChange: Boolean,
    stats: Option[String] = None,
    tags: Map[String, String] = Map.empty,
    extra: Option[ObjectNode] = None,
    deletionVector: Option[DeletionVectorDescriptor] = None) extends Action {

  /** The remove action that logically deletes this file (with its deletion vector) at `timestamp`. */
  def remove(timestamp: Long, dataChange: Boolean = true): RemoveFile =
    RemoveFile(path, Some(timestamp), dataChange, extendedFileMetadata = Some(true),
      partitionValues = Some(partitionValues), size = Some(size), stats = stats, tags = tags,
      deletionVector = deletionVector)

  /** The file's key in log replay (PROTOCOL.md): its path and its deletion vector's id. */
  def dvId: String = deletionVector.fold("")(_.uniqueId)

  /** Rows the file holds, stored (`stats.numRecords`), when its statistics say. */
  def physicalRows: Option[Long] =
    stats.flatMap(s => scala.util.Try(ActionCodec.mapper.readTree(s).get("numRecords")).toOption)
      .filter(n => n != null && n.canConvertToLong).map(_.asLong)

  /** Rows a reader sees: stored rows minus those its deletion vector marks deleted. */
  def logicalRows: Option[Long] = physicalRows.map(_ - deletionVector.fold(0L)(_.cardinality))
}

final case class RemoveFile(
    path: String,
    deletionTimestamp: Option[Long],
    dataChange: Boolean,
    extendedFileMetadata: Option[Boolean] = None,
    partitionValues: Option[Map[String, Option[String]]] = None,
    size: Option[Long] = None,
    stats: Option[String] = None,
    tags: Map[String, String] = Map.empty,
    extra: Option[ObjectNode] = None,
    deletionVector: Option[DeletionVectorDescriptor] = None) extends Action {
  def dvId: String = deletionVector.fold("")(_.uniqueId)
}

/** The last version an application committed (idempotent writes and streaming epochs). */
final case class SetTransaction(appId: String, version: Long, lastUpdated: Option[Long]) extends Action

final case class DomainMetadata(domain: String, configuration: String, removed: Boolean) extends Action

/** Free-form provenance of one commit; kept as JSON since every engine writes its own fields. */
final case class CommitInfo(json: ObjectNode) extends Action {
  def timestamp: Option[Long] = Option(json.get("timestamp")).filter(_.canConvertToLong).map(_.asLong)
  def operation: Option[String] = Option(json.get("operation")).filter(_.isTextual).map(_.asText)
  /** Set by writers of tables with in-commit timestamps (PROTOCOL.md, "In-Commit Timestamps"). */
  def inCommitTimestamp: Option[Long] = Option(json.get("inCommitTimestamp")).filter(_.canConvertToLong).map(_.asLong)
}

/** An action type this version of Strata does not know (e.g. `cdc`, `checkpointMetadata`), carried verbatim. */
final case class UnknownAction(key: String, json: ObjectNode) extends Action
