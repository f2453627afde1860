package io.strata.write

import java.nio.file.{Files, Paths}
import java.util.concurrent.atomic.AtomicInteger

import io.strata.SparkTestSession
import io.strata.log.{AddFile, LocalLogStore, LogStore, TableLog}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileAlreadyExistsException, FileSystem, Path}
import org.apache.spark.sql.Row
import org.scalatest.funsuite.AnyFunSuite

/**
 * A log store that retries a put whose first attempt landed (a lost response) reports "already exists" for the
 * writer's own commit. The writer must read the commit back and find its own txnId there: a blind append must not
 * land twice, and a rewrite must neither fail against itself nor delete the files its landed commit references.
 */
class RetriedPutSuite extends AnyFunSuite with SparkTestSession {
  private def withRetriedPuts[T](body: => T): T = {
    RetriedPutLogStore.armed.set(0)
    spark.conf.set(LogStore.implKey("file"), classOf[RetriedPutLogStore].getName)
    try body finally spark.conf.unset(LogStore.implKey("file"))
  }

  private def rows(path: String): Seq[Row] = spark.read.format("strata").load(path).collect().toSeq.sortBy(_.toString)

  test("a blind append whose put is retried after landing commits once (no rows twice)") {
    val path = tempDir().resolve("append").toString
    spark.range(3).selectExpr("id", "'a' AS v").write.format("strata").save(path)
    withRetriedPuts {
      RetriedPutLogStore.armed.set(1)
      spark.range(3, 5).selectExpr("id", "'b' AS v").write.format("strata").mode("append").save(path)
    }
    assert(RetriedPutLogStore.armed.get == 0, "the store never reported its own put as existing")
    val log = TableLog.forPath(new Path(path), new Configuration())
    assert(log.snapshot().version == 1L, "the append landed twice")
    assert(rows(path).map(_.getLong(0)) == (0L until 5L))
  }

  test("a copy-on-write UPDATE whose put is retried after landing succeeds; every file it references is there") {
    val path = tempDir().resolve("update").toString
    spark.range(6).selectExpr("id", "'a' AS v").coalesce(1).write.format("strata").save(path)
    withRetriedPuts {
      RetriedPutLogStore.armed.set(1)
      spark.sql(s"UPDATE strata.`$path` SET v = 'u' WHERE id = 2")
    }
    assert(RetriedPutLogStore.armed.get == 0)
    val snap = TableLog.forPath(new Path(path), new Configuration()).snapshot()
    assert(snap.version == 1L)
    snap.files.foreach { (f: AddFile) =>
      assert(Files.exists(Paths.get(snap.absolutePath(f.path).toUri)), s"${f.path} is referenced but gone")
    }
    assert(rows(path) == (0L until 6L).map(i => Row(i, if (i == 2L) "u" else "a")))
  }
}

/** Like [[LocalLogStore]]; while armed, a commit's put lands and then reports "already exists" (the store's retry). */
final class RetriedPutLogStore(underlying: FileSystem) extends LogStore {
  private val local = new LocalLogStore(underlying)
  override def fs: FileSystem = local.fs
  override def putIfAbsent(path: Path, lines: Seq[String]): Unit = {
    local.putIfAbsent(path, lines)
    if (RetriedPutLogStore.armed.getAndUpdate(n => math.max(0, n - 1)) > 0) {
      throw new FileAlreadyExistsException(s"$path already exists (the retried request found the first one's file)")
    }
  }
}
object RetriedPutLogStore { val armed = new AtomicInteger(0) }
