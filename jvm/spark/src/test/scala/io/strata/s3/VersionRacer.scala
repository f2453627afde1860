package io.strata.s3

import java.nio.file.{Files, Path => JPath, Paths}

import io.strata.log.{ConcurrentAppender, FileNames, S3LogStore, TableLog}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileAlreadyExistsException, Path}

/**
 * Child process for the cross-process race on S3: `VersionRacer <table> <id> <processes> <versions> <barrierDir>`.
 * For each version it creates `<barrierDir>/v<version>-<id>`, waits until every process has created its marker for
 * that version, then tries to create the version with `S3LogStore.putIfAbsent`, printing `WON <version>` or
 * `LOST <version> <cause>`. Hadoop settings come as `strata.test.hadoop.<key>` system properties.
 */
object VersionRacer {
  /** Waits until all `processes` markers of `round` exist (polling: the outcome never depends on how long it takes). */
  def await(barrier: JPath, round: String, processes: Int): Unit = {
    val deadline = System.currentTimeMillis() + 120000
    while ((1 to processes).exists(p => !Files.exists(barrier.resolve(s"$round-$p")))) {
      if (System.currentTimeMillis() > deadline) throw new IllegalStateException(s"barrier $round: not all processes came")
      Thread.sleep(1)
    }
  }

  def main(args: Array[String]): Unit = {
    val Array(table, id, processes, versions, barrierDir) = args
    val barrier = Paths.get(barrierDir)
    val exit = try {
      val conf = new Configuration()
      sys.props.toMap.collect { case (k, v) if k.startsWith(ConcurrentAppender.HadoopPrefix) =>
        conf.set(k.stripPrefix(ConcurrentAppender.HadoopPrefix), v)
      }
      val log = TableLog.forPath(new Path(table), conf)
      val store = log.store.asInstanceOf[S3LogStore]
      // Start-up work (the S3A client, the endpoint probe) before the race, so that no process is still starting.
      store.requireConditionalCreate(FileNames.deltaFile(log.logPath, 0L))
      (0 until versions.toInt).foreach { v =>
        Files.createFile(barrier.resolve(s"v$v-$id"))
        await(barrier, s"v$v", processes.toInt)
        try {
          store.putIfAbsent(FileNames.deltaFile(log.logPath, v.toLong), Seq(s"""{"writer":$id,"version":$v}"""))
          println(s"WON $v")
        } catch {
          case e: FileAlreadyExistsException => println(s"LOST $v ${String.valueOf(e.getCause).replace('\n', ' ')}")
        }
      }
      0
    } catch { case t: Throwable => t.printStackTrace(); 1 }
    System.out.flush()
    System.exit(exit)
  }
}
