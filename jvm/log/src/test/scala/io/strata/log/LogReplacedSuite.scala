package io.strata.log

import java.nio.file.{Files, StandardCopyOption}

import org.apache.hadoop.fs.{FileStatus, Path}
import org.scalatest.funsuite.AnyFunSuite

/**
 * A state this JVM holds is used only while the log still holds the history it came from (issue 47): a table
 * directory put back from a copy and written on by another process to the version held, or past it, is read anew;
 * a transaction that read the old history commits nothing ([[LogReplacedException]]), so no state cached after a
 * commit, which checkpoints are written from, is of another history.
 */
class LogReplacedSuite extends AnyFunSuite with LogTestSupport {
  private def paths(s: Snapshot): Set[String] = s.files.map(_.path).toSet

  /** Version 0 (a), 1 (b), a copy of the table at version 1, then version 2 removing a: the held version. */
  private def replacedTable(name: String) = {
    val table = tempDir(name)
    val copy = tempDir(s"$name-copy")
    val log = createTable(table, files = Seq(add("a.parquet")))
    append(log, add("b.parquet"))
    LogTestSupport.deleteRecursively(copy)
    LogTestSupport.copyRecursively(table, copy)
    // The copy keeps the commits' modification times (as cp -a, a backup restore or an object-store rollback do).
    Files.list(logDir(table)).forEach { f =>
      Files.setLastModifiedTime(copy.resolve(table.relativize(f)), Files.getLastModifiedTime(f))
    }
    log.startTransaction().commit(Seq(add("a.parquet").remove(1L)), Operation("DELETE"))
    (table, copy, log)
  }

  /** The copy put back in place of the table; another process then writes `commits` from version 2 on. */
  private def putBack(table: java.nio.file.Path, copy: java.nio.file.Path, commits: Seq[AddFile]*): Unit = {
    LogTestSupport.deleteRecursively(table)
    Files.move(copy, table, StandardCopyOption.ATOMIC_MOVE)
    commits.zipWithIndex.foreach { case (files, i) => writeCommit(table, 2L + i, files) }
  }

  test("written on to the version held: the snapshot, the head and the latest are the log's, not the held ones") {
    val (table, copy, log) = replacedTable("replaced-same")
    assert(paths(log.snapshot()) == Set("b.parquet"))
    assert(log.headOption().get.version == 2L)
    putBack(table, copy, Seq(add("c.parquet")))
    val s = log.snapshot()
    assert(s.version == 2L && paths(s) == Set("a.parquet", "b.parquet", "c.parquet"))
    assert(log.headOption().get.size.files.contains(3L))
    assert(log.latest(_ => false).get.toOption.get.numFiles == 3)
  }

  test("a backup older than the held version, written on past it: read anew; the held state is replaced") {
    val (table, copy, log) = replacedTable("replaced-older")
    append(log, add("d.parquet")) // version 3, held
    assert(paths(log.snapshot()) == Set("b.parquet", "d.parquet"))
    putBack(table, copy, Seq(add("c.parquet")))
    assert(paths(log.snapshot()) == Set("a.parquet", "b.parquet", "c.parquet")) // version 2 of the new history
    Seq(3, 4).foreach(v => writeCommit(table, v, Seq(add(s"n$v.parquet"))))
    val s = log.snapshot()
    assert(s.version == 4L && paths(s) == Set("a.parquet", "b.parquet", "c.parquet", "n3.parquet", "n4.parquet"))
    assert(log.heldSnapshot(4L).exists(_ eq s), "the new history's snapshot replaced the held one")
  }

  test("a transaction that read the old history commits nothing, with a typed error naming the version") {
    val (table, copy, log) = replacedTable("replaced-txn")
    val txn = log.startTransaction() // reads version 2 of the old history
    putBack(table, copy, Seq(add("c.parquet")))
    val e = intercept[LogReplacedException](txn.commit(Seq(add("mine.parquet")), Operation("WRITE")))
    assert(e.winningVersion == 2L && e.getCondition == "STRATA_LOG_REPLACED", e.getMessage)
    assert(e.getMessage.contains(f"${2}%020d.json"), e.getMessage)
    assert(!Files.exists(deltaFile(table, 3L)), "nothing committed")
    // Started again, on the log as it is now, the same commit lands, and a checkpoint of it holds the new history.
    val r = log.startTransaction().commit(Seq(add("mine.parquet")), Operation("WRITE"))
    assert(r.version == 3L)
    log.checkpoint(log.snapshot())
    val fresh = TableLog.forPath(hpath(table), newConf()) // another reader: from the checkpoint alone
    Seq(0L, 1L, 2L, 3L).foreach(v => Files.delete(deltaFile(table, v)))
    assert(paths(fresh.snapshot()) == Set("a.parquet", "b.parquet", "c.parquet", "mine.parquet"))
  }

  test("a transaction whose read version's commit is gone (a backup of an older version put back) writes no gap") {
    val (table, copy, log) = replacedTable("replaced-gone")
    val txn = log.startTransaction() // version 2
    putBack(table, copy) // back to version 1: committing version 3 would leave version 2 missing
    val e = intercept[LogReplacedException](txn.commit(Seq(add("mine.parquet")), Operation("WRITE")))
    assert(e.winningOperation == "gone" && e.getMessage.contains("absent"), e.getMessage)
    assert(!Files.exists(deltaFile(table, 3L)) && !Files.exists(deltaFile(table, 2L)))
  }

  test("a file stamp tells files apart by length and ETag where both have one, else by length and modification time") {
    val p = new Path("/t/_delta_log/00000000000000000001.json")
    final class Tagged(len: Long, time: Long, tag: String) extends FileStatus(len, false, 1, 1, time, p)
      with org.apache.hadoop.fs.EtagSource { def getEtag: String = tag }
    def tagged(len: Long, time: Long, tag: String) = FileStamp.of(new Tagged(len, time, tag))
    def plain(len: Long, time: Long) = FileStamp.of(new FileStatus(len, false, 1, 1, time, p))
    assert(plain(10, 1000L) == FileStamp(10, 1000L, None))
    // A listing and a HEAD of one object: quotes and the time's precision may differ, the ETag does not.
    assert(tagged(10, 1000L, "\"abc\"").sameFile(tagged(10, 1999L, "abc")))
    assert(tagged(10, 1000L, "abc").key == tagged(10, 1999L, "\"abc\"").key)
    // Two uploads within one second: the same length and time, other ETags.
    assert(!tagged(10, 1000L, "abc").sameFile(tagged(10, 1000L, "abd")))
    assert(!tagged(11, 1000L, "abc").sameFile(tagged(10, 1000L, "abc")))
    assert(!plain(11, 1000L).sameFile(plain(10, 1000L)) && !plain(10, 1001L).sameFile(plain(10, 1000L)))
    assert(plain(10, 1000L).sameFile(plain(10, 1000L)))
    assert(FileStamp.same(None, None) && !FileStamp.same(Some(plain(1, 1)), None))
  }
}
