package io.strata.log

import com.fasterxml.jackson.databind.node.ObjectNode
import org.scalatest.funsuite.AnyFunSuite

class ActionCodecSuite extends AnyFunSuite {
  private val mapper = ActionCodec.mapper

  private def obj(json: String): ObjectNode = mapper.readTree(json).asInstanceOf[ObjectNode]

  /** serialize -> parse gives the same action, and serialize -> parse -> serialize the same JSON. */
  private def roundTrip(a: Action): Action = {
    val line = ActionCodec.serialize(a)
    assert(!line.contains("\n"), s"a log line must be one line: $line")
    val back = ActionCodec.parse(line)
    assert(back == a, s"round trip of $line")
    // (object key order, e.g. of partitionValues, may differ: JSON objects are unordered)
    assert(mapper.readTree(ActionCodec.serialize(back)) == mapper.readTree(line))
    back
  }

  test("protocol with and without table features") {
    roundTrip(Protocol(1, 2))
    roundTrip(Protocol(3, 7, Some(Set("timestampNtz", "deletionVectors")), Some(Set("appendOnly", "timestampNtz"))))
    roundTrip(Protocol(3, 7, Some(Set.empty), Some(Set.empty)))
    assert(ActionCodec.serialize(Protocol(1, 2)) == """{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}""")
    val p = ActionCodec.parse(
      """{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["columnMapping"],""" +
        """"writerFeatures":["columnMapping","invariants"]}}""")
    assert(p == Protocol(3, 7, Some(Set("columnMapping")), Some(Set("columnMapping", "invariants"))))
  }

  test("metaData with configuration, partition columns, format options and optional fields") {
    val m = Metadata(
      id = "5a3c1f0e-aaaa-bbbb-cccc-000000000001", name = Some("tbl"), description = Some("a \"quoted\" table"),
      format = Format("parquet", Map("compression" -> "zstd")),
      schemaString = """{"type":"struct","fields":[{"name":"p","type":"string","nullable":true,"metadata":{}}]}""",
      partitionColumns = Seq("p", "q"),
      configuration = Map("delta.appendOnly" -> "true", "delta.checkpointInterval" -> "5", "x.y" -> "with space"),
      createdTime = Some(1700000000123L))
    val back = roundTrip(m).asInstanceOf[Metadata]
    assert(back.partitionColumns == Seq("p", "q"))
    assert(back.configuration("x.y") == "with space")
    roundTrip(Metadata(id = "id-2", schemaString = "{}"))
    // A minimal metaData as another writer may write it: no format, no partitionColumns, no configuration.
    val minimal = ActionCodec.parse("""{"metaData":{"id":"x","schemaString":"{}"}}""")
    assert(minimal == Metadata(id = "x", schemaString = "{}"))
  }

  test("add with null and special-character partition values, stats and tags") {
    val a = AddFile(
      path = "p=a%20b%3Dc/q=__HIVE_DEFAULT_PARTITION__/part-00000-%C3%A9.snappy.parquet",
      partitionValues = Map("p" -> Some("a b=c/\u00e9\"\\\n\t:%"), "q" -> None, "r" -> Some("")),
      size = 1234L, modificationTime = 1700000000000L, dataChange = true,
      stats = Some("""{"numRecords":3,"minValues":{"id":1},"maxValues":{"id":3},"nullCount":{"id":0}}"""),
      tags = Map("INSERTION_TIME" -> "1700000000000000", "OPTIMIZE_TARGET_SIZE" -> "268435456"))
    val back = roundTrip(a).asInstanceOf[AddFile]
    assert(back.partitionValues("q").isEmpty)
    assert(back.partitionValues("r").contains(""))
    // null is written as JSON null (not the string "null" and not left out)
    val pv = mapper.readTree(ActionCodec.serialize(a)).get("add").get("partitionValues")
    assert(pv.has("q") && pv.get("q").isNull)
    assert(pv.get("r").isTextual && pv.get("r").asText == "")
    roundTrip(a.copy(stats = None, tags = Map.empty, dataChange = false))
  }

  test("remove, full and minimal") {
    roundTrip(RemoveFile("p=1/f.parquet", Some(1700000000000L), dataChange = true, extendedFileMetadata = Some(true),
      partitionValues = Some(Map("p" -> Some("1"), "q" -> None)), size = Some(99L),
      stats = Some("""{"numRecords":1}"""), tags = Map("k" -> "v")))
    roundTrip(RemoveFile("f.parquet", None, dataChange = false))
    val r = ActionCodec.parse("""{"remove":{"path":"a","dataChange":true}}""").asInstanceOf[RemoveFile]
    assert(r.deletionTimestamp.isEmpty && r.partitionValues.isEmpty && r.size.isEmpty)
    // AddFile.remove carries the file's metadata into the tombstone
    val add = AddFile("x", Map("p" -> None), 5, 6, dataChange = true, stats = Some("{}"))
    val tomb = add.remove(7L)
    assert(tomb == RemoveFile("x", Some(7L), dataChange = true, Some(true), Some(Map("p" -> None)), Some(5L), Some("{}")))
    roundTrip(tomb)
  }

  test("txn, domainMetadata and commitInfo") {
    roundTrip(SetTransaction("streaming-query-1", 42L, Some(1700000000000L)))
    roundTrip(SetTransaction("app", 0L, None))
    roundTrip(DomainMetadata("delta.clustering", """{"clusteringColumns":[["a"]]}""", removed = false))
    roundTrip(DomainMetadata("user.domain", "", removed = true))
    val line = """{"commitInfo":{"timestamp":1700000000000,"operation":"WRITE","operationParameters":""" +
      """{"mode":"Append","partitionBy":"[]"},"nested":{"list":[1,"two",null,{"x":true}]},"isBlindAppend":true,""" +
      """"engineInfo":"Apache-Spark/3.5.0 Delta-Lake/3.1.0"}}"""
    val c = ActionCodec.parse(line).asInstanceOf[CommitInfo]
    assert(c.timestamp.contains(1700000000000L))
    assert(c.operation.contains("WRITE"))
    assert(ActionCodec.serialize(c) == line, "commitInfo is kept verbatim, field order included")
  }

  test("unknown action kept verbatim") {
    val lines = Seq(
      """{"cdc":{"path":"_change_data/cdc-00000.c000.snappy.parquet","partitionValues":{"p":null},"size":1,"dataChange":false}}""",
      """{"checkpointMetadata":{"version":2,"tags":{}}}""",
      """{"sidecar":{"path":"016ae953.parquet","sizeInBytes":100,"modificationTime":1,"tags":null}}""")
    lines.foreach { l =>
      val a = ActionCodec.parse(l)
      assert(a.isInstanceOf[UnknownAction], l)
      assert(ActionCodec.key(a) == mapper.readTree(l).properties.iterator.next().getKey)
      assert(ActionCodec.serialize(a) == l)
    }
  }

  test("unknown fields of add, remove and metaData survive parse -> serialize") {
    val addLine =
      """{"add":{"path":"a.parquet","partitionValues":{},"size":1,"modificationTime":2,"dataChange":true,""" +
        """"deletionVector":{"storageType":"u","pathOrInlineDv":"ab^-aqEH.-t@S}K{vb[*k^","offset":4,"sizeInBytes":40,""" +
        """"cardinality":6},"baseRowId":7,"defaultRowCommitVersion":3,"clusteringProvider":"liquid","newField":null}}"""
    val add = ActionCodec.parse(addLine).asInstanceOf[AddFile]
    assert(add.extra.exists(e => !e.has("deletionVector") && e.has("baseRowId") && e.has("clusteringProvider")))
    assert(add.deletionVector.contains(DeletionVectorDescriptor("u", "ab^-aqEH.-t@S}K{vb[*k^", Some(4), 40, 6)))
    assert(mapper.readTree(ActionCodec.serialize(add)) == mapper.readTree(addLine))
    // and still there after a copy (what replay does)
    assert(mapper.readTree(ActionCodec.serialize(add.copy(dataChange = false))).get("add").get("baseRowId").asLong == 7L)

    val removeLine = """{"remove":{"path":"a.parquet","deletionTimestamp":5,"dataChange":true,"baseRowId":7,""" +
      """"deletionVector":{"storageType":"i","pathOrInlineDv":"wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L",""" +
      """"sizeInBytes":40,"cardinality":6}}}"""
    assert(mapper.readTree(ActionCodec.serialize(ActionCodec.parse(removeLine))) == mapper.readTree(removeLine))

    val metaLine = """{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{}",""" +
      """"partitionColumns":[],"configuration":{"a":"b"},"createdTime":5,"futureField":{"nested":[1,2]},"other":"v"}}"""
    val m = ActionCodec.parse(metaLine).asInstanceOf[Metadata]
    assert(m.extra.exists(e => e.has("futureField") && e.has("other")))
    assert(mapper.readTree(ActionCodec.serialize(m)) == mapper.readTree(metaLine))
  }

  test("a modelled field is never overridden by an extra field of the same name") {
    val extra = obj("""{"path":"evil","size":-1,"unknown":1}""")
    val a = AddFile("good", Map.empty, 5, 6, dataChange = true, extra = Some(extra))
    val json = mapper.readTree(ActionCodec.serialize(a)).get("add")
    assert(json.get("path").asText == "good")
    assert(json.get("size").asLong == 5L)
    assert(json.get("unknown").asInt == 1)
  }

  private def malformed(line: String): MalformedActionException =
    intercept[MalformedActionException](ActionCodec.parse(line))

  test("not JSON") {
    Seq("{not json", """{"add":{"path":"a"""", "add", """{"add":{}} trailing""").foreach { l =>
      val e = malformed(l)
      assert(e.getMessage.contains("JSON"), s"$l -> ${e.getMessage}")
    }
  }

  test("not exactly one key, or the value not an object") {
    val two = malformed("""{"add":{"path":"a","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true},""" +
      """"txn":{"appId":"a","version":1}}""")
    assert(two.getMessage.contains("exactly one key"))
    assert(malformed("{}").getMessage.contains("exactly one key"))
    assert(malformed("[1,2]").getMessage.contains("exactly one key"))
    assert(malformed("null").getMessage.contains("exactly one key"))
    // the same key twice is a duplicate, not a silent last-wins
    malformed("""{"txn":{"appId":"a","version":1},"txn":{"appId":"b","version":2}}""")
    assert(malformed("""{"add":3}""").getMessage.contains("'add'"))
  }

  test("a metaData without schemaString reads as an empty schema, as delta-spark reads it") {
    ActionCodec.parse("""{"metaData":{"id":"x"}}""") match {
      case m: Metadata => assert(m.schemaString == ActionCodec.EmptySchema)
      case other => fail(s"parsed as $other")
    }
  }

  test("a missing or ill-typed required field is named") {
    val cases = Seq(
      """{"add":{"partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}""" -> "add.path",
      """{"add":{"path":null,"partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}""" -> "add.path",
      """{"add":{"path":"a","partitionValues":{},"size":"big","modificationTime":1,"dataChange":true}}""" -> "add.size",
      """{"add":{"path":"a","partitionValues":{},"size":1,"dataChange":true}}""" -> "add.modificationTime",
      """{"add":{"path":"a","partitionValues":{},"size":1,"modificationTime":1,"dataChange":"yes"}}""" -> "add.dataChange",
      """{"remove":{"dataChange":true}}""" -> "remove.path",
      """{"remove":{"path":"a"}}""" -> "remove.dataChange",
      """{"metaData":{"schemaString":"{}"}}""" -> "metaData.id",
      """{"protocol":{"minWriterVersion":2}}""" -> "protocol.minReaderVersion",
      """{"protocol":{"minReaderVersion":"one","minWriterVersion":2}}""" -> "protocol.minReaderVersion",
      """{"txn":{"version":1}}""" -> "txn.appId",
      """{"txn":{"appId":"a"}}""" -> "txn.version",
      """{"domainMetadata":{"domain":"d","configuration":"{}"}}""" -> "domainMetadata.removed")
    cases.foreach { case (line, field) =>
      val e = malformed(line)
      assert(e.getMessage.contains(field), s"$line -> ${e.getMessage}")
      assert(e.isInstanceOf[StrataException])
    }
  }
}
