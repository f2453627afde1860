package io.strata.log.bench

import java.nio.file.Files

import io.strata.log._
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

/**
 * Times one checkpoint write of ScaleProbe's synthetic table (N live files) and reports the peak heap in use and the
 * process's peak RSS while writing. `log/Test/runMain io.strata.log.bench.CheckpointProbe <files> <dir> <mode>`,
 * one JVM per mode: `legacy` (what TableLog.checkpoint did before multi-part checkpoints: every action collected into
 * a Vector, then one file) or `parts=<actions per part>` (CheckpointWriter: slices written in parallel). The
 * checkpoint goes to a scratch log beside the table, which is left as it was; the table is then loaded from it.
 */
object CheckpointProbe {
  def main(args: Array[String]): Unit = {
    val n = args(0).toInt
    val dir = new java.io.File(args(1))
    val mode = args(2)
    val conf = new Configuration()
    ScaleProbe.generate(n, dir, conf)
    val snapshot = TableLog.forPath(new Path(dir.toURI), conf).snapshotAt(0)
    val scratch = Files.createTempDirectory("checkpoint-probe")
    val out = TableLog.forPath(new Path(scratch.toUri), conf)
    Files.createDirectories(scratch.resolve("_delta_log"))
    System.gc()
    val mem = java.lang.management.ManagementFactory.getMemoryMXBean
    val baseHeap = mem.getHeapMemoryUsage.getUsed
    @volatile var peakHeap = baseHeap
    @volatile var running = true
    val sampler = new Thread(() => while (running) {
      peakHeap = math.max(peakHeap, mem.getHeapMemoryUsage.getUsed); Thread.sleep(20)
    })
    sampler.setDaemon(true); sampler.start()
    val t0 = System.nanoTime()
    val (files, bytes) = mode match {
      case "legacy" =>
        val actions = snapshot.checkpointActions(0L).toVector
        val path = FileNames.checkpointFile(out.logPath, 0)
        (1, out.store.writeCheckpoint(path, actions.iterator))
      case m if m.startsWith("parts=") =>
        val w = CheckpointWriter.write(out, snapshot, m.stripPrefix("parts=").toLong, 0L)
        (w.files.size, w.bytes)
    }
    val secs = (System.nanoTime() - t0) / 1e9
    running = false; sampler.join()
    val hwm = scala.io.Source.fromFile("/proc/self/status").getLines().find(_.startsWith("VmHWM")).getOrElse("?")
    println(f"$mode: ${snapshot.numFiles} files -> $files file(s), ${bytes / 1e6}%.1f MB in $secs%.1f s; " +
      f"peak heap in use ${(peakHeap - baseHeap) / 1e6}%.0f MB above the loaded table; process $hwm")
    // and a cold load of the table from that checkpoint alone (parts are read ahead on other threads)
    SnapshotCache.invalidate(out.tablePath.toString)
    System.gc()
    val t1 = System.nanoTime()
    val loaded = TableLog.forPath(new Path(scratch.toUri), conf).snapshotAt(0)
    println(f"  cold load of ${loaded.numFiles} files from it: ${(System.nanoTime() - t1) / 1e9}%.1f s")
    LogTestSupport.deleteRecursively(scratch)
  }
}
