package io.strata.log

import java.nio.charset.StandardCharsets.UTF_8

import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

/**
 * The one statistics parser and the typed statistics columns built from it: values converted exactly or left out,
 * nested paths, malformed JSON unknown as a whole; the typed columns of a snapshot's runs say what a parse of each
 * file's JSON says, and a run parses a column once however many queries and later snapshots read it.
 */
class TypedStatsSuite extends AnyFunSuite {
  import StatsColumn._

  private val columns = IndexedSeq(
    StatsColumn(Seq("i"), Integral(32)), StatsColumn(Seq("b"), Integral(8)), StatsColumn(Seq("l"), Integral(64)),
    StatsColumn(Seq("d"), Floating(single = false)), StatsColumn(Seq("f"), Floating(single = true)),
    StatsColumn(Seq("dec"), Decimal(10, 2)), StatsColumn(Seq("big"), Decimal(30, 3)), StatsColumn(Seq("s"), Str),
    StatsColumn(Seq("dt"), Date), StatsColumn(Seq("ts"), Timestamp), StatsColumn(Seq("ntz"), TimestampNtz),
    StatsColumn(Seq("flag"), Bool), StatsColumn(Seq("st", "x"), Integral(64)), StatsColumn(Seq("st", "in", "y"), Str),
    StatsColumn(Seq("bin"), NullsOnly))

  /** Statistics as writers leave them: complete, partial, odd and broken. */
  private val corpus: IndexedSeq[String] = IndexedSeq(
    """{"numRecords":3,"minValues":{"i":1,"b":-128,"l":-9223372036854775808,"d":-1.5,"f":0.25,"dec":1.10,""" +
      """"big":123456789012345678901234.567,"s":"a\u00e9","dt":"2024-02-29","ts":"2024-03-10T09:30:00.123Z",""" +
      """"ntz":"2024-03-10T01:30:00.123","flag":false,"st":{"x":5,"in":{"y":"n"}}},"maxValues":{"i":9,"b":127,""" +
      """"l":9223372036854775807,"d":2.5,"f":1.5,"dec":99.99,"big":1,"s":"zz\uDBFF\uDFFF","dt":"2024-03-01",""" +
      """"ts":"2024-03-10T01:30:00.999-08:00","ntz":"2024-03-10T01:30:00.999","flag":true,""" +
      """"st":{"x":7,"in":{"y":"z"}}},"nullCount":{"i":0,"b":1,"l":0,"d":0,"f":0,"dec":0,"big":0,"s":1,"dt":0,""" +
      """"ts":0,"ntz":0,"flag":0,"st":{"x":0,"in":{"y":2}},"bin":3},"tightBounds":true}""",
    // all-null columns: no bounds, null count = numRecords
    """{"numRecords":4,"minValues":{},"maxValues":{},"nullCount":{"i":4,"s":4,"st":{"x":4}}}""",
    // NaN (as Spark writes it, a string) and out-of-range / inexact values: absent
    """{"numRecords":2,"minValues":{"d":"NaN","b":200,"dec":1.234,"i":1.5,"dt":"2024-13-01"},""" +
      """"maxValues":{"d":3.0,"b":-129,"dec":123456789.12,"i":99999999999},"nullCount":{"d":0}}""",
    // a deletion-vector file with wide bounds
    """{"numRecords":5,"minValues":{"i":0},"maxValues":{"i":100},"nullCount":{"i":0},"tightBounds":false}""",
    // no statistics, malformed statistics, numRecords only, nested section given where a leaf is asked for
    null, """{"numRecords":3,"minValues":{"i":1""", """{"numRecords":7}""",
    """{"numRecords":1,"minValues":{"i":{"deep":1},"st":5},"nullCount":{"st":{"x":"1"}}}""")

  test("the parser converts each kind exactly, leaves out what it cannot, and treats broken JSON as unknown") {
    val p = StatsParser.forColumns(columns)
    val full = p.parse(corpus(0))
    def c(path: String*) = columns.indexWhere(_.path == path)
    assert(full.numRecords(0) == 3 && full.tightBounds(0) == 1)
    assert(full.min(c("i"), 0) == java.lang.Long.valueOf(1) && full.max(c("b"), 0) == java.lang.Long.valueOf(127))
    assert(full.min(c("l"), 0) == java.lang.Long.valueOf(Long.MinValue))
    assert(full.min(c("dec"), 0) == new java.math.BigDecimal("1.10") && full.max(c("dec"), 0) == new java.math.BigDecimal("99.99"))
    assert(full.min(c("big"), 0) == new java.math.BigDecimal("123456789012345678901234.567"))
    assert(full.max(c("big"), 0) == new java.math.BigDecimal("1.000"))
    assert(new String(full.min(c("s"), 0).asInstanceOf[Array[Byte]], UTF_8) == "a\u00e9")
    assert(new String(full.max(c("s"), 0).asInstanceOf[Array[Byte]], UTF_8) == "zz\uDBFF\uDFFF") // truncated max
    assert(full.min(c("dt"), 0) == java.lang.Long.valueOf(java.time.LocalDate.parse("2024-02-29").toEpochDay))
    assert(full.min(c("ts"), 0) == java.lang.Long.valueOf(1710063000123000L))
    assert(full.max(c("ts"), 0) == java.lang.Long.valueOf(1710063000999000L)) // -08:00 is 09:30 UTC
    assert(full.max(c("ntz"), 0) == java.lang.Long.valueOf(1710034200999000L))
    assert(full.min(c("flag"), 0) == java.lang.Boolean.FALSE && full.max(c("flag"), 0) == java.lang.Boolean.TRUE)
    assert(full.min(c("st", "x"), 0) == java.lang.Long.valueOf(5) && full.max(c("st", "x"), 0) == java.lang.Long.valueOf(7))
    assert(new String(full.max(c("st", "in", "y"), 0).asInstanceOf[Array[Byte]], UTF_8) == "z")
    assert(full.nullCount(c("st", "in", "y"), 0) == 2 && full.nullCount(c("bin"), 0) == 3)
    assert(full.min(c("bin"), 0) == null)

    val allNull = p.parse(corpus(1))
    assert(allNull.nullCount(c("i"), 0) == 4 && allNull.min(c("i"), 0) == null && allNull.tightBounds(0) == -1)
    val odd = p.parse(corpus(2))
    Seq("d", "b", "dec", "i", "dt").foreach(n => assert(odd.min(c(n), 0) == null, n))
    assert(odd.max(c("d"), 0) == java.lang.Double.valueOf(3.0))
    Seq("b", "dec", "i").foreach(n => assert(odd.max(c(n), 0) == null, n)) // out of range / precision
    assert(p.parse(corpus(3)).tightBounds(0) == 0)
    Seq(4, 5).foreach { k =>
      val none = p.parse(corpus(k))
      assert(none.numRecords(0) == -1 && columns.indices.forall(i => none.min(i, 0) == null && none.nullCount(i, 0) == -1))
    }
    assert(p.parse(corpus(6)).numRecords(0) == 7)
    val nested = p.parse(corpus(7))
    assert(nested.min(c("i"), 0) == null && nested.min(c("st", "x"), 0) == null && nested.nullCount(c("st", "x"), 0) == -1)
  }

  private val table = new Path("file:/data/typed")
  private def snapshotOf(stats: Seq[String]): Snapshot =
    Snapshot.of(table, 0L, LogSegment(0L, None, Nil, Nil, 0L), Protocol(1, 2),
      Metadata(id = "t", schemaString = "{}", partitionColumns = Seq("p")),
      stats.zipWithIndex.map { case (s, i) =>
        AddFile(s"p=${i % 3}/f-$i.parquet", Map("p" -> Some((i % 3).toString)), 10L, 0L, dataChange = true, Option(s))
      })

  private def same(a: StatsValues, ai: Int, b: StatsValues, bi: Int): Unit = {
    assert(a.numRecords(ai) == b.numRecords(bi) && a.tightBounds(ai) == b.tightBounds(bi))
    columns.indices.foreach { c =>
      assert(a.nullCount(c, ai) == b.nullCount(c, bi), columns(c))
      Seq((a.min(c, ai), b.min(c, bi)), (a.max(c, ai), b.max(c, bi))).foreach {
        case (x: Array[Byte], y: Array[Byte]) => assert(x.sameElements(y), columns(c))
        case (x, y) => assert(x == y, columns(c))
      }
    }
  }

  test("a snapshot's typed columns say what a parse of each file's JSON says") {
    val stats = (0 until 40).map(i => corpus(i % corpus.size))
    val s = snapshotOf(stats)
    val parser = StatsParser.forColumns(columns)
    var seen = 0
    s.statsByPartition.foreach { case (_, group) =>
      val typed = group.values(columns)
      (0 until group.length).foreach { i => same(typed, i, parser.parse(group.statsJson(i)), 0); seen += 1 }
      // a subset reads the same rows
      val sub = group.subset(IndexedSeq(group.length - 1, 0))
      same(sub.values(columns), 0, parser.parse(group.statsJson(group.length - 1)), 0)
    }
    assert(seen == 40)
    // a file list outside the runs (FileStatistics.of) parses its own
    val listed = FileStatistics.of(stats.map(j => (Option(j), None)))
    (0 until 40).foreach(i => same(listed.values(columns), i, parser.parse(stats(i)), 0))
  }

  test("a run parses a column once: later queries, other column sets and replayed snapshots reuse it") {
    val base = snapshotOf((0 until 30).map(i => corpus(i % 4)))
    val i = IndexedSeq(columns(0))
    def read(s: Snapshot, cols: IndexedSeq[StatsColumn]): Long =
      s.statsByPartition.map { case (_, g) =>
        val v = g.values(cols)
        (0 until g.length).map { f => if (cols.nonEmpty) v.min(0, f); v.numRecords(f) }.sum
      }.sum
    val total = read(base, i)
    assert(base.fileSet.statsColumnsBuilt == 1)
    assert(read(base, i) == total && read(base, IndexedSeq.empty) == total)
    assert(base.fileSet.statsColumnsBuilt == 1)
    read(base, IndexedSeq(columns(0), columns(7))) // one more column: only it is parsed
    assert(base.fileSet.statsColumnsBuilt == 2)
    // a later snapshot shares the base run: only the new commit's run parses
    val replay = Snapshot.Replay.from(base)
    replay(AddFile("p=0/new.parquet", Map("p" -> Some("0")), 1L, 0L, dataChange = true, Some(corpus(0))))
    val next = replay.result(1L, LogSegment(1L, None, Nil, Nil, 0L))
    read(next, IndexedSeq(columns(0), columns(7)))
    assert(next.fileSet.statsColumnsBuilt == 4) // the base run's two (shared) and the new run's two
    assert(base.fileSet.statsColumnsBuilt == 2)
    assert(next.typedStatsHeapBytes > 0)
  }

  test("a query pruned to one partition parses only the chunks holding it; each chunk parses a column once") {
    // 3 partitions interleaved row by row: chunks follow the partition grouping, not the row order
    val n = 5000
    val s = snapshotOf((0 until 3 * n).map(i => s"""{"numRecords":1,"minValues":{"i":$i},"maxValues":{"i":$i}}"""))
    val i = IndexedSeq(columns(0))
    def read(groups: Seq[(Map[String, Option[String]], FileStatistics)]): Long =
      groups.map { case (_, g) => val v = g.values(i); (0 until g.length).count(f => v.min(0, f) != null).toLong }.sum
    val one = s.statsByPartition.filter(_._1 == Map("p" -> Some("1")))
    assert(read(one) == n)
    val chunk = TypedStats.ChunkRows
    val touched = (n + n - 1) / chunk - n / chunk + 1 // chunks over positions n until 2n
    assert(s.fileSet.statsRowsParsed <= touched * chunk && s.fileSet.statsRowsParsed < 3 * n)
    assert(s.fileSet.statsColumnsBuilt == touched)
    // every file: the other chunks parse now, each once; a second pass parses nothing
    assert(read(s.statsByPartition) == 3 * n)
    val chunks = (3 * n + chunk - 1) / chunk
    assert(s.fileSet.statsRowsParsed == 3 * n && s.fileSet.statsColumnsBuilt == chunks)
    assert(read(s.statsByPartition) == 3 * n && read(one) == n)
    assert(s.fileSet.statsRowsParsed == 3 * n && s.fileSet.statsColumnsBuilt == chunks)
  }

  test("prepare builds the chunks of many groups in parallel, each chunk once, with the values a serial read gives") {
    val n = 3 * TypedStats.ChunkRows + 17
    val stats = (0 until n).map(i => if (i % 97 == 0) null else corpus(i % corpus.size))
    val s = snapshotOf(stats)
    val parallel = snapshotOf(stats)
    FileStatistics.prepare(parallel.statsByPartition.map(_._2), columns)
    val chunks = (n + TypedStats.ChunkRows - 1) / TypedStats.ChunkRows
    assert(parallel.fileSet.statsRowsParsed == n && parallel.fileSet.statsColumnsBuilt == chunks * columns.size)
    FileStatistics.prepare(parallel.statsByPartition.map(_._2), columns) // built: nothing parses again
    assert(parallel.fileSet.statsRowsParsed == n)
    s.statsByPartition.zip(parallel.statsByPartition).foreach { case ((k, serial), (k2, prepared)) =>
      assert(k == k2)
      val (a, b) = (serial.values(columns), prepared.values(columns))
      (0 until serial.length).foreach { i =>
        assert(a.numRecords(i) == b.numRecords(i) && a.tightBounds(i) == b.tightBounds(i))
        columns.indices.foreach { c =>
          assert(a.nullCount(c, i) == b.nullCount(c, i))
          assert(java.util.Objects.deepEquals(a.min(c, i), b.min(c, i)) &&
            java.util.Objects.deepEquals(a.max(c, i), b.max(c, i)), s"file $i column ${columns(c).path}")
        }
      }
    }
  }

  /** Statistics a count must take no number from: broken JSON anywhere, also inside the sections a count skips. */
  private val malformed: IndexedSeq[String] = IndexedSeq(
    """{"numRecords":3""", """{"numRecords":3,"minValues":{"i":1},""", """{"numRecords":3 "tightBounds":true}""",
    """{"numRecords":3,"maxValues":{"s":"a" x}}""", """{"numRecords":3,"numRecords":3}""",
    """{"numRecords":3,"nullCount":{"i":1,"i":1}}""", """{"numRecords":3,"minValues":{"i":01}}""",
    """{"numRecords":3,"minValues":{"s":"\q"}}""", """{"numRecords":3,"maxValues":{"st":{"x":1]}}""")
  /** Statistics whose numRecords is no count (not a long), though the JSON is whole. */
  private val noCount: IndexedSeq[String] = IndexedSeq("""{"numRecords":"3"}""", """{"numRecords":3.0}""",
    """{"numRecords":99999999999999999999}""", """[3]""", "", """{"tightBounds":true}""")

  test("numRecords alone is read as the full parse reads it, from bytes in place, and never from broken JSON") {
    val count = StatsParser.forColumns(IndexedSeq.empty)
    val full = StatsParser.forColumns(columns)
    (corpus ++ malformed ++ noCount).foreach { json =>
      val expected = full.parse(json)
      // the bytes of the JSON inside a larger array, as the table state holds them
      val inPlace = Option(json).map(j => "xx{".getBytes(UTF_8) ++ j.getBytes(UTF_8) ++ "}}".getBytes(UTF_8))
      val (array, offset, length) = inPlace.fold[(Array[Byte], Int, Int)]((null, 0, 0))(a => (a, 3, a.length - 5))
      assert(count.parse(json).numRecords(0) == expected.numRecords(0), String.valueOf(json))
      assert(count.parse(array, offset, length).numRecords(0) == expected.numRecords(0), String.valueOf(json))
      same(full.parse(array, offset, length), 0, expected, 0)
    }
    (malformed ++ noCount).foreach { json =>
      assert(full.parse(json).numRecords(0) == -1 && count.parse(json).numRecords(0) == -1, String.valueOf(json))
    }
    // in a snapshot: numRecords was read as each file entered the state, a count parses nothing; its values are the
    // full parse's, deletion vectors apart
    def dv(n: Long) = DeletionVectorDescriptor("u", s"ab${"%018d".format(n)}", Some(1), 40, n)
    val stats = (0 until TypedStats.ChunkRows + 700).map(i => (corpus ++ malformed ++ noCount)(i % 23))
    val adds = stats.zipWithIndex.map { case (j, i) =>
      AddFile(s"p=${i % 3}/f-$i.parquet", Map("p" -> Some((i % 3).toString)), 10L, 0L, dataChange = true, Option(j),
        deletionVector = if (i % 5 == 0) Some(dv(i % 3)) else if (i % 7 == 0) Some(DeletionVectorDescriptor.Empty)
        else None)
    }
    val s = Snapshot.of(table, 0L, LogSegment(0L, None, Nil, Nil, 0L), Protocol(1, 2),
      Metadata(id = "t", schemaString = "{}", partitionColumns = Seq("p")), adds)
    FileStatistics.prepare(s.statsByPartition.map(_._2), IndexedSeq.empty)
    assert(s.fileSet.statsRowsParsed == 0 && s.fileSet.statsColumnsBuilt == 0)
    val expected = adds.map(a => full.parse(a.stats.orNull).numRecords(0))
    assert(expected.count(_ >= 0) > 1000 && expected.count(_ < 0) > 1000) // counted and uncounted files both
    s.filesByPartition.zip(s.statsByPartition).foreach { case ((pv, files), (pv2, g)) =>
      assert(pv == pv2 && files.length == g.length)
      val counted = g.values(IndexedSeq.empty)
      files.indices.foreach { i =>
        assert(g.statsJson(i) == files(i).stats.orNull)
        assert(counted.numRecords(i) == full.parse(files(i).stats.orNull).numRecords(0))
        assert(g.deletedRows(i) == files(i).deletionVector.fold(0L)(_.cardinality))
      }
    }
    // a later query's columns parse each file once; numRecords stays the state's
    FileStatistics.prepare(s.statsByPartition.map(_._2), columns)
    assert(s.fileSet.statsRowsParsed == adds.size)
    s.statsByPartition.foreach { case (_, g) =>
      val v = g.values(columns)
      (0 until g.length).foreach(i => same(v, i, full.parse(g.statsJson(i)), 0))
    }
  }

  test("after removes and new commits each partition's statistics line up with its files; chunks named by range") {
    val n = 3 * TypedStats.ChunkRows + 100
    val base = snapshotOf((0 until n).map(i => s"""{"numRecords":${i + 1},"minValues":{"i":$i}}"""))
    // partition 1 alone: the chunks over its range of positions, no others
    FileStatistics.prepare(base.statsByPartition.filter(_._1 == Map("p" -> Some("1"))).map(_._2), columns.take(1))
    val per = (0 until 3).map(p => (0 until n).count(_ % 3 == p))
    val start = per(0)
    val touched = (start + per(1) - 1) / TypedStats.ChunkRows - start / TypedStats.ChunkRows + 1
    assert(base.fileSet.statsRowsParsed == touched * TypedStats.ChunkRows)
    val replay = Snapshot.Replay.from(base)
    (0 until n by 97).foreach(i => replay(RemoveFile(s"p=${i % 3}/f-$i.parquet", Some(1L), dataChange = true)))
    (0 until 30).foreach { i =>
      replay(AddFile(s"p=${i % 3}/new-$i.parquet", Map("p" -> Some((i % 3).toString)), 1L, 0L, dataChange = true,
        Some(s"""{"numRecords":$i}"""), deletionVector = if (i % 2 == 0) Some(DeletionVectorDescriptor.Empty) else None))
    }
    val next = replay.result(1L, LogSegment(1L, None, Nil, Nil, 0L))
    assert(next.fileSet.removedRows > 0 && next.fileSet.tailLength > 0) // a run with removed rows, and a new run
    val parser = StatsParser.forColumns(columns)
    var files = 0
    next.filesByPartition.zip(next.statsByPartition).foreach { case ((pv, fs), (pv2, g)) =>
      assert(pv == pv2 && fs.length == g.length)
      val v = g.values(columns)
      fs.indices.foreach { i =>
        assert(g.statsJson(i) == fs(i).stats.get && g.deletedRows(i) == 0L)
        same(v, i, parser.parse(fs(i).stats.get), 0)
      }
      val sub = g.subset(IndexedSeq(fs.length - 1, 0, fs.length / 2))
      Seq(fs.length - 1, 0, fs.length / 2).zipWithIndex.foreach { case (i, k) => assert(sub.statsJson(k) == fs(i).stats.get) }
      files += fs.length
    }
    assert(files == next.numFiles && files == n - (0 until n by 97).size + 30)
  }
}
