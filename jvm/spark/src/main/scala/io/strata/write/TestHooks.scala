package io.strata.write

import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Paths, StandardCopyOption}

import org.apache.spark.sql.SparkSession

/**
 * Test-only pause points of streaming writes, off unless the session conf `strata.test.pauseAt` names one as
 * `<point>@<batch id>` (points: [[BeforeCommit]], the batch's files are written and its log commit is next;
 * [[AfterCommit]], the log commit landed and Spark has not yet recorded the batch in its checkpoint). There the
 * driver writes its pid into the file `strata.test.pauseMarker` and blocks, so that a test can kill the process with
 * SIGKILL at exactly that point.
 */
object TestHooks {
  val PauseAtKey = "strata.test.pauseAt"
  val PauseMarkerKey = "strata.test.pauseMarker"
  val BeforeCommit = "beforeCommit"
  val AfterCommit = "afterCommit"

  def reached(point: String): Unit = SparkSession.getActiveSession.foreach { spark =>
    spark.conf.getOption(PauseAtKey).filter(_.nonEmpty).foreach { at =>
      if (StreamingBatch.runningBatchId(spark).exists(b => at == s"$point@$b")) {
        val marker = Paths.get(spark.conf.get(PauseMarkerKey))
        val tmp = marker.resolveSibling(s".${marker.getFileName}.tmp")
        Files.write(tmp, s"$at ${ProcessHandle.current().pid()}\n".getBytes(StandardCharsets.UTF_8))
        Files.move(tmp, marker, StandardCopyOption.ATOMIC_MOVE)
        Thread.sleep(Long.MaxValue) // until the test kills this process
      }
    }
  }
}
