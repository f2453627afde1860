package io.strata.log

import java.nio.file.{Files, Paths}

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

/**
 * Child-process writer for [[ConcurrentCommitSuite]]:
 * `ConcurrentAppender <tablePath> <writerId> <numCommits> <barrierDir>`.
 * Signals `<barrierDir>/ready-<writerId>`, waits for `<barrierDir>/go`, then does `numCommits` blind appends of one
 * file `w<writerId>-<i>.parquet` each, printing `COMMITTED <version> <path> <attempts>` per commit.
 */
object ConcurrentAppender {
  def main(args: Array[String]): Unit = {
    val Array(table, writerId, n, barrier) = args
    val exit = try {
      val log = TableLog.forPath(new Path(table), new Configuration())
      Files.createFile(Paths.get(barrier, s"ready-$writerId"))
      val deadline = System.currentTimeMillis() + 60000
      while (!Files.exists(Paths.get(barrier, "go"))) {
        if (System.currentTimeMillis() > deadline) throw new IllegalStateException("no go signal within 60 s")
        Thread.sleep(2)
      }
      (1 to n.toInt).foreach { i =>
        val path = s"w$writerId-$i.parquet"
        val r = log.startTransaction().commit(
          Seq(AddFile(path, Map.empty, 100L + i, System.currentTimeMillis(), dataChange = true)),
          Operation("WRITE", Map("writer" -> s"\"$writerId\"")))
        println(s"COMMITTED ${r.version} $path ${r.attempts}")
      }
      0
    } catch {
      case t: Throwable => t.printStackTrace(); 1
    }
    System.out.flush()
    System.exit(exit)
  }
}
