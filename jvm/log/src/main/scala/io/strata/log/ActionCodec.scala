package io.strata.log

import com.fasterxml.jackson.core.JsonParser
import com.fasterxml.jackson.databind.{DeserializationFeature, JsonNode, ObjectMapper}
import com.fasterxml.jackson.databind.node.{JsonNodeFactory, ObjectNode}

import scala.jdk.CollectionConverters._

/** JSON (one action per line) encoding of [[Action]]s, exactly as PROTOCOL.md lays them out. */
object ActionCodec {
  val mapper: ObjectMapper = new ObjectMapper()
    .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
    .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
  private val nodes = JsonNodeFactory.instance
  val EmptySchema = """{"type":"struct","fields":[]}"""

  private val addFields =
    Set("path", "partitionValues", "size", "modificationTime", "dataChange", "stats", "tags", "deletionVector")
  private val removeFields = Set("path", "deletionTimestamp", "dataChange", "extendedFileMetadata", "partitionValues",
    "size", "stats", "tags", "deletionVector")
  private val metadataFields =
    Set("id", "name", "description", "format", "schemaString", "partitionColumns", "configuration", "createdTime")

  /** Parses one log line. Throws [[MalformedActionException]] (with the reason) for anything that is not an action. */
  def parse(line: String): Action = {
    val node = try mapper.readTree(line) catch {
      case e: Exception => throw MalformedActionException("STRATA_MALFORMED_ACTION",
        s"not valid JSON (${e.getMessage.linesIterator.next()})")
    }
    if (node == null || !node.isObject || node.size != 1) {
      throw MalformedActionException("STRATA_MALFORMED_ACTION",
        "an action line must be a JSON object with exactly one key")
    }
    val (key, body) = { val e = node.properties.iterator.next(); (e.getKey, e.getValue) }
    if (!body.isObject) throw MalformedActionException("STRATA_MALFORMED_ACTION",
      s"the value of '$key' must be a JSON object")
    fromJson(key, body.asInstanceOf[ObjectNode])
  }

  /** Decodes an action body given its key (`add`, `remove`, ...). Also used for checkpoint rows. */
  def fromJson(key: String, o: ObjectNode): Action = key match {
    case "protocol" =>
      Protocol(reqInt(o, key, "minReaderVersion"), reqInt(o, key, "minWriterVersion"),
        optStrings(o, "readerFeatures").map(_.toSet), optStrings(o, "writerFeatures").map(_.toSet))
    case "metaData" =>
      val fmt = Option(o.get("format")).filter(_.isObject).map { f =>
        Format(optText(f, "provider").getOrElse("parquet"), stringMap(f.get("options")))
      }.getOrElse(Format())
      Metadata(reqText(o, key, "id"), optText(o, "name"), optText(o, "description"), fmt,
        // delta-spark reads a missing schemaString as an empty schema; so do we (some of its tables lack one).
        optText(o, "schemaString").getOrElse(EmptySchema), optStrings(o, "partitionColumns").getOrElse(Nil),
        stringMap(o.get("configuration")), optLong(o, "createdTime"), extra(o, metadataFields))
    case "add" =>
      AddFile(reqPath(o, key), partitionMap(o.get("partitionValues")), reqLong(o, key, "size"),
        reqLong(o, key, "modificationTime"), reqBool(o, key, "dataChange"), optText(o, "stats"),
        stringMap(o.get("tags")), extra(o, addFields), deletionVector(o))
    case "remove" =>
      RemoveFile(reqPath(o, key), optLong(o, "deletionTimestamp"), reqBool(o, key, "dataChange"),
        optBool(o, "extendedFileMetadata"), Option(o.get("partitionValues")).filterNot(_.isNull).map(partitionMap),
        optLong(o, "size"), optText(o, "stats"), stringMap(o.get("tags")), extra(o, removeFields), deletionVector(o))
    case "txn" => SetTransaction(reqText(o, key, "appId"), reqLong(o, key, "version"), optLong(o, "lastUpdated"))
    case "domainMetadata" =>
      DomainMetadata(reqText(o, key, "domain"), reqText(o, key, "configuration"), reqBool(o, key, "removed"))
    case "commitInfo" => CommitInfo(o)
    case other => UnknownAction(other, o)
  }

  def key(a: Action): String = a match {
    case _: Protocol => "protocol"
    case _: Metadata => "metaData"
    case _: AddFile => "add"
    case _: RemoveFile => "remove"
    case _: SetTransaction => "txn"
    case _: DomainMetadata => "domainMetadata"
    case _: CommitInfo => "commitInfo"
    case u: UnknownAction => u.key
  }

  /** The action body as a JSON object (without the wrapping key). */
  def toJson(a: Action): ObjectNode = a match {
    case p: Protocol =>
      val o = nodes.objectNode().put("minReaderVersion", p.minReaderVersion).put("minWriterVersion", p.minWriterVersion)
      p.readerFeatures.foreach(fs => o.set[JsonNode]("readerFeatures", stringArray(fs.toSeq.sorted)))
      p.writerFeatures.foreach(fs => o.set[JsonNode]("writerFeatures", stringArray(fs.toSeq.sorted)))
      o
    case m: Metadata =>
      val o = nodes.objectNode().put("id", m.id)
      m.name.foreach(o.put("name", _))
      m.description.foreach(o.put("description", _))
      val f = nodes.objectNode().put("provider", m.format.provider)
      f.set[JsonNode]("options", stringMapNode(m.format.options))
      o.set[JsonNode]("format", f)
      o.put("schemaString", m.schemaString)
      o.set[JsonNode]("partitionColumns", stringArray(m.partitionColumns))
      o.set[JsonNode]("configuration", stringMapNode(m.configuration))
      m.createdTime.foreach(t => o.put("createdTime", t))
      withExtra(o, m.extra)
    case f: AddFile =>
      val o = nodes.objectNode().put("path", f.path)
      o.set[JsonNode]("partitionValues", partitionMapNode(f.partitionValues))
      o.put("size", f.size).put("modificationTime", f.modificationTime).put("dataChange", f.dataChange)
      f.stats.foreach(o.put("stats", _))
      if (f.tags.nonEmpty) o.set[JsonNode]("tags", stringMapNode(f.tags))
      f.deletionVector.foreach(dv => o.set[JsonNode]("deletionVector", dv.toJson))
      withExtra(o, f.extra)
    case r: RemoveFile =>
      val o = nodes.objectNode().put("path", r.path)
      r.deletionTimestamp.foreach(t => o.put("deletionTimestamp", t))
      o.put("dataChange", r.dataChange)
      r.extendedFileMetadata.foreach(b => o.put("extendedFileMetadata", b))
      r.partitionValues.foreach(pv => o.set[JsonNode]("partitionValues", partitionMapNode(pv)))
      r.size.foreach(s => o.put("size", s))
      r.stats.foreach(o.put("stats", _))
      if (r.tags.nonEmpty) o.set[JsonNode]("tags", stringMapNode(r.tags))
      r.deletionVector.foreach(dv => o.set[JsonNode]("deletionVector", dv.toJson))
      withExtra(o, r.extra)
    case t: SetTransaction =>
      val o = nodes.objectNode().put("appId", t.appId).put("version", t.version)
      t.lastUpdated.foreach(l => o.put("lastUpdated", l))
      o
    case d: DomainMetadata =>
      nodes.objectNode().put("domain", d.domain).put("configuration", d.configuration).put("removed", d.removed)
    case c: CommitInfo => c.json
    case u: UnknownAction => u.json
  }

  /** One log line. */
  def serialize(a: Action): String = {
    val wrapper = nodes.objectNode()
    wrapper.set[JsonNode](key(a), toJson(a))
    mapper.writeValueAsString(wrapper)
  }

  private def deletionVector(o: ObjectNode): Option[DeletionVectorDescriptor] =
    field(o, "deletionVector").map { n =>
      if (!n.isObject) throw MalformedActionException("STRATA_MALFORMED_ACTION",
        "'deletionVector' must be a JSON object")
      try DeletionVectorDescriptor.parse(n) catch {
        case e: CorruptLogException => throw MalformedActionException("STRATA_MALFORMED_ACTION", e.messageText)
      }
    }

  // ---- helpers -------------------------------------------------------------------------------------------------

  private def field(o: JsonNode, name: String): Option[JsonNode] = Option(o.get(name)).filterNot(_.isNull)

  private def missing(action: String, name: String, what: String) =
    MalformedActionException("STRATA_MALFORMED_ACTION", s"'$action.$name' must be $what")

  private def reqText(o: JsonNode, a: String, n: String): String =
    field(o, n).filter(_.isTextual).map(_.asText).getOrElse(throw missing(a, n, "a string"))
  /** A file path of an add or remove: a URI reference (relative or absolute), as PROTOCOL.md requires. */
  private def reqPath(o: JsonNode, a: String): String = {
    val p = reqText(o, a, "path")
    try new java.net.URI(p) catch {
      case e: java.net.URISyntaxException =>
        throw MalformedActionException("STRATA_MALFORMED_ACTION",
          s"'$a.path' must be a URI-encoded path, not '$p' (${e.getReason})")
    }
    p
  }
  private def reqLong(o: JsonNode, a: String, n: String): Long =
    field(o, n).filter(_.canConvertToLong).map(_.asLong).getOrElse(throw missing(a, n, "a whole number"))
  private def reqInt(o: JsonNode, a: String, n: String): Int =
    field(o, n).filter(_.canConvertToInt).map(_.asInt).getOrElse(throw missing(a, n, "a whole number"))
  private def reqBool(o: JsonNode, a: String, n: String): Boolean =
    field(o, n).filter(_.isBoolean).map(_.asBoolean).getOrElse(throw missing(a, n, "true or false"))
  private def optText(o: JsonNode, n: String): Option[String] = field(o, n).map(_.asText)
  private def optLong(o: JsonNode, n: String): Option[Long] = field(o, n).filter(_.canConvertToLong).map(_.asLong)
  private def optBool(o: JsonNode, n: String): Option[Boolean] = field(o, n).filter(_.isBoolean).map(_.asBoolean)
  private def optStrings(o: JsonNode, n: String): Option[Seq[String]] =
    field(o, n).map(a => a.elements.asScala.map(_.asText).toSeq)

  private def stringMap(n: JsonNode): Map[String, String] =
    if (n == null || !n.isObject) Map.empty
    else n.properties.asScala.collect { case e if !e.getValue.isNull => e.getKey -> e.getValue.asText }.toMap

  private def partitionMap(n: JsonNode): Map[String, Option[String]] =
    if (n == null || !n.isObject) Map.empty
    else n.properties.asScala.map(e => e.getKey -> Option(e.getValue).filterNot(_.isNull).map(_.asText)).toMap

  private def extra(o: ObjectNode, known: Set[String]): Option[ObjectNode] = {
    val rest = nodes.objectNode()
    o.properties.asScala.foreach(e => if (!known(e.getKey)) rest.set[JsonNode](e.getKey, e.getValue))
    if (rest.isEmpty) None else Some(rest)
  }

  private def withExtra(o: ObjectNode, extra: Option[ObjectNode]): ObjectNode = {
    extra.foreach(_.properties.asScala.foreach(e => if (!o.has(e.getKey)) o.set[JsonNode](e.getKey, e.getValue)))
    o
  }

  private def stringArray(values: Seq[String]): JsonNode = {
    val a = nodes.arrayNode()
    values.foreach(a.add)
    a
  }

  private def stringMapNode(m: Map[String, String]): JsonNode = {
    val o = nodes.objectNode()
    m.toSeq.sortBy(_._1).foreach { case (k, v) => o.put(k, v) }
    o
  }

  private def partitionMapNode(m: Map[String, Option[String]]): JsonNode = {
    val o = nodes.objectNode()
    m.foreach { case (k, v) => v.fold(o.putNull(k))(s => o.put(k, s)) }
    o
  }
}
