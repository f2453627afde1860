package io.strata.log

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Paths, Path => JPath}
import java.util.concurrent.TimeUnit

import io.strata.ChildJvm
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

/**
 * Child-process writer for [[ConcurrentCommitSuite]]:
 * `ConcurrentAppender <tablePath> <writerId> <numCommits> <barrierDir> [append|overwrite]`.
 * Signals `<barrierDir>/ready-<writerId>`, waits for `<barrierDir>/go`, then does `numCommits` commits of one file
 * `w<writerId>-<i>.parquet` each, printing `COMMITTED <version> <path> <attempts>` per commit: blind appends, or
 * overwrites of the writer's own partition `p = <writerId>` (the file goes there). A typed conflict prints
 * `CONFLICT <exception class>` and the overwrite is retried on a new transaction. System properties
 * `strata.test.hadoop.<key>=<value>` become Hadoop settings (S3A's endpoint and credentials for S3 tables).
 */
object ConcurrentAppender {
  val HadoopPrefix = "strata.test.hadoop."

  /**
   * Runs `processes` child JVMs of this writer against `table`, released together (through files in `barrier`);
   * returns each commit (version, path, attempts) and each typed conflict a writer reported (and retried).
   * `hadoop` settings reach the children as `strata.test.hadoop.*` system properties.
   */
  def runWriters(table: String, barrier: JPath, processes: Int, perProcess: Int, mode: String,
                 hadoop: Map[String, String] = Map.empty): (Seq[(Long, String, Int)], Seq[String]) = {
    val props = hadoop.map { case (k, v) => s"-D$HadoopPrefix$k=$v" }.toSeq
    val outputs = (1 to processes).map(i => barrier.resolve(s"out-$i.txt"))
    val procs = (1 to processes).map { i =>
      ChildJvm.startWith(props ++ Seq("-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"), outputs(i - 1).toFile,
        "io.strata.log.ConcurrentAppender", table, i.toString, perProcess.toString, barrier.toString, mode)
    }
    def output(i: Int): String = new String(Files.readAllBytes(outputs(i)), UTF_8)
    try {
      val readyBy = System.currentTimeMillis() + 90000
      while ((1 to processes).exists(i => !Files.exists(barrier.resolve(s"ready-$i")))) {
        if (System.currentTimeMillis() > readyBy || procs.exists(!_.isAlive)) {
          throw new AssertionError(s"child JVMs did not get ready: ${outputs.indices.map(output).mkString("\n---\n")}")
        }
        Thread.sleep(20)
      }
      Files.createFile(barrier.resolve("go"))
      procs.zipWithIndex.foreach { case (p, i) =>
        if (!p.waitFor(150, TimeUnit.SECONDS)) throw new AssertionError(s"child ${i + 1} did not finish")
        if (p.exitValue != 0) throw new AssertionError(s"child ${i + 1} failed:\n${output(i)}")
      }
    } finally procs.foreach(p => if (p.isAlive) p.destroyForcibly())
    val lines = outputs.indices.flatMap(i => output(i).linesIterator)
    (lines.filter(_.startsWith("COMMITTED ")).map(_.split(" ")).map(a => (a(1).toLong, a(2), a(3).toInt)),
      lines.filter(_.startsWith("CONFLICT ")).map(_.stripPrefix("CONFLICT ")))
  }

  def main(args: Array[String]): Unit = {
    val Array(table, writerId, n, barrier) = args.take(4)
    val overwrite = args.lift(4).contains("overwrite")
    val exit = try {
      val conf = new Configuration()
      sys.props.toMap.collect { case (k, v) if k.startsWith(HadoopPrefix) => conf.set(k.stripPrefix(HadoopPrefix), v) }
      val log = TableLog.forPath(new Path(table), conf)
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
