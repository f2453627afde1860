package io.strata.write

import java.nio.file.{Files, Path => JPath}

import io.strata.log.{AddFile, LogTestSupport, Operation, TableLog}
import org.scalatest.funsuite.AnyFunSuite

/** The abort sweep deletes this job's leftovers only: never another writer's file, never a committed one. */
class JobFilesSuite extends AnyFunSuite with LogTestSupport {
  private def touch(table: JPath, relative: String): JPath = {
    val f = table.resolve(relative)
    Files.createDirectories(f.getParent)
    Files.write(f, Array[Byte](1, 2, 3))
  }

  test("the sweep deletes the job's unreferenced files and keeps committed ones and other writers' look-alikes") {
    val table = tempDir("sweep")
    val jobs = new JobFiles(table.toUri.toString)
    val log = createTable(table, metadata(Seq("p")))
    val leftover = jobs.fileName(3, 0, ".snappy.parquet")
    val committed = jobs.fileName(4, 0, ".snappy.parquet")
    touch(table, s"p=a/$leftover")
    touch(table, s"p=a/$committed")
    // A file this job wrote that nevertheless ended up in the log (e.g. committed by a retried statement) stays.
    log.startTransaction().commit(Seq(AddFile(s"p=a/$committed", Map("p" -> Some("a")), 3L, 1L, dataChange = true)),
      Operation("WRITE"))
    // Spark-style names of other writers, one starting with the same first 8 hex digits as this job's UUID.
    val lookAlike = s"part-00003-${jobs.token.take(8)}-1111-2222-3333-444455556666-c000.snappy.parquet"
    val other = s"part-00000-${java.util.UUID.randomUUID()}-c000.snappy.parquet"
    touch(table, s"p=a/$lookAlike")
    touch(table, s"p=b/$other")

    assert(jobs.isJobFile(leftover) && !jobs.isJobFile(lookAlike) && !jobs.isJobFile(other))
    jobs.sweepAfterAbort(newConf(), waitMs = 0L)
    assert(!Files.exists(table.resolve(s"p=a/$leftover")), "the job's leftover is deleted")
    assert(Files.exists(table.resolve(s"p=a/$committed")), "a file the table references is never deleted")
    assert(Files.exists(table.resolve(s"p=a/$lookAlike")) && Files.exists(table.resolve(s"p=b/$other")))
    assert(TableLog.forPath(hpath(table), newConf()).snapshot().files.map(_.path) == Seq(s"p=a/$committed"))
  }
}
