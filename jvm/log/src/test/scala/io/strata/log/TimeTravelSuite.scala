package io.strata.log

import org.scalatest.funsuite.AnyFunSuite

/** Time travel by timestamp: in-commit timestamps where the table has them, file modification times elsewhere. */
class TimeTravelSuite extends AnyFunSuite with LogTestSupport {
  private def info(ict: Option[Long]): CommitInfo = {
    val o = ActionCodec.mapper.createObjectNode()
    ict.foreach(o.put("inCommitTimestamp", _))
    o.put("timestamp", ict.getOrElse(0L)).put("operation", "WRITE")
    CommitInfo(o)
  }

  /** Writes commit `v` (commitInfo first, as PROTOCOL.md asks with in-commit timestamps) and sets its file time. */
  private def commit(table: java.nio.file.Path, v: Long, fileTime: Long, ict: Option[Long], actions: Action*): Unit = {
    writeCommit(table, v, info(ict) +: actions)
    assert(deltaFile(table, v).toFile.setLastModified(fileTime))
  }

  private val ictConf = Map("delta.enableInCommitTimestamps" -> "true")

  test("versions from the enablement version on use commitInfo.inCommitTimestamp, earlier ones file times") {
    val table = tempDir()
    val meta = metadata()
    val far = System.currentTimeMillis() // file times of the ICT commits: far from their in-commit timestamps
    commit(table, 0, 1000000L, None, Protocol(1, 2), meta)
    commit(table, 1, 2000000L, None, add("a.parquet"))
    commit(table, 2, far, Some(5000000L), Protocol(1, 7, None, Some(Set("appendOnly", "invariants", "inCommitTimestamp"))),
      meta.copy(configuration = ictConf ++ Map("delta.inCommitTimestampEnablementVersion" -> "2",
        "delta.inCommitTimestampEnablementTimestamp" -> "5000000")))
    commit(table, 3, far, Some(6000000L), add("b.parquet"))
    commit(table, 4, far, Some(7000000L), add("c.parquet"))
    val log = TableLog.forPath(hpath(table), newConf())
    assert(log.commitTimestamps() == Seq(0L -> 1000000L, 1L -> 2000000L, 2L -> 5000000L, 3L -> 6000000L, 4L -> 7000000L))
    assert(log.snapshotAsOf(1500000L).version == 0L)
    assert(log.snapshotAsOf(2000000L).version == 1L)
    assert(log.snapshotAsOf(4999999L).version == 1L)
    assert(log.snapshotAsOf(5500000L).version == 2L)
    assert(log.snapshotAsOf(6000000L).version == 3L)
    assert(log.snapshotAsOf(7000000L).files.map(_.path).toSet == Set("a.parquet", "b.parquet", "c.parquet"))
    assert(log.history().map(_.timestamp) == Seq(7000000L, 6000000L, 5000000L, 2000000L, 1000000L))

    val before = intercept[InvalidTableOperationException](log.snapshotAsOf(999999L)).getMessage
    assert(before.contains("1970-01-01T00:16:39.999Z") && before.contains("from version 0 at 1970-01-01T00:16:40Z") &&
      before.contains("to version 4 at 1970-01-01T01:56:40Z"), before)
    val after = intercept[InvalidTableOperationException](log.snapshotAsOf(7000001L)).getMessage
    assert(after.contains("after the latest commit") && after.contains("version 4 at 1970-01-01T01:56:40Z"), after)
  }

  test("a table created with in-commit timestamps uses them from version 0; a missing one is a corrupt log") {
    val table = tempDir()
    val far = System.currentTimeMillis()
    commit(table, 0, far, Some(3000L), Protocol(1, 7, None, Some(Set("appendOnly", "invariants", "inCommitTimestamp"))),
      metadata(configuration = ictConf))
    commit(table, 1, far, Some(4000L), add("a.parquet"))
    val log = TableLog.forPath(hpath(table), newConf())
    assert(log.snapshotAsOf(3999L).version == 0L)
    assert(log.snapshotAsOf(4000L).version == 1L)
    commit(table, 2, far, None, add("b.parquet"))
    val e = intercept[CorruptLogException](log.snapshotAsOf(4000L)).getMessage
    assert(e.contains("Commit 2") && e.contains("inCommitTimestamp"), e)
  }

  test("without in-commit timestamps: file times, and a timestamp after the latest commit is refused") {
    val table = tempDir()
    commit(table, 0, 10000L, None, Protocol(1, 2), metadata())
    commit(table, 1, 10000L, None, add("a.parquet")) // same file time: made monotonic (10001)
    val log = TableLog.forPath(hpath(table), newConf())
    assert(log.commitTimestamps() == Seq(0L -> 10000L, 1L -> 10001L))
    assert(log.snapshotAsOf(10000L).version == 0L)
    assert(log.snapshotAsOf(10001L).version == 1L)
    intercept[InvalidTableOperationException](log.snapshotAsOf(10002L))
  }
}
