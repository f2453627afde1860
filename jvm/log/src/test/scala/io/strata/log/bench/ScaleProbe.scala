package io.strata.log.bench

import java.nio.file.Files

import io.strata.log._
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

/**
 * Loads a synthetic table of N live files (one commit of N adds across 1,000 partitions, then a checkpoint) with the
 * log core alone and prints load times and the heap the snapshot holds. `log/Test/runMain
 * io.strata.log.bench.ScaleProbe <files> [dir]`; run in a JVM with the heap to test (e.g. -Xmx2g).
 */
object ScaleProbe {
  def main(args: Array[String]): Unit = {
    val n = args.headOption.map(_.toInt).getOrElse(1000000)
    val dir = if (args.length > 1) new java.io.File(args(1)) else Files.createTempDirectory("scale").toFile
    val table = new Path(dir.toURI)
    val conf = new Configuration()
    generate(n, dir, conf)
    def heap(): Long = { System.gc(); System.gc(); val r = Runtime.getRuntime; r.totalMemory - r.freeMemory }
    val before = heap()
    val t1 = System.nanoTime()
    val s = TableLog.forPath(table, conf).snapshotAt(0)
    val cold = (System.nanoTime() - t1) / 1e9
    val held = heap() - before
    val (state, noStats) = s.stateHeapBytes
    println(f"cold load ${s.numFiles} files: $cold%.1f s; heap held ${held / 1e6}%.0f MB " +
      f"(${held.toDouble / s.numFiles}%.0f B/file); state ${state / 1e6}%.0f MB, ${noStats.toDouble / s.numFiles}%.0f B/file without stats")
    val t2 = System.nanoTime()
    val paths = s.files.iterator.count(_.partitionValues("p").contains("5"))
    println(f"materialise all files, filter p=5 ($paths): ${(System.nanoTime() - t2) / 1e9}%.1f s")
    val t3 = System.nanoTime()
    val inP5 = s.filesByPartition.collectFirst { case (pv, files) if pv("p").contains("5") => files.size }
    println(f"partition p=5 by group (${inP5.getOrElse(0)} files): ${(System.nanoTime() - t3) / 1e9}%.2f s")
    // Appends of one file each: load (incremental after the first), commit, as a writer does.
    (1 to 12).foreach { i =>
      val t = System.nanoTime()
      val log = TableLog.forPath(table, conf)
      val txn = log.startTransaction()
      val r = txn.commit(Seq(AddFile(s"p=1/new-$i-${System.nanoTime()}.parquet", Map("p" -> Some("1")), 10L, 0L,
        dataChange = true)), Operation("WRITE"))
      println(f"one-file append -> v${r.version}: ${(System.nanoTime() - t) / 1e6}%.0f ms")
    }
  }
  /** Writes the synthetic table (commit 0 of `n` adds, then a checkpoint) into `dir` unless it is there. */
  def generate(n: Int, dir: java.io.File, conf: Configuration): Unit = {
    val table = new Path(dir.toURI)
    val log = TableLog.forPath(table, conf)
    if (!log.exists) {
      val t0 = System.nanoTime()
      val logDir = new java.io.File(dir, "_delta_log"); logDir.mkdirs()
      val w = Files.newBufferedWriter(new java.io.File(logDir, f"${0}%020d.json").toPath)
      w.write("""{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}""" + "\n")
      w.write("""{"metaData":{"id":"scale","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}},{\"name\":\"p\",\"type\":\"integer\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":["p"],"configuration":{},"createdTime":0}}""" + "\n")
      (0 until n).foreach { i =>
        val p = i % 1000
        w.write(s"""{"add":{"path":"p=$p/part-${"%05d".format(i % 100000)}-${java.util.UUID.nameUUIDFromBytes(BigInt(i).toByteArray)}.c000.snappy.parquet","partitionValues":{"p":"$p"},"size":${1000 + i % 777},"modificationTime":1700000000000,"dataChange":true,"stats":"{\\"numRecords\\":10,\\"minValues\\":{\\"id\\":${i * 10}},\\"maxValues\\":{\\"id\\":${i * 10 + 9}},\\"nullCount\\":{\\"id\\":0}}"}}""" + "\n")
      }
      w.close()
      val s = TableLog.forPath(table, conf).snapshotAt(0)
      log.checkpoint(s)
      println(f"generated $n files in ${(System.nanoTime() - t0) / 1e9}%.1f s at $dir")
    }
  }
}
