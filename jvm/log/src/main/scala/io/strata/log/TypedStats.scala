package io.strata.log

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicLong

/**
 * The statistics of a run of rows (`length`, held in `rows`: JSON per row, null when absent), parsed into typed
 * columns once: a column is built the first time a query asks for it, in one pass over the JSON of the rows asked for
 * with the other columns asked for at the same time, and kept. Runs never change once built and are shared by the
 * snapshots replayed from one another, so a table's statistics column is parsed once however many queries and
 * snapshots read it (a run made by merging others parses again, once).
 *
 * The run is cut into chunks of [[TypedStats.ChunkRows]] rows taken in `order` (the run's rows grouped by partition,
 * [[RowGroups]]), each built on its own when a query first reads one of its rows: a query that pruned to one
 * partition of a million-file run parses the chunk or two holding that partition, not the million (issue 23).
 * Readers address rows by their position in that order ([[FileStatistics]]: a partition's rows are a range of
 * positions, so its chunks are named without visiting its files). `tightBounds` comes with a chunk's first build;
 * `numRecords` is not parsed here at all: each file's was read as it entered the state ([[Rows.numRecords]]), so a
 * count over every file builds no chunk.
 */
final class TypedStats private[log] (val length: Int, private[log] val rows: TypedStats.Rows,
                                     order: () => Array[Int]) {
  import TypedStats._

  private val chunks = new Array[Chunk]((length + ChunkRows - 1) / ChunkRows)
  /** Position -> row (null until first asked; empty while rows are in their own order). */
  @volatile private var ordered: Array[Int] = null
  private val rowsParsed = new AtomicLong()

  private def orderedRows: Array[Int] = {
    if (ordered == null) synchronized {
      if (ordered == null) {
        val rows = order()
        ordered = if (rows == null) Array.emptyIntArray else rows
      }
    }
    ordered
  }

  /** The row at `position` of the chunk order (`chunk(position / ChunkRows)`, slot `position % ChunkRows`). */
  private[log] def rowAt(position: Int): Int = { val o = orderedRows; if (o.length == 0) position else o(position) }

  /** The chunk holding positions `k * ChunkRows` until `(k + 1) * ChunkRows` (created, not built, when first asked). */
  private[log] def chunk(k: Int): Chunk = {
    var c = chunks(k)
    if (c == null) synchronized {
      c = chunks(k)
      if (c == null) {
        val from = k * ChunkRows
        val order = orderedRows
        val n = math.min(ChunkRows, length - from)
        c = new Chunk(n, if (order.length == 0) i => from + i else i => order(from + i))
        chunks(k) = c
      }
    }
    c
  }

  private def built: Iterator[Chunk] = chunks.iterator.filter(_ != null)

  /** Columns built (parsed from JSON) by this run's chunks: each column at most once per chunk. */
  def columnsBuilt: Long = built.map(_.columnsBuilt).sum
  /** JSON parses of rows, one per row of a chunk each time the chunk builds columns (at most once per column). */
  def rowsParsedCount: Long = rowsParsed.get
  /** Chunks of this run with at least one column built. */
  def chunksBuilt: Int = built.count(_.columnsBuilt > 0)

  /** Heap bytes of the columns built so far. */
  def heapBytes: Long = built.map(_.heapBytes).sum

  /** `n` rows of the run (slot i is row `rowAt(i)`), their columns built when first asked, once. */
  private[log] final class Chunk(n: Int, rowAt: Int => Int) {
    private val columns = new ConcurrentHashMap[StatsColumn, TypedStatsColumn]()
    @volatile private var tight: Array[Byte] = null
    private val builds = new AtomicLong()

    def columnsBuilt: Long = builds.get

    /** The typed columns of `wanted`, building those not built yet in one pass over the chunk's JSON. */
    def columnsOf(wanted: IndexedSeq[StatsColumn]): IndexedSeq[TypedStatsColumn] = {
      if (tight == null || wanted.exists(c => !columns.containsKey(c))) synchronized {
        val missing = wanted.distinct.filterNot(columns.containsKey)
        if (tight == null || missing.nonEmpty) build(missing)
      }
      wanted.map(columns.get)
    }

    private def build(missing: IndexedSeq[StatsColumn]): Unit = {
      val parser = StatsParser.forColumns(missing)
      val cols = missing.map(new TypedStatsColumn(_, n))
      val ts = if (tight == null) new Array[Byte](n) else null
      var i = 0
      while (i < n) {
        val parsed = rows.parseStats(rowAt(i), parser)
        if (ts != null) ts(i) = parsed.tight.toByte
        var c = 0
        while (c < cols.length) {
          val col = cols(c)
          col.nullCounts(i) = parsed.nullCounts(c)
          col.mins.set(i, parsed.mins(c)); col.maxs.set(i, parsed.maxs(c))
          c += 1
        }
        i += 1
      }
      cols.foreach(c => columns.put(c.column, c))
      builds.addAndGet(cols.length)
      rowsParsed.addAndGet(n)
      builtColumns.addAndGet(cols.length)
      if (ts != null) tight = ts
    }

    def tightBounds(slot: Int): Int = tight(slot)

    def heapBytes: Long = (if (tight == null) 0L else n.toLong) +
      scala.jdk.CollectionConverters.CollectionHasAsScala(columns.values).asScala.map(_.heapBytes).sum
  }
}

object TypedStats {
  /** Rows per chunk: small enough that a pruned query parses little more than it reads, large enough to keep few. */
  private[log] val ChunkRows = 4096

  private val builtColumns = new AtomicLong()
  /** Statistics columns built from JSON in this JVM, per chunk (benchmarks and tests: a second query builds none). */
  def columnsBuiltInJvm: Long = builtColumns.get

  /** Where a run's statistics and deletion vectors are read, by row. */
  private[log] trait Rows {
    /** Row i's statistics JSON, or null. */
    def statsString(i: Int): String
    /** Row i's `numRecords` (-1 unknown), read once, when the row was added. */
    def numRecords(i: Int): Long
    /** Row i's statistics as `parser` reads them (parsed where they are held). */
    def parseStats(i: Int, parser: StatsParser.For): StatsParser.Parsed
    /** Row i's deletion vector, or null. */
    def deletionVector(i: Int): DeletionVectorDescriptor
  }

  /** Typed statistics over an explicit file list (statistics JSON, deletion vector) not held in a snapshot's runs. */
  private[log] def of(files: IndexedSeq[(Option[String], Option[DeletionVectorDescriptor])]): TypedStats =
    new TypedStats(files.length, new Rows {
      private lazy val records = files.map(f => StatsParser.recordsOnly.parse(f._1.orNull).numRecords(0))
      def numRecords(i: Int): Long = records(i)
      def statsString(i: Int): String = files(i)._1.orNull
      def parseStats(i: Int, parser: StatsParser.For): StatsParser.Parsed = parser.parse(statsString(i))
      def deletionVector(i: Int): DeletionVectorDescriptor = files(i)._2.orNull
    }, () => null)
}
