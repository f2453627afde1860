package io.strata.log

import java.nio.file.{Files, Paths}

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

/**
 * Child-process writer for [[ConcurrentCommitSuite]]:
 * `ConcurrentAppender <tablePath> <writerId> <numCommits> <barrierDir> [append|overwrite]`.
 * Signals `<barrierDir>/ready-<writerId>`, waits for `<barrierDir>/go`, then does `numCommits` commits of one file
 * `w<writerId>-<i>.parquet` each, printing `COMMITTED <version> <path> <attempts>` per commit: blind appends, or
 * overwrites of the writer's own partition `p = <writerId>` (the file goes there). A typed conflict prints
 * `CONFLICT <exception class>` and the overwrite is retried on a new transaction.
 */
object ConcurrentAppender {
  def main(args: Array[String]): Unit = {
    val Array(table, writerId, n, barrier) = args.take(4)
    val overwrite = args.lift(4).contains("overwrite")
    val exit = try {
      val log = TableLog.forPath(new Path(table), new Configuration())
      Files.createFile(Paths.get(barrier, s"ready-$writerId"))
      val deadline = System.currentTimeMillis() + 60000
      while (!Files.exists(Paths.get(barrier, "go"))) {
        if (System.currentTimeMillis() > deadline) throw new IllegalStateException("no go signal within 60 s")
        Thread.sleep(2)
      }
      (1 to n.toInt).foreach { i =>
        val path = if (overwrite) s"p=$writerId/w$writerId-$i.parquet" else s"w$writerId-$i.parquet"
        val file = AddFile(path, if (overwrite) Map("p" -> Some(writerId)) else Map.empty, 100L + i,
          System.currentTimeMillis(), dataChange = true)
        var result: Option[CommitResult] = None
        while (result.isEmpty) {
          val txn = log.startTransaction()
          val op = if (!overwrite) TableOperation.Append(Seq(file)) else TableOperation.OverwriteByFilter(
            PartitionIs("p", writerId), txn.readSnapshot.get.files.filter(_.partitionValues.get("p").contains(Some(writerId))),
            Seq(file))
          try result = Some(txn.commit(op, Nil, Operation("WRITE", Map("writer" -> s"\"$writerId\""))))
          catch { case e: ConcurrentModificationException => println(s"CONFLICT ${e.getClass.getSimpleName}") }
        }
        println(s"COMMITTED ${result.get.version} $path ${result.get.attempts}")
      }
      0
    } catch {
      case t: Throwable => t.printStackTrace(); 1
    }
    System.out.flush()
    System.exit(exit)
  }
}
