package io.strata.log.bench

import io.strata.log._
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

/**
 * A whole table's count(*) from the log, as the log core serves it (issue 23): each file's `numRecords` (read as the
 * file entered the state) less its deletion vector's cardinality over every partition group, after a load and again;
 * what reading numRecords from every file's statistics costs the load; then a typed column over every file. Times are wall and this thread's CPU; parsing runs on every core.
 * `log/Test/runMain io.strata.log.bench.CountProbe <table path> [rounds]`, e.g. the metadata-scale benchmark's
 * bench/cache/scale/1000000/table (its commit 0 and checkpoint are only read).
 */
object CountProbe {
  def main(args: Array[String]): Unit = {
    val table = new Path(new java.io.File(args(0)).toURI)
    val rounds = if (args.length > 1) args(1).toInt else 3
    val threads = java.lang.management.ManagementFactory.getThreadMXBean
    def timed[T](label: String)(f: => T): T = {
      val (t, c) = (System.nanoTime(), threads.getCurrentThreadCpuTime)
      val r = f
      println(f"$label: ${(System.nanoTime() - t) / 1e6}%.0f ms (this thread's CPU ${
        (threads.getCurrentThreadCpuTime - c) / 1e6}%.0f ms) -> $r")
      r
    }
    def count(s: Snapshot): Long = {
      val groups = s.statsByPartition.map(_._2)
      FileStatistics.prepare(groups, IndexedSeq.empty)
      var rows = 0L
      groups.foreach { g =>
        val v = g.values(IndexedSeq.empty)
        var i = 0
        while (i < g.length) {
          val n = v.numRecords(i)
          if (n < 0) return -1L
          rows += n - g.deletedRows(i)
          i += 1
        }
      }
      rows
    }
    // What the load pays for it: numRecords read from every file's statistics bytes (one thread, as the replay does).
    val utf8 = {
      val s = TableLog.forPath(table, new Configuration()).snapshotAt(0)
      s.statsByPartition.flatMap { case (_, g) => (0 until g.length).map(i => Option(g.statsJson(i)).map(_.getBytes("UTF-8")).orNull) }
    }
    (1 to rounds).foreach { round =>
      timed(s"round $round: numRecords read from ${utf8.size} statistics (as a load reads them)") {
        var n = 0L
        utf8.foreach(b => n += StatsParser.recordsOnly.parse(b, 0, if (b == null) 0 else b.length).numRecords(0))
        n
      }
    }
    (1 to rounds).foreach { round =>
      val s = timed(s"round $round: load version 0")(TableLog.forPath(table, new Configuration()).snapshotAt(0))
      timed(s"round $round: count(*) after the load")(count(s))
      timed(s"round $round: count(*) again")(count(s))
      val id = IndexedSeq(StatsColumn(Seq("id"), StatsColumn.Integral(64)))
      timed(s"round $round: typed column of id over every file (numRecords built already)") {
        FileStatistics.prepare(s.statsByPartition.map(_._2), id)
      }
    }
  }
}
