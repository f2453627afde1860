package io.strata.read

import io.strata.SparkTestSession
import io.strata.config.ReadConf
import io.strata.log.{AddFile, CheckpointWriter, InvalidTableOperationException, Operation, RemoveFile, Snapshot,
  TableLog}
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.datasources.{FileIndex, HadoopFsRelation, LogicalRelation}
import org.scalatest.funsuite.AnyFunSuite

/**
 * The distributed state ([[DistributedFileIndex]], Spark jobs over checkpoint parts and commits) and the driver's
 * state select the same files (paths, deletion vectors, sizes, partition values, statistics) and read the same rows,
 * on a corpus of logs: single- and multi-part checkpoints, commits after them, removes then re-adds of one path,
 * deletion vectors updated in place, a JSON-only log, delta-spark's golden tables (column-mapped ones too), a non-UTC
 * session over date and
 * timestamp partitions. Each read runs twice: with the threshold forced to 0 (distributed) and at its default (driver).
 */
class DistributedStateSuite extends AnyFunSuite with SparkTestSession {
  private def golden(name: String) = io.strata.log.Fixtures.goldenTable(name).toString

  private def withConf[T](settings: (String, Option[String])*)(body: => T): T = {
    val before = settings.map { case (k, _) => k -> spark.conf.getOption(k) }
    settings.foreach { case (k, v) => v.fold(spark.conf.unset(k))(spark.conf.set(k, _)) }
    try body finally before.foreach { case (k, v) => v.fold(spark.conf.unset(k))(spark.conf.set(k, _)) }
  }
  private def distributed[T](body: => T): T = withConf(ReadConf.DistributedFilesKey -> Some("0"))(body)
  private def onDriver[T](body: => T): T = withConf(ReadConf.DistributedFilesKey -> None)(body)

  /** The file index a read is planned over, after the optimizer's rules (pruning included). */
  private def plannedIndex(df: DataFrame): FileIndex = df.queryExecution.optimizedPlan.collectFirst {
    case r: LogicalRelation if r.relation.isInstanceOf[HadoopFsRelation] => r.relation.asInstanceOf[HadoopFsRelation].location
  }.getOrElse(fail(s"no file relation in ${df.queryExecution.optimizedPlan}"))

  /** The files an index holds, as a scan sees them (every field the file index carries). */
  private def files(index: FileIndex): Set[IndexedFile] = index match {
    case l: LogFileIndex => l.files.toSet
    case d: DistributedFileIndex => d.selected(Nil, Nil, None).files.toSet
    case other => fail(s"unexpected index $other")
  }

  private def isDistributed(index: FileIndex): Boolean = index match {
    case _: DistributedFileIndex => true
    case l: LogFileIndex => l.pruning.exists(_.base.isInstanceOf[DistributedFileIndex])
    case _ => false
  }

  private final case class Outcome(files: Set[IndexedFile], inputFiles: Set[String], rows: Seq[String], count: Long)

  private def outcome(path: String, filter: String, wantDistributed: Boolean,
                      options: Map[String, String] = Map.empty): Outcome = {
    def read() = {
      val df = spark.read.format("strata").options(options).load(path)
      if (filter.isEmpty) df else df.where(filter)
    }
    val df = read()
    val index = plannedIndex(df)
    assert(isDistributed(index) == wantDistributed, s"$path where '$filter': planned over $index")
    Outcome(files(index), df.inputFiles.toSet, df.collect().map(_.toString).toSeq.sorted, read().count())
  }

  /**
   * The driver and distributed paths agree on `path`, unfiltered and under each filter; on a table of several files
   * at least one filter leaves files out (so the pruning itself is compared, not only the whole set). Returns the
   * unfiltered file set.
   */
  private def sameBothWays(path: String, filters: String*): Set[IndexedFile] =
    sameBothWaysWith(Map.empty)(path, filters: _*)

  /** [[sameBothWays]] for a read with `options` (time travel). */
  private def sameBothWaysWith(options: Map[String, String])(path: String, filters: String*): Set[IndexedFile] = {
    var all = Set.empty[IndexedFile]
    var pruned = false
    ("" +: filters).foreach { filter =>
      val driver = onDriver(outcome(path, filter, wantDistributed = false, options))
      val jobs = distributed(outcome(path, filter, wantDistributed = true, options))
      assert(jobs.files == driver.files, s"files of $path where '$filter'\n driver only: " +
        s"${driver.files -- jobs.files}\n distributed only: ${jobs.files -- driver.files}")
      assert(jobs.inputFiles == driver.inputFiles, s"inputFiles() of $path where '$filter'")
      assert(jobs.rows == driver.rows, s"rows of $path where '$filter'")
      assert(jobs.count == driver.count && jobs.count == driver.rows.size, s"count() of $path where '$filter'")
      if (filter.isEmpty) { all = driver.files; assert(all.nonEmpty, s"$path has no live file") }
      else if (driver.files.size < all.size) pruned = true
    }
    assert(filters.isEmpty || all.size == 1 || pruned, s"no filter of $filters pruned a file of $path")
    all
  }

  private def logOf(path: String, partSize: Option[Int] = None): TableLog = {
    val conf = sessionHadoopConf()
    partSize.foreach(n => conf.set(CheckpointWriter.PartSizeKey, n.toString))
    TableLog.forPath(new Path(path), conf)
  }

  /**
   * A partitioned path table (no automatic checkpoints) of several appends; then a file removed and, later, added
   * back under the same path (across the checkpoint, when there is one), another removed and re-added after it,
   * and an append after it. Returns the path and the re-added files' paths.
   */
  private def strataTable(checkpointPartSize: Option[Option[Int]]): (String, Seq[String]) = {
    val path = tempDir("dist").resolve("t").toString
    import spark.implicits._
    (0 until 3).foreach { k =>
      (0 until 40).map(i => (k * 100L + i, s"p$k", s"v${i % 7}")).toDF("id", "p", "v").repartition(2)
        .write.format("strata").mode("append").partitionBy("p").save(path)
    }
    val log = logOf(path, checkpointPartSize.flatten)
    val live = log.snapshot().files.sortBy(_.path)
    val (x, y) = (live.head, live.last)
    def commit(actions: Seq[io.strata.log.Action]) = log.startTransaction().commit(actions, Operation("WRITE"))
    commit(Seq(x.remove(System.currentTimeMillis())))
    checkpointPartSize.foreach(_ => log.writeCheckpoint(log.snapshot()))
    commit(Seq(x))
    commit(Seq(y.remove(System.currentTimeMillis())))
    commit(Seq(y.copy(modificationTime = y.modificationTime + 1)))
    Seq((900L, "p9", "late")).toDF("id", "p", "v").write.format("strata").mode("append").save(path)
    (path, Seq(x.path, y.path))
  }

  private val strataFilters =
    Seq("p = 'p1'", "id < 5", "p = 'p0' AND id >= 30", "v = 'v3'", "id = 900", "p = 'p0' OR id >= 30")

  test("a single-part checkpoint, a file removed before it and re-added after it, commits after it") {
    val (path, readded) = strataTable(Some(None))
    val head = logOf(path).headOption().get
    assert(head.segment.checkpointFiles.size == 1 && head.segment.commitFiles.size == 4, head.segment)
    val all = sameBothWays(path, strataFilters: _*)
    readded.foreach(p => assert(all.exists(_.path.getName == new Path(p).getName), s"re-added $p is live"))
  }

  test("a multi-part checkpoint (strata.checkpoint.partSize)") {
    val (path, _) = strataTable(Some(Some(3)))
    assert(logOf(path).headOption().get.segment.checkpointFiles.size > 2)
    sameBothWays(path, strataFilters: _*)
  }

  test("a JSON-only log (no checkpoint): removes and re-adds of the same path") {
    val (path, _) = strataTable(None)
    assert(logOf(path).headOption().get.segment.checkpointVersion.isEmpty)
    sameBothWays(path, strataFilters: _*)
  }

  test("deletion vectors: a DELETE updating one file's vector twice (add and remove of one path, new vector)") {
    val t = freshTable("dist", "(id BIGINT, p STRING, v STRING) USING strata PARTITIONED BY (p) " +
      "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true', 'delta.checkpointInterval' = '1000')")
    spark.sql(s"INSERT INTO $t SELECT id, concat('p', id % 3), concat('v', id % 5) FROM range(0, 60)")
    spark.sql(s"DELETE FROM $t WHERE id = 3")
    val path = location(t)
    logOf(path, Some(2)).writeCheckpoint(logOf(path).snapshot())
    spark.sql(s"DELETE FROM $t WHERE id = 6") // the same file of p0: its vector replaced after the checkpoint
    spark.sql(s"DELETE FROM $t WHERE id = 10")
    val all = sameBothWays(path, "p = 'p0'", "id < 20", "p = 'p1' AND id > 40")
    assert(all.exists(_.deletionVector.isDefined))
    val log = logOf(path)
    assert(log.snapshot().files.flatMap(_.deletionVector).exists(_.cardinality == 2)) // ids 3 and 6, one vector
  }

  test("delta-spark's golden tables: vectors with a checkpoint, vector key cases, multi-part checkpoint, deletes") {
    sameBothWays(golden("dv-partitioned-with-checkpoint"), "part = 3", "col1 < 10", "part = 0 AND col1 > 20",
      "part = 3 OR col1 < 2")
    sameBothWays(golden("log-replay-dv-key-cases"), "id < 10", "id > 40")
    sameBothWays(golden("multi-part-checkpoint"), "id < 5", "id > 20")
    sameBothWays(golden("basic-with-inserts-deletes-checkpoint"), "id < 10", "id > 100")
  }

  test("column mapping: partition values and statistics keyed by physical names, pruned alike both ways") {
    // Deletion vectors, a checkpoint and partition directories named by physical name (mode name).
    sameBothWays(golden("dv-with-columnmapping"), "part = 3", "col1 < 10", "part = 0 AND col1 > 20",
      "part = 3 OR col1 < 2")
    sameBothWays(golden("data-skipping-basic-stats-all-types-columnmapping-name"), "as_int < 0", "as_long > 1000")
    sameBothWays(golden("data-skipping-basic-stats-all-types-columnmapping-id"), "as_int < 0", "as_long > 1000")
  }

  test("a non-UTC session: date and timestamp partitions pruned alike both ways") {
    val path = tempDir("dist-zone").resolve("t").toString
    withConf("spark.sql.session.timeZone" -> Some("UTC")) {
      spark.sql("SELECT id, date_add(DATE'2024-03-09', CAST(id % 3 AS INT)) AS d, " +
        "timestamp_seconds(1710034200 + (id % 4) * 3600) AS ts FROM range(0, 48)")
        .repartition(2).write.format("strata").partitionBy("d", "ts").save(path)
    }
    withConf("spark.sql.session.timeZone" -> Some("America/Los_Angeles")) {
      sameBothWays(path, "d = DATE'2024-03-10'", "ts = TIMESTAMP'2024-03-09 18:30:00'",
        "ts >= TIMESTAMP'2024-03-09 20:30:00' AND d <= DATE'2024-03-10'", "id < 4")
    }
  }

  test("count(*) of the whole table comes from the job's totals, other aggregates read the data") {
    val (path, _) = strataTable(Some(None))
    val expected = onDriver(spark.read.format("strata").load(path).count())
    distributed {
      val df = spark.read.format("strata").load(path).groupBy().count()
      assert(df.queryExecution.optimizedPlan.collectFirst { case r: LogAggregateRelation => r }.isDefined,
        df.queryExecution.optimizedPlan)
      assert(df.head().getLong(0) == expected)
      val sum = spark.read.format("strata").load(path).selectExpr("sum(id)", "count(*)").head()
      assert(sum.getLong(1) == expected)
      // the totals (files, bytes: the relation's size) are the driver snapshot's
      val totals = plannedIndex(spark.read.format("strata").load(path)).asInstanceOf[DistributedFileIndex].stateTotals
      val snap = logOf(path).snapshot()
      assert(totals.files == snap.numFiles && totals.bytes == snap.sizeInBytes && totals.rows.contains(expected))
    }
  }

  test("the threshold: the log's file count against the files setting; bad values are refused by name") {
    val (path, _) = strataTable(Some(None))
    val live = logOf(path).snapshot().numFiles
    def planned() = plannedIndex(spark.read.format("strata").load(path))
    withConf(ReadConf.DistributedFilesKey -> Some(live.toString))(assert(planned().isInstanceOf[DistributedFileIndex]))
    withConf(ReadConf.DistributedFilesKey -> Some((live + 1).toString))(assert(planned().isInstanceOf[LogFileIndex]))
    val e = intercept[io.strata.log.InvalidTableOperationException] {
      withConf(ReadConf.DistributedFilesKey -> Some("lots"))(planned())
    }
    assert(e.getMessage.contains(ReadConf.DistributedFilesKey) && e.getMessage.contains("lots"))
  }

  test("time travel: versionAsOf and timestampAsOf (in a non-UTC session) take the distributed path alike") {
    val (path, _) = strataTable(Some(None))
    val log = logOf(path)
    val head = log.headOption().get
    // before the checkpoint (commits only), at it, and after it (a remove and a re-add since)
    Seq(1L, 3L, head.version - 1).foreach { v =>
      sameBothWaysWith(Map("versionAsOf" -> v.toString))(path, "p = 'p1'", "id < 5", "p = 'p0' OR id >= 30")
    }
    val stamps = log.commitTimestamps().toMap
    withConf("spark.sql.session.timeZone" -> Some("Asia/Kolkata")) {
      // the commit's instant written as a local time of the session: 2 is the version it names
      val local = java.time.Instant.ofEpochMilli(stamps(2L)).atZone(java.time.ZoneId.of("Asia/Kolkata"))
        .toLocalDateTime.toString.replace('T', ' ')
      val files = sameBothWaysWith(Map("timestampAsOf" -> local))(path, "id < 5", "p = 'p2'")
      assert(files == sameBothWaysWith(Map("versionAsOf" -> "2"))(path))
    }
    // a time-travel read is no read of the latest version (writes do not validate against it)
    distributed(assert(plannedIndex(spark.read.format("strata").option("versionAsOf", "1").load(path))
      .asInstanceOf[DistributedFileIndex].timeTravel))
  }

  test("a malformed add row in a checkpoint: the distributed path raises the driver path's CorruptLogException") {
    val (path, _) = strataTable(Some(None))
    val log = logOf(path)
    val snap = log.snapshot()
    val logDir = new Path(log.tablePath, "_delta_log")
    val fs = logDir.getFileSystem(sessionHadoopConf())
    // A checkpoint of the latest version with an add whose path is no URI reference; every older checkpoint and
    // commit gone: nothing to fall back on.
    val cp = new Path(logDir, f"${snap.version}%020d.checkpoint.parquet")
    io.strata.log.Checkpoints.write(cp, Iterator(snap.protocol, snap.metadata) ++
      Iterator(snap.files.head.copy(path = "p=50%/bad path.parquet")) ++ snap.files.iterator.drop(1), sessionHadoopConf())
    fs.listStatus(logDir).map(_.getPath).filter(p => p.getName.matches("\\d{20}\\..*") &&
      !p.getName.startsWith(f"${snap.version}%020d.")).foreach(fs.delete(_, false))
    // As a reader that does not hold the version (this JVM still does, and would keep it: its commit is unchanged).
    val commit = new Path(logDir, f"${snap.version}%020d.json")
    fs.setTimes(commit, fs.getFileStatus(commit).getModificationTime + 2000L, -1L)
    def failure(): io.strata.log.CorruptLogException =
      intercept[io.strata.log.CorruptLogException](spark.read.format("strata").load(path).where("id < 5").count())
    val driver = onDriver(failure())
    val jobs = distributed(failure())
    Seq(driver, jobs).foreach { e =>
      assert(e.getMessage.contains(cp.getName) && e.getMessage.contains("add.path"), e.getMessage)
    }
    assert(jobs.getMessage == driver.getMessage)
  }

  test("time travel to a vacuumed version or below the cleaned-up log: the same typed error both ways") {
    val (path, _) = strataTable(Some(None)) // checkpoint at version 3
    val log = logOf(path)
    val before = log.headOption().get.version
    import spark.implicits._
    Seq((901L, "p0", "new")).toDF("id", "p", "v").write.format("strata").mode("overwrite")
      .option("replaceWhere", "p = 'p0'").save(path)
    // One of the files the overwrite removed deleted, as VACUUM deletes them
    val removed = log.snapshot().tombstones.filter(_.path.contains("p=p0")).sortBy(_.path)
    assert(removed.nonEmpty)
    val fs = log.store.fs
    assert(fs.delete(log.snapshot().absolutePath(removed.head.path), false))
    def failure(v: Long): InvalidTableOperationException = intercept[InvalidTableOperationException](
      spark.read.format("strata").option("versionAsOf", v.toString).load(path).count())
    val (driver, jobs) = (onDriver(failure(before)), distributed(failure(before)))
    assert(driver.getMessage.contains("can no longer be read") && driver.getMessage.contains(removed.head.path),
      driver.getMessage)
    assert(jobs.getMessage == driver.getMessage)
    // commits below the checkpoint gone (a log cleanup): version 1 is no longer available, either way
    fs.delete(io.strata.log.FileNames.deltaFile(log.logPath, 0L), false)
    val (driverLog, jobsLog) = (onDriver(failure(1L)), distributed(failure(1L)))
    assert(driverLog.getMessage.contains("no longer available") && jobsLog.getMessage == driverLog.getMessage,
      driverLog.getMessage)
    // a version whose files are all there still reads alike
    sameBothWaysWith(Map("versionAsOf" -> "3"))(path, "p = 'p1'")
  }

  test("catalog reads above the threshold (StrataCatalog, session catalog, VERSION AS OF): no driver file state") {
    val inStrata = freshTable("distcat", "(id BIGINT, p STRING, v STRING) USING strata PARTITIONED BY (p)")
    val inSession = s"spark_catalog.default.distcat_${System.nanoTime()}"
    spark.sql(s"CREATE TABLE $inSession (id BIGINT, p STRING, v STRING) USING strata PARTITIONED BY (p)")
    Seq(inStrata, inSession).foreach { t =>
      spark.sql(s"INSERT INTO $t VALUES (1, 'a', 'x'), (2, 'b', 'y'), (3, 'a', 'z')")
      spark.sql(s"INSERT INTO $t VALUES (4, 'c', 'x')")
      spark.sql(s"DELETE FROM $t WHERE id = 2")
      val queries = Seq(s"SELECT * FROM $t", s"SELECT * FROM $t WHERE p = 'a'", s"SELECT id FROM $t WHERE v = 'x'",
        s"SELECT p, count(*) FROM $t GROUP BY p", s"SELECT count(*) FROM $t", s"SELECT * FROM $t VERSION AS OF 2")
      def answers() = queries.map(q => spark.sql(q).collect().map(_.toString).sorted.toSeq)
      // The last commit a blind append over the head: this JVM holds no snapshot of the latest version.
      distributed(spark.sql(s"INSERT INTO $t VALUES (5, 'b', 'x')"))
      val built = Snapshot.fileStatesBuilt
      val (jobs, explain) = distributed((answers(),
        spark.sql(s"SELECT * FROM $t WHERE p = 'a'").queryExecution.executedPlan.toString))
      assert(Snapshot.fileStatesBuilt == built, s"a read of $t built a file state on the driver")
      assert(explain.contains("LogFileIndex(1 paths)"), explain)
      assert(jobs == onDriver(answers()))
      assert(jobs.head.size == 4 && jobs(1) == Seq("[1,a,x]", "[3,a,z]") && jobs.last.size == 4, jobs)
    }
  }
}
