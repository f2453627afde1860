package io.strata.log

import org.scalatest.funsuite.AnyFunSuite

/**
 * Strata writing in-commit timestamps (PROTOCOL.md, "In-Commit Timestamps"): commitInfo first with a monotonic
 * `inCommitTimestamp`, the feature added with the property, the enablement properties when an existing table turns
 * them on (worked out for the version the commit lands at, after a lost race too), and time travel / history by them.
 */
class InCommitTimestampsSuite extends AnyFunSuite with LogTestSupport {
  private val Ict = Map(InCommitTimestamps.EnableKey -> "true")

  private def firstInfo(table: java.nio.file.Path, v: Long): CommitInfo = actionsOf(deltaFile(table, v)).head match {
    case c: CommitInfo => c
    case other => fail(s"commit $v starts with $other, not commitInfo")
  }

  test("a table created with in-commit timestamps: the feature, commitInfo first, strictly increasing timestamps") {
    val table = tempDir("ict-new")
    val log = createTable(table, metadata(configuration = Ict))
    val p = log.snapshot().protocol
    assert(p.minWriterVersion == 7 && p.writerFeatures.exists(_(InCommitTimestamps.Feature)) && p.minReaderVersion == 1)
    // A commit whose file time is far in the future: the next one must still be later (previous + 1).
    val future = System.currentTimeMillis() + 3600000L
    writeCommit(table, 1, Seq(CommitInfo(ActionCodec.mapper.createObjectNode().put("operation", "WRITE")
      .put("inCommitTimestamp", future)), add("a.parquet")))
    (2 to 4).foreach(i => append(log, add(s"f$i.parquet")))
    val stamps = (0 to 4).map(v => firstInfo(table, v).inCommitTimestamp.get)
    assert(stamps.sliding(2).forall(w => w(1) > w(0)), stamps)
    assert(stamps(2) == future + 1 && stamps(3) == future + 2, stamps)
    assert(firstInfo(table, 3).json.get("timestamp").asLong == stamps(3), "commitInfo.timestamp is the ICT")
    assert(!log.snapshot().metadata.configuration.contains(InCommitTimestamps.EnablementVersionKey),
      "on from version 0: no enablement properties (as delta-spark)")
    assert(log.commitTimestamps() == (0 to 4).map(v => v.toLong -> stamps(v)))
    assert(log.snapshotAsOf(future + 1).version == 2L && log.snapshotAsOf(future).version == 1L)
    assert(log.history().map(_.timestamp) == stamps.reverse)
  }

  test("turned on for an existing table: the enablement version and timestamp are those of the enabling commit") {
    val table = tempDir("ict-enable")
    val log = createTable(table)
    append(log, add("a.parquet"))
    // The enabling commit reads version 1 and loses the race to two commits that change no rows (another
    // application's txn): it lands at version 4, and its enablement properties must say 4, not 2.
    val enabling = log.startTransaction()
    enabling.updateMetadata(log.snapshot().metadata.copy(configuration = Ict))
    log.startTransaction().commit(Seq(SetTransaction("other", 1L, None)), Operation("STREAMING UPDATE"))
    log.startTransaction().commit(Seq(SetTransaction("other", 2L, None)), Operation("STREAMING UPDATE"))
    val r = enabling.commit(Nil, Operation("SET TBLPROPERTIES"))
    assert(r.version == 4L && r.attempts == 2)
    val m = log.snapshot().metadata.configuration
    val ict = firstInfo(table, r.version).inCommitTimestamp.get
    assert(m(InCommitTimestamps.EnablementVersionKey) == r.version.toString)
    assert(m(InCommitTimestamps.EnablementTimestampKey) == ict.toString)
    val before = log.store.fs.getFileStatus(FileNames.deltaFile(log.logPath, r.version - 1)).getModificationTime
    assert(ict > before, "later than the previous commit's file time")
    assert(log.snapshot().protocol.writerFeatures.exists(_(InCommitTimestamps.Feature)))
    append(log, add("d.parquet"))
    assert(firstInfo(table, r.version + 1).inCommitTimestamp.exists(_ > ict))
    // Turning them off drops the enablement properties; commits carry no in-commit timestamp any more.
    val off = log.startTransaction()
    off.updateMetadata(log.snapshot().metadata.copy(configuration = Map(InCommitTimestamps.EnableKey -> "false")))
    val v = off.commit(Nil, Operation("SET TBLPROPERTIES")).version
    assert(log.snapshot().metadata.configuration == Map(InCommitTimestamps.EnableKey -> "false"))
    assert(firstInfo(table, v).inCommitTimestamp.isEmpty)
  }
}
