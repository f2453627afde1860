package io.strata.read

import io.strata.SparkTestSession
import io.strata.log.{AddFile, Metadata, Operation, StatsParser, TableLog}
import io.strata.table.{ExactStats, StatsSkipping}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, PredicateHelper}
import org.apache.spark.sql.catalyst.plans.logical.Filter
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite

/**
 * Skipping and aggregates read statistics from the typed columns of the table state (parsed once per run): on a
 * corpus of statistics as writers leave them (nulls, NaN, all-null columns, missing or broken statistics, truncated
 * strings, decimals, dates, timestamps, nested fields, deletion-vector files with loose bounds) every answer equals
 * the one from parsing each file's JSON, in a session whose time zone is not UTC; a second query parses nothing.
 */
class TypedStatsReadSuite extends AnyFunSuite with SparkTestSession with PredicateHelper {
  private val schema = StructType(Seq(
    StructField("i", IntegerType), StructField("l", LongType), StructField("d", DoubleType), StructField("f", FloatType),
    StructField("dec", DecimalType(10, 2)), StructField("s", StringType), StructField("dt", DateType),
    StructField("ts", TimestampType), StructField("ntz", TimestampNTZType), StructField("flag", BooleanType),
    StructField("st", StructType(Seq(StructField("x", LongType)))), StructField("p", StringType)))

  private val corpus: IndexedSeq[String] = IndexedSeq(
    """{"numRecords":3,"minValues":{"i":1,"l":-5,"d":-1.5,"f":0.25,"dec":1.10,"s":"abc","dt":"2024-02-29",""" +
      """"ts":"2024-03-10T09:30:00.123Z","ntz":"2024-03-10T01:30:00.123","st":{"x":5}},"maxValues":{"i":9,""" +
      """"l":50,"d":2.5,"f":1.5,"dec":99.99,"s":"mno\uDBFF\uDFFF","dt":"2024-03-01",""" +
      """"ts":"2024-03-10T01:30:00.999-08:00","ntz":"2024-03-10T01:30:00.999","st":{"x":7}},"nullCount":{"i":0,""" +
      """"l":0,"d":0,"f":0,"dec":0,"s":1,"dt":0,"ts":0,"ntz":0,"flag":0,"st":{"x":0}},"tightBounds":true}""",
    """{"numRecords":4,"minValues":{},"maxValues":{},"nullCount":{"i":4,"l":4,"d":4,"s":4,"dt":4,"ts":4,"st":{"x":4}}}""",
    """{"numRecords":2,"minValues":{"d":"NaN","dec":1.234,"i":1.5},"maxValues":{"d":"NaN","dec":123456789.12},""" +
      """"nullCount":{"d":0,"i":0}}""",
    """{"numRecords":5,"minValues":{"i":0,"l":0},"maxValues":{"i":100,"l":100},"nullCount":{"i":0,"l":2},""" +
      """"tightBounds":false}""",
    """{"numRecords":6,"minValues":{"i":20,"s":"zz","dt":"2025-01-01","ts":"2025-01-01T00:00:00.000Z"},""" +
      """"maxValues":{"i":30,"s":"zzz","dt":"2025-02-01","ts":"2025-01-01T00:00:00.000Z"},"nullCount":{"i":1,""" +
      """"s":0,"dt":0,"ts":0}}""",
    null, """{"numRecords":3,"minValues":{"i":1""", """{"numRecords":7}""")

  private lazy val table: String = {
    val dir = tempDir().resolve("typed")
    val log = TableLog.forPath(new Path(dir.toUri), new Configuration())
    val txn = log.startTransaction()
    txn.updateMetadata(Metadata(id = "typed", schemaString = schema.json, partitionColumns = Seq("p")))
    txn.commit((0 until 48).map { k =>
      AddFile(s"p=${k % 3}/f-$k.parquet", Map("p" -> Some((k % 3).toString)), 10L, 0L, dataChange = true,
        Option(corpus(k % corpus.size)))
    }, Operation("WRITE"))
    dir.toString
  }

  private def withSessionZone[T](zone: String)(body: => T): T = {
    val old = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try body finally spark.conf.set("spark.sql.session.timeZone", old)
  }

  private def condition(sql: String): Seq[Expression] = {
    val df = spark.createDataFrame(spark.sparkContext.emptyRDD[Row], schema).where(sql)
    df.queryExecution.analyzed.collectFirst { case Filter(c, _) => c }.toSeq.flatMap(splitConjunctivePredicates)
  }

  private val conditions = Seq("i = 5", "i > 25", "i < 0", "i IS NULL", "i IS NOT NULL", "l >= 60", "d > 2.0",
    "d < -2", "f = 1.5", "dec = 99.99", "dec < 1.05", "s = 'mnq'", "s > 'zzz'", "s < 'ab'", "dt = DATE'2024-02-29'",
    "dt > DATE'2024-12-31'", "ts > TIMESTAMP'2024-03-10 02:30:00.999'", "ts < TIMESTAMP'2024-03-10 01:30:00'",
    "ntz >= TIMESTAMP_NTZ'2024-03-10 01:30:01'", "i = 5 OR s = 'zz'", "NOT (i = 5)", "i IN (1, 25)",
    "i = 5 AND p = '1'", "p = '0' OR i = 25")

  test("skipping from the typed columns equals skipping from each file's JSON, in a non-UTC session") {
    withSessionZone("America/Los_Angeles") {
      val snapshot = TableLog.forPath(new Path(table), new Configuration()).snapshot()
      val dataSchema = StructType(schema.fields.filterNot(_.name == "p"))
      val partSchema = StructType(Seq(schema("p")))
      var skipped = 0
      conditions.foreach { sql =>
        val skipping = StatsSkipping(dataSchema, condition(sql), partSchema)
        val noPartitions = StatsSkipping(dataSchema, condition(sql))
        snapshot.statsByPartition.foreach { case (pv, group) =>
          val partRow = InternalRow(UTF8String.fromString(pv("p").get))
          val typed = group.values(skipping.statsColumns)
          val typedNoParts = group.values(noPartitions.statsColumns)
          (0 until group.length).foreach { i =>
            val json = Option(group.statsJson(i))
            val fromJson = noPartitions.mayMatch(json)
            assert(noPartitions.mayMatch(typedNoParts, i, null) == fromJson, s"$sql on $json")
            // with the partition values too, a file the statistics alone skip stays skipped
            if (!fromJson) assert(!skipping.mayMatch(typed, i, partRow), s"$sql on $json")
            if (!fromJson) skipped += 1
          }
        }
      }
      assert(skipped > 50) // the corpus does skip: the comparison is not vacuous
    }
  }

  test("aggregate facts from the typed columns equal those from each file's JSON") {
    val snapshot = TableLog.forPath(new Path(table), new Configuration()).snapshot()
    val exact = new ExactStats(schema.fields.filterNot(_.name == "p").toIndexedSeq)
    val parser = StatsParser.forColumns(exact.statsColumns)
    var answered = 0
    snapshot.statsByPartition.foreach { case (_, group) =>
      val typed = group.values(exact.statsColumns)
      (0 until group.length).foreach { i =>
        val a = exact.facts(typed, i)
        val b = exact.facts(parser.parse(group.statsJson(i)), 0)
        assert(a.isDefined == b.isDefined)
        (a, b) match {
          case (Some(x), Some(y)) =>
            answered += 1
            assert(x.numRecords == y.numRecords && x.tightBounds == y.tightBounds)
            assert(x.nullCounts.toSeq == y.nullCounts.toSeq && x.mins.toSeq == y.mins.toSeq && x.maxs.toSeq == y.maxs.toSeq)
          case _ =>
        }
      }
    }
    assert(answered == 48 - 2 * 6) // the missing and the broken statistics have no facts
  }

  test("exact facts keep exactness rules: no bounds for strings, floats, timestamps; inexact decimals left out") {
    val exact = new ExactStats(schema.fields.filterNot(_.name == "p").toIndexedSeq)
    val f = exact.facts(StatsParser.forColumns(exact.statsColumns).parse(corpus(0)), 0).get
    val names = schema.fields.map(_.name)
    def at(n: String) = names.indexOf(n)
    assert(f.mins(at("i")) == 1 && f.maxs(at("l")) == 50L && f.maxs(at("dec")) == Decimal("99.99"))
    Seq("d", "f", "s", "ts", "ntz").foreach(n => assert(f.mins(at(n)) == null && f.maxs(at(n)) == null, n))
    assert(f.nullCounts(at("s")) == 1 && f.tightBounds.contains(true))
    val odd = exact.facts(StatsParser.forColumns(exact.statsColumns).parse(corpus(2)), 0).get
    assert(odd.mins(at("dec")) == null && odd.maxs(at("dec")) == null && odd.mins(at("i")) == null)
  }

  test("a second stats-pruned query parses no statistics; its answer is the first one's") {
    val snapshotTable = tempDir().resolve("second").toString
    spark.range(0, 2000, 1, 20).selectExpr("id", "cast(id % 3 as string) as s", "id % 4 as p")
      .write.format("strata").partitionBy("p").save(snapshotTable)
    def q(): DataFrame = spark.read.format("strata").load(snapshotTable).where("id BETWEEN 500 AND 520 OR s = 'x'")
    val first = q().collect().map(_.getLong(0)).sorted.toSeq
    val built = io.strata.log.TypedStats.columnsBuiltInJvm
    val second = q().collect().map(_.getLong(0)).sorted.toSeq
    assert(first == (500L to 520L) && second == first)
    assert(io.strata.log.TypedStats.columnsBuiltInJvm == built)
  }
}
