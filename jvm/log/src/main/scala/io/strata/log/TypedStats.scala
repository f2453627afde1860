package io.strata.log

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicLong

/**
 * The statistics of a run of rows (`length`, JSON of row i: `json(i)`, null when absent), parsed into typed columns
 * once: a column is built the first time a query asks for it, in one pass over the run's JSON with the other columns
 * asked for at the same time, and kept. Runs never change once built and are shared by the snapshots replayed from
 * one another, so a table's statistics column is parsed once however many queries and snapshots read it (a run made
 * by merging others parses again, once). `numRecords` and `tightBounds` come with the first build.
 */
final class TypedStats private[log] (val length: Int, json: Int => String) {
  private val columns = new ConcurrentHashMap[StatsColumn, TypedStatsColumn]()
  @volatile private var records: Array[Long] = null
  @volatile private var tight: Array[Byte] = null
  private val built = new AtomicLong()

  /** Columns built (parsed from JSON) by this run: each column at most once. */
  def columnsBuilt: Long = built.get

  /** The typed columns of `wanted`, building those not built yet in one pass over the JSON. */
  private[log] def columnsOf(wanted: IndexedSeq[StatsColumn]): IndexedSeq[TypedStatsColumn] = {
    if (records == null || wanted.exists(c => !columns.containsKey(c))) synchronized {
      val missing = wanted.distinct.filterNot(columns.containsKey)
      if (records == null || missing.nonEmpty) build(missing)
    }
    wanted.map(columns.get)
  }

  private def build(missing: IndexedSeq[StatsColumn]): Unit = {
    val parser = StatsParser.forColumns(missing)
    val cols = missing.map(new TypedStatsColumn(_, length))
    val (rs, ts) = if (records == null) (new Array[Long](length), new Array[Byte](length)) else (null, null)
    var i = 0
    while (i < length) {
      val s = json(i)
      val parsed = parser.parse(s)
      if (rs != null) { rs(i) = parsed.records; ts(i) = parsed.tight.toByte }
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
    built.addAndGet(cols.length)
    TypedStats.builtColumns.addAndGet(cols.length)
    if (rs != null) { tight = ts; records = rs }
  }

  private[log] def numRecords(row: Int): Long = records(row)
  private[log] def tightBounds(row: Int): Int = tight(row)

  /** Heap bytes of the columns built so far. */
  def heapBytes: Long = (if (records == null) 0L else length * 9L) +
    scala.jdk.CollectionConverters.CollectionHasAsScala(columns.values).asScala.map(_.heapBytes).sum
}

object TypedStats {
  private val builtColumns = new AtomicLong()
  /** Statistics columns built from JSON in this JVM (benchmarks and tests: a second query builds none). */
  def columnsBuiltInJvm: Long = builtColumns.get

  /** Typed statistics over an explicit list of JSON strings (a file list not held in a snapshot's runs). */
  def of(json: IndexedSeq[String]): TypedStats = new TypedStats(json.length, json)
}
