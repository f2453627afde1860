package io.strata.read.streaming

import io.strata.log.{ActionCodec, InvalidTableOperationException}
import org.apache.spark.sql.connector.read.streaming.Offset

/**
 * A position in a table's stream of appended files: the next file to read is file `index` of version `version`, in
 * the order [[TableAppends]] gives them. `initial`: `version` names the snapshot read as the stream's first rows
 * (its live files), not a commit. `tableId` (the metadata id) tells a recreated table at the same path apart.
 */
final case class SourceOffset(tableId: String, version: Long, index: Long, initial: Boolean) extends Offset {
  override def json(): String = {
    val n = ActionCodec.mapper.createObjectNode()
    n.put("sourceVersion", SourceOffset.FormatVersion)
    n.put("tableId", tableId)
    n.put("version", version)
    n.put("index", index)
    n.put("initial", initial)
    ActionCodec.mapper.writeValueAsString(n)
  }

  /** The position after everything of `version`. */
  def nextUnit: SourceOffset = SourceOffset(tableId, version + 1, 0, initial = false)
  def describe: String = if (initial) s"file $index of the snapshot at version $version" else s"file $index of version $version"
}

object SourceOffset {
  val FormatVersion = 1

  /** Stream order: a snapshot read at version v comes before commit v + 1; within a unit, by file index. */
  def before(a: SourceOffset, b: SourceOffset): Boolean = {
    def key(o: SourceOffset) = (o.version, if (o.initial) 0 else 1, o.index)
    Ordering[(Long, Int, Long)].lt(key(a), key(b))
  }

  def fromJson(json: String): SourceOffset = {
    val n = try ActionCodec.mapper.readTree(json) catch {
      case e: Exception => throw InvalidTableOperationException("STRATA_INVALID_SOURCE_OFFSET",
        s"Unreadable Strata source offset '$json': $e")
    }
    def field(name: String) = Option(n.get(name)).getOrElse(throw InvalidTableOperationException("STRATA_INVALID_SOURCE_OFFSET",
      s"Strata source offset '$json' has no '$name': the checkpoint was not written by Strata's streaming source."))
    val format = field("sourceVersion").asInt
    if (format > FormatVersion) throw InvalidTableOperationException("STRATA_INVALID_SOURCE_OFFSET",
      s"Strata source offset '$json' has format " +
      s"$format; this Strata reads format $FormatVersion. Use the Strata version that wrote the checkpoint or newer.")
    SourceOffset(field("tableId").asText, field("version").asLong, field("index").asLong, field("initial").asBoolean)
  }
}
