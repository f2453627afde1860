package io.strata.log

import com.fasterxml.jackson.databind.JsonNode
import org.apache.parquet.example.data.Group
import org.apache.parquet.schema.GroupType

/**
 * Decodes the `add` rows of one checkpoint file straight from their Parquet fields (of type `t`, the file's `add`
 * column as read), with the checks and results of [[ActionCodec.fromJson]] for the same action as JSON (a checkpoint
 * of a million files spends most of its load time here: no JSON tree is built per file, and the fields are looked up
 * once per file, not per row). Fields the protocol adds later (`baseRowId`, `clusteringProvider`...) are kept in
 * `extra` as JSON, as a commit's would be.
 */
private[log] final class CheckpointRows(t: GroupType) {
  import CheckpointRows._

  private def index(name: String): Int = if (t.containsField(name)) t.getFieldIndex(name) else -1
  private val (pathField, sizeField, mtimeField, dataChangeField) =
    (index("path"), index("size"), index("modificationTime"), index("dataChange"))
  private val (statsField, pvField, tagsField, dvField) =
    (index("stats"), index("partitionValues"), index("tags"), index("deletionVector"))
  /** `stats_parsed`, when read (only where some row may lack JSON `stats`): those rows' statistics. */
  private val parsedStatsField = index("stats_parsed")
  /** Fields of this file's `add` column that are no AddFile field. */
  private val unknownFields = (0 until t.getFieldCount).filterNot(i => Known(t.getFieldName(i))).toArray

  def add(g: Group): AddFile = {
    def present(i: Int): Boolean = i >= 0 && g.getFieldRepetitionCount(i) > 0
    def missing(name: String, what: String) =
      MalformedActionException("STRATA_MALFORMED_ACTION", s"'add.$name' must be $what")

    if (!present(pathField)) throw missing("path", "a string")
    val path = g.getString(pathField, 0)
    if (!plainPath(path)) try new java.net.URI(path) catch {
      case e: java.net.URISyntaxException =>
        throw MalformedActionException("STRATA_MALFORMED_ACTION",
          s"'add.path' must be a URI-encoded path, not '$path' (${e.getReason})")
    }
    if (!present(sizeField)) throw missing("size", "a whole number")
    if (!present(mtimeField)) throw missing("modificationTime", "a whole number")
    if (!present(dataChangeField)) throw missing("dataChange", "true or false")

    AddFile(path,
      if (present(pvField)) stringMap(g.getGroup(pvField, 0)) else Map.empty,
      long(g, sizeField), long(g, mtimeField), g.getBoolean(dataChangeField, 0),
      if (present(statsField)) Some(g.getString(statsField, 0))
      else if (present(parsedStatsField)) parsedStats(g.getGroup(parsedStatsField, 0)) else None,
      if (present(tagsField)) stringMap(g.getGroup(tagsField, 0)).collect { case (k, Some(v)) => k -> v } else Map.empty,
      extra(g),
      if (present(dvField)) Some(deletionVector(g.getGroup(dvField, 0))) else None)
  }

  /**
   * `stats_parsed` as the JSON `stats` would hold it (the same statistics: typed bounds, counts, tightBounds); None
   * when it holds nothing (a file written without statistics).
   */
  private def parsedStats(p: Group): Option[String] =
    Some(TypedColumns.groupToStatsJson(p)).filterNot(_.isEmpty).map(ActionCodec.mapper.writeValueAsString)

  private def extra(g: Group): Option[com.fasterxml.jackson.databind.node.ObjectNode] = {
    var out: com.fasterxml.jackson.databind.node.ObjectNode = null
    lazy val whole = Checkpoints.groupToJson(g).asInstanceOf[com.fasterxml.jackson.databind.node.ObjectNode]
    unknownFields.foreach { i =>
      if (g.getFieldRepetitionCount(i) > 0) {
        if (out == null) out = ActionCodec.mapper.createObjectNode()
        out.set[JsonNode](t.getFieldName(i), whole.get(t.getFieldName(i)))
      }
    }
    Option(out)
  }
}

private object CheckpointRows {
  private val Known = Set("path", "partitionValues", "size", "modificationTime", "dataChange", "stats", "tags",
    "deletionVector", "stats_parsed")

  /** Letters, digits and `/ - _ . =` only: a valid URI reference without parsing it (nearly every data file path). */
  private def plainPath(p: String): Boolean = {
    var i = 0
    while (i < p.length) {
      val c = p.charAt(i)
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' || c == '-' ||
        c == '_' || c == '.' || c == '=')) return false
      i += 1
    }
    p.nonEmpty
  }

  private def long(g: Group, i: Int): Long = g.getType.getType(i).asPrimitiveType.getPrimitiveTypeName match {
    case org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName.INT32 => g.getInteger(i, 0).toLong
    case _ => g.getLong(i, 0)
  }

  /** A MAP<STRING, STRING> column: null values kept as None. */
  private def stringMap(m: Group): Map[String, Option[String]] = {
    val n = m.getFieldRepetitionCount(0)
    if (n == 0) Map.empty else {
      val b = Map.newBuilder[String, Option[String]]
      var i = 0
      while (i < n) {
        val kv = m.getGroup(0, i)
        b += kv.getString(0, 0) -> (if (kv.getFieldRepetitionCount(1) > 0) Some(kv.getString(1, 0)) else None)
        i += 1
      }
      b.result()
    }
  }

  private def deletionVector(d: Group): DeletionVectorDescriptor =
    try DeletionVectorDescriptor.parse(Checkpoints.groupToJson(d)) catch {
      case e: CorruptLogException => throw MalformedActionException("STRATA_MALFORMED_ACTION", e.messageText)
    }
}
