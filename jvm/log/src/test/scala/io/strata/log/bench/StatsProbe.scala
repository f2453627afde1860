package io.strata.log.bench

import java.nio.file.Files

import io.strata.log._
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

/**
 * Typed statistics columns at scale (issue 23): on [[ScaleProbe]]'s synthetic table of N files (one statistics
 * column, `id`), the heap a file's state takes without and with the typed column of `id`, and the time of a
 * stats-pruned "query" (the files whose id range holds one value, over every file) that builds the typed column,
 * then again from it, against parsing every file's JSON per query (streaming, and as a tree: what skipping did before);
 * first of all, a query of one partition (its chunks of the typed column only).
 * `log/Test/runMain io.strata.log.bench.StatsProbe <files> [dir]`; run in a JVM with the heap to test (-Xmx3g).
 */
object StatsProbe {
  def main(args: Array[String]): Unit = {
    val n = args.headOption.map(_.toInt).getOrElse(1000000)
    val dir = if (args.length > 1) new java.io.File(args(1)) else Files.createTempDirectory("stats").toFile
    val conf = new Configuration()
    ScaleProbe.generate(n, dir, conf)
    def heap(): Long = { (1 to 3).foreach(_ => System.gc()); val r = Runtime.getRuntime; r.totalMemory - r.freeMemory }
    val empty = heap()
    val s = TableLog.forPath(new Path(dir.toURI), conf).snapshotAt(0)
    val loaded = heap()
    val (state, noStats) = s.stateHeapBytes
    println(f"${s.numFiles} files: heap held ${(loaded - empty).toDouble / n}%.0f B/file; state " +
      f"${state.toDouble / n}%.0f B/file, ${noStats.toDouble / n}%.0f B/file without the statistics JSON")
    val id = IndexedSeq(StatsColumn(Seq("id"), StatsColumn.Integral(64)))
    val target = java.lang.Long.valueOf(n / 2 * 10L + 5) // in exactly one file

    def typedQuery(): Int = {
      var kept = 0
      s.statsByPartition.foreach { case (_, g) =>
        val v = g.values(id)
        var i = 0
        while (i < g.length) {
          val (lo, hi) = (v.min(0, i), v.max(0, i))
          if (lo == null || hi == null || (target >= lo.asInstanceOf[java.lang.Long] && target <= hi.asInstanceOf[java.lang.Long])) kept += 1
          i += 1
        }
      }
      kept
    }
    def parsedQuery(tree: Boolean): Int = {
      val parser = StatsParser.forColumns(id)
      var kept = 0
      s.statsByPartition.foreach { case (_, g) =>
        var i = 0
        while (i < g.length) {
          val json = g.statsJson(i)
          val (lo, hi): (AnyRef, AnyRef) = if (tree) {
            val t = ActionCodec.mapper.readTree(json)
            (java.lang.Long.valueOf(t.get("minValues").get("id").asLong), java.lang.Long.valueOf(t.get("maxValues").get("id").asLong))
          } else { val p = parser.parse(json); (p.min(0, 0), p.max(0, 0)) }
          if (lo == null || hi == null || (target >= lo.asInstanceOf[java.lang.Long] && target <= hi.asInstanceOf[java.lang.Long])) kept += 1
          i += 1
        }
      }
      kept
    }
    def timed[T](label: String)(f: => T): T = {
      val t = System.nanoTime(); val r = f
      println(f"$label: ${(System.nanoTime() - t) / 1e6}%.0f ms ($r files kept)")
      r
    }
    def walk(): Int = { // what every pass below pays before reading a value: the groups and their positions
      var files = 0
      s.statsByPartition.foreach { case (_, g) => var i = 0; while (i < g.length) { if (g.deletedRows(i) == 0) files += 1; i += 1 } }
      files
    }
    // A query pruned to one partition first (as partition filters leave it): only the chunks holding it parse.
    val groups = s.statsByPartition
    def onePartition(): Int = {
      val g = groups(groups.size / 2)._2
      val v = g.values(id)
      (0 until g.length).count(i => v.min(0, i) != null)
    }
    timed("1st query of one partition from typed columns (builds its chunks only)")(onePartition())
    println(f"  rows parsed: ${s.fileSet.statsRowsParsed}%,d of $n%,d")
    timed("2nd query of that partition")(onePartition())
    timed("walk every file's position (no statistics read)")(walk())
    timed("re-parse every file's JSON as a tree (as skipping did per query before)")(parsedQuery(tree = true))
    timed("re-parse every file's JSON, streaming, per query")(parsedQuery(tree = false))
    timed("again, streaming re-parse")(parsedQuery(tree = false))
    timed("1st query over every file from typed columns (builds the other chunks' column of id)")(typedQuery())
    val typed = heap()
    println(f"typed column of id: heap +${(typed - loaded).toDouble / n}%.1f B/file (counted ${s.typedStatsHeapBytes.toDouble / n}%.1f B/file); " +
      f"state with it ${(noStats + s.typedStatsHeapBytes).toDouble / n}%.0f B/file without the JSON, " +
      f"${(state + s.typedStatsHeapBytes).toDouble / n}%.0f with")
    timed("2nd query from typed columns (parsed once)")(typedQuery())
    timed("3rd query from typed columns")(typedQuery())
    require(s eq s) // keep the snapshot reachable until here
  }
}
