package io.strata.log.bench

import java.nio.file.Files

import io.strata.log._
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

/**
 * What in-commit timestamps cost a commit: `log/Test/runMain io.strata.log.bench.CommitProbe <commits>` makes two
 * local tables, one plain and one with `delta.enableInCommitTimestamps`, appends one file per commit to each (from the
 * cached snapshot, as a writer in one JVM does) alternately, and prints the median and mean milliseconds per commit
 * (the ICT table reads the previous commit's commitInfo before each). Checkpoints are off (interval above the count).
 */
object CommitProbe {
  def main(args: Array[String]): Unit = {
    val n = args.headOption.map(_.toInt).getOrElse(300)
    val conf = new Configuration()
    def table(ict: Boolean): TableLog = {
      val dir = Files.createTempDirectory(if (ict) "commit-probe-ict" else "commit-probe")
      val log = TableLog.forPath(new Path(dir.toUri), conf)
      val txn = log.startTransaction()
      val props = Map("delta.checkpointInterval" -> (n * 10).toString) ++
        (if (ict) Map("delta.enableInCommitTimestamps" -> "true") else Map.empty)
      txn.updateMetadata(Metadata(id = java.util.UUID.randomUUID().toString, schemaString =
        """{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}""",
        partitionColumns = Nil, configuration = props, createdTime = Some(System.currentTimeMillis())))
      txn.commit(Nil, Operation("CREATE TABLE"))
      log
    }
    val logs = Seq(false, true).map(ict => ict -> table(ict))
    val times = logs.map { case (ict, _) => ict -> Array.newBuilder[Double] }.toMap
    for (i <- 0 until n; (ict, log) <- logs) {
      val start = System.nanoTime()
      log.startTransaction().commit(Seq(AddFile(s"f$i.parquet", Map.empty, 10L, System.currentTimeMillis(),
        dataChange = true)), Operation("WRITE"))
      times(ict) += (System.nanoTime() - start) / 1e6
    }
    logs.foreach { case (ict, _) =>
      val t = times(ict).result().drop(n / 10).sorted // the first tenth warms the JVM up
      println(f"${if (ict) "in-commit timestamps" else "plain"}%-21s commits ${t.length}%d  median ${t(t.length / 2)}%.2f ms" +
        f"  mean ${t.sum / t.length}%.2f ms")
    }
  }
}
