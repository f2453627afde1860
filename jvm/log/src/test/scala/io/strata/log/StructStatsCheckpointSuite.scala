package io.strata.log

import java.nio.file.{Files, Path => JPath}
import java.util.TimeZone

import com.fasterxml.jackson.databind.{DeserializationFeature, JsonNode}
import com.fasterxml.jackson.databind.node.JsonNodeFactory
import org.apache.hadoop.fs.Path
import org.apache.parquet.example.data.Group
import org.apache.parquet.hadoop.ParquetReader
import org.apache.parquet.hadoop.example.GroupReadSupport
import org.apache.parquet.schema.LogicalTypeAnnotation
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName
import org.scalatest.funsuite.AnyFunSuite

import scala.jdk.CollectionConverters._

/** `stats_parsed` / `partitionValues_parsed` (delta.checkpoint.writeStatsAsStruct) and writeStatsAsJson=false. */
class StructStatsCheckpointSuite extends AnyFunSuite with LogTestSupport {
  private val reader = ActionCodec.mapper.reader(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)

  private def field(name: String, t: String) = s"""{"name":"$name","type":$t,"nullable":true,"metadata":{}}"""
  private def prim(name: String, t: String) = field(name, s""""$t"""")
  private def struct(fields: String*) = s"""{"type":"struct","fields":[${fields.mkString(",")}]}"""

  private val schema = struct(prim("b", "byte"), prim("sh", "short"), prim("i", "integer"), prim("l", "long"),
    prim("f", "float"), prim("d", "double"), prim("s", "string"), prim("dt", "date"), prim("ts", "timestamp"),
    prim("ntz", "timestamp_ntz"), prim("d1", "decimal(5,2)"), prim("d2", "decimal(18,3)"),
    prim("d3", "decimal(38,10)"), prim("bool", "boolean"), prim("bin", "binary"),
    field("st", struct(prim("x", "long"), field("inner", struct(prim("y", "string"))))),
    field("arr", """{"type":"array","elementType":"long","containsNull":true}"""),
    prim("pd", "date"), prim("pi", "integer"), prim("ps", "string"), prim("pts", "timestamp"), prim("pdec", "decimal(9,3)"))
  private val partitionColumns = Seq("pd", "pi", "ps", "pts", "pdec")

  private val bounds1 =
    """"b":-3,"sh":-300,"i":-70000,"l":-9000000000,"f":-1.5,"d":-2.25,"s":"abc","dt":"2024-03-10",
      |"ts":"2024-03-10T09:30:00.123Z","ntz":"2024-03-10T01:30:00.000","d1":-123.45,"d2":123456789012345.678,
      |"d3":-1234567890123456789012345678.0123456789,"st":{"x":1,"inner":{"y":"a"}}""".stripMargin.replace("\n", "")
  private val bounds2 =
    """"b":127,"sh":32767,"i":2147483647,"l":9223372036854775807,"f":3.25,"d":1.0E300,"s":"zz\u00e9\u00df",
      |"dt":"1969-12-31","ts":"1960-01-01T00:00:00.000001Z","ntz":"2262-04-11T23:47:16.854775",
      |"d1":999.99,"d2":-0.001,"d3":9999999999999999999999999999.9999999999,"st":{"x":-5}""".stripMargin
      .replace("\n", "")
  private val stats = Seq(
    s"""{"numRecords":5,"minValues":{$bounds1},"maxValues":{$bounds2},"nullCount":{"b":0,"sh":1,"i":0,"l":0,"f":0,""" +
      """"d":0,"s":0,"dt":0,"ts":0,"ntz":0,"d1":0,"d2":0,"d3":0,"bool":2,"bin":1,"st":{"x":0,"inner":{"y":5}},""" +
      """"arr":1},"tightBounds":true}""",
    // every value null: no bounds, only counts
    """{"numRecords":3,"minValues":{},"maxValues":{},"nullCount":{"b":3,"s":3,"ts":3,"st":{"x":3}},"tightBounds":false}""",
    """{"numRecords":1}""")

  private val partitions = Seq(
    Map("pd" -> Some("2024-02-29"), "pi" -> Some("-7"), "ps" -> Some("a b"), "pts" -> Some("2024-03-10T09:30:00.000001Z"),
      "pdec" -> Some("-123456.789")),
    Map("pd" -> None, "pi" -> None, "ps" -> Some(""), "pts" -> None, "pdec" -> None),
    Map("pd" -> Some("1900-01-01"), "pi" -> Some("2147483647"), "ps" -> None, "pts" -> Some("2024-03-10T01:30:00-08:00"),
      "pdec" -> Some("0.5")))

  private def table(name: String, config: Map[String, String], pvs: Seq[Map[String, Option[String]]] = partitions,
                    withoutStats: Boolean = true): (JPath, TableLog) = {
    val t = tempDir(name)
    val files = stats.zip(pvs).zipWithIndex.map { case ((st, pv), i) => add(s"f$i.parquet", pv, stats = Some(st)) } ++
      (if (withoutStats) Seq(add("nostats.parquet", pvs.head)) else Nil)
    val log = createTable(t, metadata(partitionColumns, config ++ Map("delta.checkpointInterval" -> "1000"), schema),
      files)
    (t, log)
  }

  /** A JSON tree with every number as its exact decimal value (1.50 and 1.5 alike), for comparing statistics. */
  private def normal(n: JsonNode): JsonNode = {
    val f = JsonNodeFactory.withExactBigDecimals(true)
    if (n.isObject) {
      val o = f.objectNode()
      n.properties.asScala.foreach(e => o.set[JsonNode](e.getKey, normal(e.getValue)))
      o
    } else if (n.isNumber) f.numberNode(n.decimalValue.stripTrailingZeros) else n
  }
  private def parse(s: String): JsonNode = normal(reader.readTree(s))

  private def rows(file: Path): Seq[Group] = {
    val r = ParquetReader.builder(new GroupReadSupport(), file).withConf(newConf()).build()
    try Iterator.continually(r.read()).takeWhile(_ != null).toVector finally r.close()
  }

  private def withZone[T](zone: String)(body: => T): T = {
    val before = TimeZone.getDefault
    TimeZone.setDefault(TimeZone.getTimeZone(zone))
    try body finally TimeZone.setDefault(before)
  }

  test("writeStatsAsJson=false: every statistics type (nulls, decimals, timestamps, nested) reads back the same") {
    withZone("America/Los_Angeles") {
      val (t, log) = table("struct-only", Map("delta.checkpoint.writeStatsAsStruct" -> "true",
        "delta.checkpoint.writeStatsAsJson" -> "false"))
      val snap = log.snapshot()
      val cp = log.writeCheckpoint(snap).files.head
      // the JSON column is null in every add row: what comes back was read from stats_parsed
      val adds = rows(cp).filter(_.getFieldRepetitionCount("add") > 0).map(_.getGroup("add", 0))
      assert(adds.size == 4 && adds.forall(_.getFieldRepetitionCount("stats") == 0))
      SnapshotCache.invalidate(log.tablePath.toString)
      val back = TableLog.forPath(hpath(t), newConf()).snapshot()
      assert(back.segment.checkpointVersion.contains(0L))
      val byPath = back.files.map(f => f.path -> f).toMap
      stats.zipWithIndex.foreach { case (st, i) =>
        val got = byPath(s"f$i.parquet").stats
        assert(got.isDefined, s"f$i has statistics")
        assert(parse(got.get) == parse(st), s"f$i: ${got.get} vs $st")
      }
      assert(byPath("nostats.parquet").stats.isEmpty)
      assert(back.files.map(f => f.path -> f.partitionValues).toMap == snap.files.map(f => f.path -> f.partitionValues).toMap)
      // everything else about the files is as before
      def rest(f: AddFile) = f.path -> f.copy(stats = None, dataChange = false)
      assert(back.files.map(rest).toMap == snap.files.map(rest).toMap)
    }
  }

  test("stats_parsed is typed per the table schema; partitionValues_parsed holds the map's values typed") {
    withZone("Asia/Kolkata") {
      val (_, log) = table("struct-types", Map("delta.checkpoint.writeStatsAsStruct" -> "true"))
      val cp = log.writeCheckpoint(log.snapshot()).files.head
      val r = ParquetReader.builder(new GroupReadSupport(), cp).withConf(newConf()).build()
      val first = try r.read() finally r.close()
      val add = first.getType.getType("add").asGroupType
      val min = add.getType("stats_parsed").asGroupType.getType("minValues").asGroupType
      def prim(name: String) = min.getType(name).asPrimitiveType
      assert(prim("ts").getLogicalTypeAnnotation == LogicalTypeAnnotation.timestampType(true, LogicalTypeAnnotation.TimeUnit.MICROS))
      assert(prim("ntz").getLogicalTypeAnnotation == LogicalTypeAnnotation.timestampType(false, LogicalTypeAnnotation.TimeUnit.MICROS))
      assert(prim("dt").getLogicalTypeAnnotation == LogicalTypeAnnotation.dateType())
      assert(prim("d1").getPrimitiveTypeName == PrimitiveTypeName.INT32 && prim("d2").getPrimitiveTypeName == PrimitiveTypeName.INT64)
      assert(prim("d3").getPrimitiveTypeName == PrimitiveTypeName.FIXED_LEN_BYTE_ARRAY)
      assert(prim("d3").getLogicalTypeAnnotation == LogicalTypeAnnotation.decimalType(10, 38))
      assert(!min.containsField("bool") && !min.containsField("bin") && !min.containsField("arr"), "no bounds for them")
      assert(min.getType("st").asGroupType.getType("inner").asGroupType.containsField("y"))
      val nulls = add.getType("stats_parsed").asGroupType.getType("nullCount").asGroupType
      assert(Seq("bool", "bin", "arr").forall(nulls.containsField))
      assert(!nulls.containsField("pd") && !min.containsField("pi"), "partition columns have no statistics")

      val rowsByPath = rows(cp).filter(_.getFieldRepetitionCount("add") > 0).map(_.getGroup("add", 0))
        .map(a => a.getString("path", 0) -> a).toMap
      // JSON stats stay the source when both are there
      assert(rowsByPath("f0.parquet").getString("stats", 0) == stats.head)
      val ts0 = rowsByPath("f0.parquet").getGroup("stats_parsed", 0).getGroup("minValues", 0).getLong("ts", 0)
      assert(ts0 == java.time.Instant.parse("2024-03-10T09:30:00.123Z").toEpochMilli * 1000L)
      def pv(path: String) = rowsByPath(path).getGroup("partitionValues_parsed", 0)
      val p0 = pv("f0.parquet")
      assert(p0.getInteger("pd", 0) == java.time.LocalDate.parse("2024-02-29").toEpochDay)
      assert(p0.getInteger("pi", 0) == -7 && p0.getString("ps", 0) == "a b")
      assert(p0.getLong("pts", 0) == java.time.Instant.parse("2024-03-10T09:30:00Z").toEpochMilli * 1000L + 1)
      assert(p0.getInteger("pdec", 0) == -123456789)
      val p1 = pv("f1.parquet")
      assert(Seq("pd", "pi", "pts", "pdec").forall(p1.getFieldRepetitionCount(_) == 0) && p1.getString("ps", 0) == "")
      val p2 = pv("f2.parquet")
      assert(p2.getFieldRepetitionCount("ps") == 0 && p2.getInteger("pi", 0) == Int.MaxValue)
      assert(p2.getLong("pts", 0) == java.time.Instant.parse("2024-03-10T09:30:00Z").toEpochMilli * 1000L)
      assert(p2.getInteger("pdec", 0) == 500 && p2.getInteger("pd", 0) == java.time.LocalDate.parse("1900-01-01").toEpochDay)
    }
  }

  test("a zone-less timestamp partition value: no partitionValues_parsed (its instant depends on the reader)") {
    val pvs = partitions.updated(2, partitions(2).updated("pts", Some("2024-03-10 01:30:00")))
    val (t, log) = table("zoneless", Map("delta.checkpoint.writeStatsAsStruct" -> "true"), pvs)
    val cp = log.writeCheckpoint(log.snapshot()).files.head
    val add = rows(cp).head.getType.getType("add").asGroupType
    assert(add.containsField("stats_parsed") && !add.containsField("partitionValues_parsed"))
    SnapshotCache.invalidate(log.tablePath.toString)
    assert(TableLog.forPath(hpath(t), newConf()).snapshot().files.find(_.path == "f2.parquet").get.partitionValues("pts")
      .contains("2024-03-10 01:30:00"))
  }

  test("without writeStatsAsStruct no typed columns are written; stats stay JSON") {
    val (_, log) = table("plain", Map.empty)
    val cp = log.writeCheckpoint(log.snapshot()).files.head
    val add = rows(cp).head.getType.getType("add").asGroupType
    assert(!add.containsField("stats_parsed") && !add.containsField("partitionValues_parsed"))
  }

  test("a multi-part checkpoint with typed statistics only reads back whole") {
    val t = tempDir("struct-parts")
    val conf = newConf()
    conf.set(CheckpointWriter.PartSizeKey, "3")
    val files = (1 to 7).map(i => add(s"g$i.parquet", stats = Some(s"""{"numRecords":$i,"minValues":{"l":$i},""" +
      s""""maxValues":{"l":${i * 10}},"nullCount":{"l":0}}""")))
    val log = createTable(t, metadata(configuration = Map("delta.checkpoint.writeStatsAsStruct" -> "true",
      "delta.checkpoint.writeStatsAsJson" -> "false"), schema = struct(prim("l", "long"))), files, conf)
    assert(log.writeCheckpoint(log.snapshot()).files.size == 3)
    SnapshotCache.invalidate(log.tablePath.toString)
    val back = TableLog.forPath(hpath(t), newConf()).snapshot()
    assert(back.files.map(f => f.path -> parse(f.stats.get)).toMap == files.map(f => f.path -> parse(f.stats.get)).toMap)
    assert(Files.exists(logDir(t).resolve("_last_checkpoint")))
  }
}
