package io.strata.log

import com.fasterxml.jackson.databind.JsonNode
import org.apache.parquet.example.data.Group
import org.apache.parquet.schema.GroupType

/**
 * Decodes a checkpoint's `add` row straight from its Parquet fields, with the checks and results of
 * [[ActionCodec.fromJson]] for the same action as JSON (a checkpoint of a million files spends most of its load time
 * here: no JSON tree is built per file). Fields the protocol adds later (`baseRowId`, `clusteringProvider`...) are
 * kept in `extra` as JSON, as a commit's would be.
 */
private[log] object CheckpointRows {
  private val Known = Set("path", "partitionValues", "size", "modificationTime", "dataChange", "stats", "tags",
    "deletionVector")

  def add(g: Group): AddFile = {
    val t = g.getType
    def index(name: String): Int = if (t.containsField(name)) t.getFieldIndex(name) else -1
    def present(i: Int): Boolean = i >= 0 && g.getFieldRepetitionCount(i) > 0
    def missing(name: String, what: String) = MalformedActionException("STRATA_MALFORMED_ACTION", s"'add.$name' must be $what")

    val p = index("path")
    if (!present(p)) throw missing("path", "a string")
    val path = g.getString(p, 0)
    if (!plainPath(path)) try new java.net.URI(path) catch {
      case e: java.net.URISyntaxException =>
        throw MalformedActionException("STRATA_MALFORMED_ACTION",
          s"'add.path' must be a URI-encoded path, not '$path' (${e.getReason})")
    }
    val size = index("size")
    if (!present(size)) throw missing("size", "a whole number")
    val mtime = index("modificationTime")
    if (!present(mtime)) throw missing("modificationTime", "a whole number")
    val dataChange = index("dataChange")
    if (!present(dataChange)) throw missing("dataChange", "true or false")
    val stats = index("stats")
    val pv = index("partitionValues")
    val tags = index("tags")
    val dv = index("deletionVector")

    AddFile(path,
      if (present(pv)) stringMap(g.getGroup(pv, 0)) else Map.empty,
      long(g, size), long(g, mtime), g.getBoolean(dataChange, 0),
      if (present(stats)) Some(g.getString(stats, 0)) else None,
      if (present(tags)) stringMap(g.getGroup(tags, 0)).collect { case (k, Some(v)) => k -> v } else Map.empty,
      extra(g, t),
      if (present(dv)) Some(deletionVector(g.getGroup(dv, 0))) else None)
  }

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

  private def extra(g: Group, t: GroupType): Option[com.fasterxml.jackson.databind.node.ObjectNode] = {
    var out: com.fasterxml.jackson.databind.node.ObjectNode = null
    lazy val whole = Checkpoints.groupToJson(g).asInstanceOf[com.fasterxml.jackson.databind.node.ObjectNode]
    var i = 0
    while (i < t.getFieldCount) {
      if (!Known(t.getFieldName(i)) && g.getFieldRepetitionCount(i) > 0) {
        if (out == null) out = ActionCodec.mapper.createObjectNode()
        out.set[JsonNode](t.getFieldName(i), whole.get(t.getFieldName(i)))
      }
      i += 1
    }
    Option(out)
  }
}
