package io.strata.procedures


import io.strata.dml.DmlTestSupport
import io.strata.log._
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.Row
import org.scalatest.funsuite.AnyFunSuite

/**
 * `checkpoint` and `cleanup_log`, and the log cleanup after automatic checkpoints. Commit files are aged by setting
 * their modification times into the past (FileSystem.setTimes): a commit's age is its commit timestamp.
 */
class LogMaintenanceSuite extends AnyFunSuite with DmlTestSupport {
  private val Day = 24L * 3600 * 1000
  private def at(t: String, v: Long): Seq[Row] = rows(spark.sql(s"SELECT * FROM $t VERSION AS OF $v"))
  private def logFile(t: String, name: String): Path = new Path(log(t).logPath, name)
  private def commitName(v: Long) = f"$v%020d.json"
  private def checkpointName(v: Long) = f"$v%020d.checkpoint.parquet"
  private def exists(t: String, name: String): Boolean = log(t).store.fs.exists(logFile(t, name))
  private def commits(t: String): Seq[Long] = log(t).store.list(log(t).logPath).flatMap(st =>
    FileNames.classify(st.getPath.getName)).collect { case FileNames.DeltaFile(v) => v }.sorted

  /** Sets the modification time of commits `versions` to `millisAgo` before now (one second apart, in order). */
  private def age(t: String, versions: Range, millisAgo: Long): Unit = {
    val base = System.currentTimeMillis() - millisAgo
    versions.foreach(v => log(t).store.fs.setTimes(logFile(t, commitName(v)), base + (v - versions.start) * 1000L, -1))
  }

  private def cleanup(t: String, args: String = ""): Row =
    spark.sql(s"CALL strata.system.cleanup_log(table => '$t'$args)").head()

  test("checkpoint writes one of the latest version now; _last_checkpoint names it; calling again is harmless") {
    val t = freshTable("logm", "(id INT) USING strata")
    spark.sql(s"INSERT INTO $t VALUES (1)")
    spark.sql(s"INSERT INTO $t VALUES (2)")
    val r = spark.sql(s"CALL strata.system.checkpoint(table => '$t')").head()
    assert(r.getLong(0) == 2L && r.getString(1).endsWith("_delta_log/" + checkpointName(2)), r)
    assert(exists(t, checkpointName(2)) && log(t).lastCheckpointVersion().contains(2L))
    assert(log(t).snapshotAt(2).segment.checkpointVersion.contains(2L))
    assert(spark.sql(s"CALL strata.system.checkpoint('$t')").head() == r)
    assert(version(t) == 2L && rowsOf(t) == Seq(Row(1), Row(2)))
  }

  test("cleanup_log deletes what only expired versions need; retained versions read the same, deleted ones fail clearly") {
    val t = freshTable("logm", "(id INT) USING strata TBLPROPERTIES ('delta.checkpointInterval' = '3')")
    (1 to 8).foreach(i => spark.sql(s"INSERT INTO $t VALUES ($i)")) // v1..v8; checkpoints at 3 and 6
    assert(cleanup(t) == Row(0L, 0L, 0L), "nothing is older than 30 days yet")
    age(t, 0 to 6, 40 * Day)
    // leftovers of other writers: a version checksum and an incomplete multi-part checkpoint, both of old versions
    val fs = log(t).store.fs
    Seq(f"${1}%020d.crc", f"${2}%020d.checkpoint.0000000001.0000000002.parquet")
      .foreach(n => fs.create(logFile(t, n)).close())
    val retained = (6L to 8L).map(v => v -> at(t, v))
    // checkpoint 6 was committed before the cutoff: everything below it goes, it and _last_checkpoint stay
    assert(cleanup(t) == Row(6L, 2L, 6L))
    assert(commits(t) == (6L to 8L) && exists(t, checkpointName(6)) && !exists(t, checkpointName(3)))
    assert(!exists(t, f"${1}%020d.crc") && exists(t, "_last_checkpoint"))
    assert((6L to 8L).map(v => v -> at(t, v)) == retained && rowsOf(t) == (1 to 8).map(Row(_)))
    val gone = intercept[Exception](at(t, 5))
    val msg = causeOf[InvalidTableOperationException](gone).getMessage
    assert(msg.contains("Version 5 of") && msg.contains("no longer available") &&
      msg.contains("oldest version that can be read or restored is 6"), msg)
    val restoreGone = intercept[Exception](spark.sql(s"CALL strata.system.restore('$t', 5)").collect())
    assert(causes(restoreGone).exists(_.getMessage.contains("no longer available")), restoreGone)
    assert(spark.sql(s"CALL strata.system.restore('$t', 6)").head().getLong(0) == 9L)
    assert(rowsOf(t) == (1 to 6).map(Row(_)))
    assert(spark.sql(s"CALL strata.system.history('$t')").collect().map(_.getLong(0)).toSeq == (9L to 6L by -1L))
    assert(cleanup(t) == Row(0L, 0L, 6L), "a second run finds nothing more")
  }

  test("retention_hours shorter than delta.logRetentionDuration is refused unless the session allows it") {
    val t = freshTable("logm", "(id INT) USING strata")
    spark.sql(s"INSERT INTO $t VALUES (1)")
    spark.sql(s"INSERT INTO $t VALUES (2)")
    spark.sql(s"CALL strata.system.checkpoint('$t')")
    spark.sql(s"INSERT INTO $t VALUES (3)")
    age(t, 0 to 2, 3 * 3600 * 1000L)
    val short = intercept[Exception](cleanup(t, ", retention_hours => 1"))
    val msg = causeOf[InvalidTableOperationException](short).getMessage
    assert(msg.contains("argument retention_hours is 1.0") && msg.contains("720.0 hours") &&
      msg.contains(s"spark.strata.logCleanup.retentionCheck.enabled=false"), msg)
    val negative = intercept[Exception](cleanup(t, ", retention_hours => -2"))
    assert(causes(negative).exists(_.getMessage.contains("argument retention_hours is -2.0")), negative)
    assert(commits(t) == (0L to 3L))
    spark.conf.set("spark.strata.logCleanup.retentionCheck.enabled", "false")
    try assert(cleanup(t, ", retention_hours => 1") == Row(2L, 0L, 2L))
    finally spark.conf.unset("spark.strata.logCleanup.retentionCheck.enabled")
    assert(commits(t) == (2L to 3L) && rowsOf(t) == Seq(Row(1), Row(2), Row(3)))
    // a table that keeps less history allows as much without the session setting
    spark.sql(s"ALTER TABLE $t SET TBLPROPERTIES ('delta.logRetentionDuration' = 'interval 1 hours')")
    assert(cleanup(t, ", retention_hours => 1.5") == Row(0L, 0L, 2L))
  }

  test("after an automatic checkpoint, expired log files go too, unless delta.enableExpiredLogCleanup = false") {
    val t = freshTable("logm", "(id INT) USING strata TBLPROPERTIES ('delta.checkpointInterval' = '2', " +
      "'delta.logRetentionDuration' = 'interval 1 days', 'delta.enableExpiredLogCleanup' = 'false')")
    (1 to 4).foreach(i => spark.sql(s"INSERT INTO $t VALUES ($i)")) // checkpoints at 2 and 4
    age(t, 0 to 4, 2 * Day)
    (5 to 6).foreach(i => spark.sql(s"INSERT INTO $t VALUES ($i)")) // checkpoint at 6: no cleanup
    assert(commits(t) == (0L to 6L) && exists(t, checkpointName(2)))
    spark.sql(s"ALTER TABLE $t SET TBLPROPERTIES ('delta.enableExpiredLogCleanup' = 'true')") // v7
    spark.sql(s"INSERT INTO $t VALUES (8)") // v8: checkpoint, then cleanup below checkpoint 4 (6 and 8 are recent)
    assert(commits(t) == (4L to 8L) && !exists(t, checkpointName(2)) && exists(t, checkpointName(4)))
    assert(at(t, 4) == (1 to 4).map(Row(_)) && rowsOf(t) == Seq(1, 2, 3, 4, 5, 6, 8).map(Row(_)))
  }
}
