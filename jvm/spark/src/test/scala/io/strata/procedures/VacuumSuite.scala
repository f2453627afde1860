package io.strata.procedures

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path => JPath}

import io.strata.dml.DmlTestSupport
import io.strata.log._
import io.strata.maintenance.VacuumConf
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.Row
import org.scalatest.funsuite.AnyFunSuite

/**
 * CALL strata.system.vacuum: what it keeps (files of versions within the retention, hidden names, young files,
 * anything outside the root however the log names it), what it deletes (expired tombstones' files and vectors, old
 * orphans, old empty directories), dry runs, the retention check, protocol checks and a write committing around it.
 */
class VacuumSuite extends AnyFunSuite with DmlTestSupport {
  private val Hour = 3600L * 1000

  /** (path relative to the root, size, kind) of each row, sorted. */
  private def vacuum(table: String, args: String = "")(implicit root: String): Seq[(String, Long, String)] =
    spark.sql(s"CALL strata.system.vacuum(table => '$table'$args)").collect().toSeq
      .map(r => (relative(root, r.getString(0)), r.getLong(1), r.getString(2))).sortBy(_._1)

  private def relative(root: String, p: String): String = {
    val r = new Path(root).toUri.getPath.stripSuffix("/") + "/"
    val a = new Path(p).toUri.getPath
    assert(a.startsWith(r), s"$p is not below $root")
    a.substring(r.length)
  }

  private def withConf[T](kv: (String, String)*)(body: => T): T = {
    kv.foreach { case (k, v) => spark.conf.set(k, v) }
    try body finally kv.foreach { case (k, _) => spark.conf.unset(k) }
  }
  private def unchecked[T](body: => T): T = withConf(VacuumConf.RetentionCheck -> "false")(body)

  private def fsOf(root: String) = new Path(root).getFileSystem(new Configuration())
  /** Sets a file's (or directory's) modification time `hours` back. */
  private def age(root: String, rel: String, hours: Double): Unit =
    fsOf(root).setTimes(new Path(s"$root/$rel"), System.currentTimeMillis() - (hours * Hour).toLong, -1)
  private def exists(root: String, rel: String): Boolean = fsOf(root).exists(new Path(s"$root/$rel"))
  private def write(root: String, rel: String, text: String = "x"): Unit = {
    val out = fsOf(root).create(new Path(s"$root/$rel"), false)
    try out.write(text.getBytes(UTF_8)) finally out.close()
  }
  private def dataFiles(table: String): Seq[String] = log(table).snapshot().files.map(_.path).sorted
  /** Every file below the root except `_delta_log`, relative. */
  private def allFiles(root: String): Set[String] =
    filesUnder(dirOf(root)).filterNot(_.startsWith("_delta_log"))
  private def dirOf(root: String): JPath = java.nio.file.Paths.get(new Path(root).toUri)
  private def ageAll(root: String, hours: Double): Unit = allFiles(root).foreach(age(root, _, hours))

  /** Commits a remove of `file` stamped `hoursAgo` hours back (another writer's DELETE of that time). */
  private def removeAt(table: String, file: AddFile, hoursAgo: Double): Unit =
    log(table).startTransaction().commit(Seq(file.remove(System.currentTimeMillis() - (hoursAgo * Hour).toLong)),
      Operation("DELETE"))

  test("keeps what versions within the retention read, deletes expired tombstones' files and old orphans") {
    val t = freshTable("vac", "(id INT, p STRING) USING strata PARTITIONED BY (p) " +
      "TBLPROPERTIES ('delta.deletedFileRetentionDuration' = 'interval 2 hours')")
    implicit val root: String = location(t)
    Seq("a", "b", "a").zipWithIndex.foreach { case (p, i) => spark.sql(s"INSERT INTO $t VALUES ($i, '$p')") }
    val files = log(t).snapshot().files.sortBy(_.modificationTime)
    val (expired, recent, live) = (files(0), files(1), files(2))
    removeAt(t, expired, 3) // older than the retention: its file goes
    removeAt(t, recent, 1) // within it: a reader of the version before still needs the file
    write(root, "p=a/part-00000-orphan-old.c000.snappy.parquet") // a failed job's leftover
    write(root, "p=b/part-00000-orphan-young.c000.snappy.parquet") // a write in progress
    write(root, "notes.txt")
    write(root, "_change_data/cdc-00000.c000.snappy.parquet")
    write(root, "_tmp/part-00000.parquet") // hidden: never listed
    write(root, ".hidden.parquet")
    write(root, "p=a/_committed_x") // hidden inside a partition
    fsOf(root).mkdirs(new Path(s"$root/p=z/q=1"))
    ageAll(root, 4)
    age(root, "p=z/q=1", 4)
    age(root, "p=b/part-00000-orphan-young.c000.snappy.parquet", 0.25)
    val rowsBefore = rowsOf(t)
    val versionBefore = version(t)

    val expected = Seq(
      (expired.path, expired.size, "data"),
      ("_change_data/cdc-00000.c000.snappy.parquet", 1L, "data"),
      ("notes.txt", 1L, "other"),
      ("p=a/part-00000-orphan-old.c000.snappy.parquet", 1L, "data"),
      ("p=z/q=1", 0L, "directory")).sortBy(_._1)
    val listedBefore = allFiles(root)
    val dry = vacuum(t, ", dry_run => true")
    assert(dry == expected)
    assert(allFiles(root) == listedBefore && exists(root, "p=z/q=1"), "a dry run deletes nothing")
    assert(version(t) == versionBefore, "a dry run commits nothing")

    val jobs = jobsDuring { assert(vacuum(t) == dry, "a real run deletes exactly what the dry run listed") }
    assert(jobs >= 2, s"listing and deleting run as Spark jobs ($jobs jobs)")
    assert(allFiles(root) == listedBefore -- expected.map(_._1), "everything else is still there")
    assert(!exists(root, "p=z/q=1") && exists(root, "p=z"), "the old empty directory went (its parent next time)")
    assert(Seq(recent, live).forall(f => exists(root, f.path)))
    assert(rowsOf(t) == rowsBefore)
    val history = spark.sql(s"CALL strata.system.history('$t', 2)").collect()
    assert(history.map(_.getAs[String]("operation")).toSeq == Seq("VACUUM END", "VACUUM START"))
    val start = history(1).getMap[String, String](history(1).fieldIndex("operationMetrics"))
    assert(start("numFilesToDelete") == "5" && start("sizeOfDataToDelete") == expected.map(_._2).sum.toString, start)
    val end = history(0)
    assert(end.getMap[String, String](end.fieldIndex("operationParameters"))("status") == "COMPLETED")
    assert(end.getMap[String, String](end.fieldIndex("operationMetrics"))("numDeletedFiles") == "5")
    assert(vacuum(t).isEmpty, "nothing left to delete")

    withConf(VacuumConf.Logging -> "false") { assert(vacuum(t).isEmpty) }
    assert(spark.sql(s"CALL strata.system.history('$t', 1)").head().getAs[Long]("version") == version(t))
    assert(log(t).history(1).head.commitInfo.get.operation.contains("VACUUM END"), "no commits with logging off")
  }

  test("deletion vectors: the current ones stay, replaced ones go after the retention, orphan vectors by age") {
    val t = freshTable("vac", "(id BIGINT) USING strata TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    implicit val root: String = location(t)
    spark.sql(s"INSERT INTO $t SELECT id FROM range(0, 10, 1, 1)")
    spark.sql(s"DELETE FROM $t WHERE id = 1")
    val first = log(t).snapshot().files.head.deletionVector.get.file(new Path(root)).get.getName
    spark.sql(s"DELETE FROM $t WHERE id = 2")
    val second = log(t).snapshot().files.head.deletionVector.get.file(new Path(root)).get.getName
    assert(first != second && exists(root, first) && exists(root, second))
    val orphanOld = "deletion_vector_0b4b1c6e-8d4e-4a8e-9a59-3f6d1e0c2a11.bin"
    val orphanYoung = "deletion_vector_7c9a0f3e-2b1d-4f6a-8e5c-1a2b3c4d5e6f.bin"
    write(root, orphanOld); write(root, orphanYoung)
    ageAll(root, 2)
    age(root, orphanYoung, 0)

    assert(vacuum(t).isEmpty, "the default retention (7 days) keeps the replaced vector")
    val removed = unchecked(vacuum(t, ", retention_hours => 0"))
    assert(removed.map(r => (r._1, r._3)) == Seq((first, "deletion_vector"), (orphanOld, "deletion_vector")).sorted)
    assert(exists(root, second) && exists(root, orphanYoung) && dataFiles(t).forall(exists(root, _)))
    assert(rowsOf(t) == (0 until 10).filterNot(Set(1, 2)).map(i => Row(i.toLong)))
    // time travel to the version that read the deleted vector fails naming the vector file
    val e = intercept[Exception](spark.sql(s"SELECT * FROM $t VERSION AS OF 2").collect())
    assert(causeOf[InvalidTableOperationException](e).getMessage.contains(first), e)
  }

  test("retention below the table's delta.deletedFileRetentionDuration is refused unless the session allows it") {
    val t = freshTable("vac", "(id INT) USING strata")
    implicit val root: String = location(t)
    spark.sql(s"INSERT INTO $t VALUES (1)")
    spark.sql(s"INSERT OVERWRITE $t VALUES (2)")
    val v = version(t)
    val short = intercept[Exception](vacuum(t, ", retention_hours => 1"))
    val msg = causeOf[InvalidTableOperationException](short).getMessage
    assert(msg.contains("retention of 1 hours") && msg.contains("168 hours") &&
      msg.contains("spark.strata.vacuum.retentionCheck.enabled=false"), msg)
    val negative = intercept[Exception](unchecked(vacuum(t, ", retention_hours => -1")))
    assert(causes(negative).exists(_.getMessage.contains("argument retention_hours is -1.0")), negative)
    val badConf = intercept[Exception](withConf(VacuumConf.RetentionCheck -> "maybe")(vacuum(t)))
    assert(causes(badConf).exists(_.getMessage.contains("must be true or false")), badConf)
    assert(version(t) == v && allFiles(root).size == 2, "nothing committed or deleted")
    // delta-spark's conf does the same when Strata's is not set; Strata's decides when both are.
    val deltaKey = "spark.databricks.delta.retentionDurationCheck.enabled"
    assert(withConf(deltaKey -> "false")(vacuum(t, ", retention_hours => 200, dry_run => true")).isEmpty)
    val both = intercept[Exception](withConf(deltaKey -> "false", VacuumConf.RetentionCheck -> "true")(
      vacuum(t, ", retention_hours => 1")))
    assert(causeOf[InvalidTableOperationException](both).getMessage.contains("retention of 1 hours"), both)
    val badDelta = intercept[Exception](withConf(deltaKey -> "maybe")(vacuum(t)))
    assert(causes(badDelta).exists(_.getMessage.contains(s"$deltaKey")), badDelta)
    assert(withConf(deltaKey -> "false")(vacuum(t, ", retention_hours => 1, dry_run => true")).isEmpty,
      "allowed by delta-spark's conf: nothing removed within the hour")
    assert(vacuum(t, ", retention_hours => 200").isEmpty, "a longer retention is always allowed")
    assert(unchecked(vacuum(t, ", retention_hours => 0.5")).isEmpty, "removed just now: within half an hour")
    assert(unchecked(vacuum(t, ", retention_hours => 0")).map(_._3) == Seq("data"), "retention 0: it goes")
    assert(rowsOf(t) == Seq(Row(2)))
    val travel = intercept[Exception](spark.sql(s"SELECT * FROM $t VERSION AS OF 1").collect())
    val gone = causeOf[InvalidTableOperationException](travel)
    assert(gone.getCondition == "STRATA_VERSION_NOT_AVAILABLE", gone)
    val why = gone.messageText
    assert(why.startsWith(s"Version 1 of ") && why.contains("can no longer be read") && why.contains("VACUUM"), why)
  }

  test("a log naming files outside the root (../x, absolute, file:) never makes vacuum touch them") {
    val dir = tempDir("vac-hostile")
    val root = dir.resolve("t").toUri.toString.stripSuffix("/")
    implicit val r: String = root
    spark.range(3).write.format("strata").save(root)
    val l = TableLog.forPath(new Path(root), new Configuration())
    val elsewhere = Files.createDirectories(dir.resolve("elsewhere"))
    val outside = Seq(dir.resolve("outside.parquet"), elsewhere.resolve("abs.parquet"),
      elsewhere.resolve("scheme.parquet"), elsewhere.resolve("dv.bin"), elsewhere.resolve("kept-abs.parquet"))
    outside.foreach(p => Files.write(p, "outside".getBytes(UTF_8)))
    // inside the root, named oddly by live entries: they must be kept
    write(root, "kept.parquet"); write(root, "p=x/file one.parquet"); write(root, "orphan.parquet")
    def file(path: String, dv: Option[DeletionVectorDescriptor] = None) =
      AddFile(path, Map.empty, 7L, 0L, dataChange = true, deletionVector = dv)
    val hostile = Seq(file("../outside.parquet"), file(outside(1).toString), file(outside(2).toUri.toString),
      file("x.parquet", Some(DeletionVectorDescriptor("p", outside(3).toUri.toString, Some(1), 10, 1L))))
    val liveOdd = Seq(file("sub/../kept.parquet"), file("p%3Dx/file%20one.parquet"), file(outside(4).toString))
    l.startTransaction().commit(hostile ++ liveOdd, Operation("WRITE"))
    val old = System.currentTimeMillis() - 10 * Hour
    l.startTransaction().commit(hostile.map(_.remove(old)), Operation("DELETE"))
    outside.foreach(p => Files.setLastModifiedTime(p, java.nio.file.attribute.FileTime.fromMillis(old)))
    ageAll(root, 10)

    val removed = withConf(VacuumConf.RetentionCheck -> "false", VacuumConf.OrphanMinAgeHours -> "0") {
      val dry = vacuum(root, ", retention_hours => 0, dry_run => true")
      assert(vacuum(root, ", retention_hours => 0") == dry)
      dry
    }
    assert(outside.forall(Files.exists(_)), "nothing outside the root was deleted")
    assert(exists(root, "kept.parquet") && exists(root, "p=x/file one.parquet"))
    assert(removed == Seq(("orphan.parquet", 1L, "data")), "only the orphan below the root went")
  }

  test("a write between writing its files and committing keeps them and commits; old leftovers go") {
    val t = freshTable("vac", "(id INT, p STRING) USING strata PARTITIONED BY (p)")
    implicit val root: String = location(t)
    spark.sql(s"INSERT INTO $t VALUES (1, 'a'), (2, 'b'), (3, 'a'), (7, 'b')")
    removeAt(t, log(t).snapshot().files.find(_.partitionValues("p").contains("a")).get, 2)
    write(root, "p=a/part-00000-crashed.c000.snappy.parquet")
    ageAll(root, 2)
    var removed = Seq.empty[(String, Long, String)]
    // retention 1 hour: the paused write's files are younger than that
    raced { removed = unchecked(vacuum(t, ", retention_hours => 1")) } {
      spark.sql(s"INSERT INTO $t VALUES (4, 'a'), (5, 'c')")
    }
    assert(removed.map(_._3) == Seq("data", "data"), s"the removed file and the old leftover: $removed")
    assert(removed.exists(_._1.contains("crashed")))
    assert(rowsOf(t) == Seq(Row(2, "b"), Row(4, "a"), Row(5, "c"), Row(7, "b")))
    assert(dataFiles(t).forall(exists(root, _)))

    // retention 0: the minimum age of files no log entry names (1 hour) keeps a paused merge-on-read DELETE's new
    // vector and a paused INSERT's files
    spark.sql(s"ALTER TABLE $t SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    raced { removed = unchecked(vacuum(t, ", retention_hours => 0")) } { spark.sql(s"DELETE FROM $t WHERE id = 7") }
    assert(removed.isEmpty, removed)
    raced { removed = unchecked(vacuum(t, ", retention_hours => 0")) } { spark.sql(s"INSERT INTO $t VALUES (6, 'd')") }
    assert(removed.isEmpty, removed)
    assert(rowsOf(t) == Seq(Row(2, "b"), Row(4, "a"), Row(5, "c"), Row(6, "d")))
    val snap = log(t).snapshot()
    assert(snap.files.exists(_.deletionVector.isDefined))
    assert(snap.files.forall(f => exists(root, f.path) && f.deletionVector.forall(dv =>
      fsOf(root).exists(dv.file(snap.tablePath).get))))
  }

  test("a retention longer than the table's keeps tombstones a checkpoint already dropped") {
    val t = freshTable("vac", "(id INT) USING strata " +
      "TBLPROPERTIES ('delta.deletedFileRetentionDuration' = 'interval 1 hours')")
    implicit val root: String = location(t)
    spark.sql(s"INSERT INTO $t VALUES (1)")
    spark.sql(s"INSERT INTO $t VALUES (2)")
    val gone = log(t).snapshot().files.minBy(_.modificationTime)
    removeAt(t, gone, 2)
    log(t).checkpoint(log(t).snapshot()) // drops the 2-hour-old tombstone (table retention: 1 hour)
    assert(log(t).snapshot().tombstones.isEmpty)
    ageAll(root, 5)
    assert(vacuum(t, ", retention_hours => 3, dry_run => true").isEmpty, "removed 2 hours ago: kept for 3")
    assert(vacuum(t, ", dry_run => true").map(_._1) == Seq(gone.path), "the table's 1 hour lets it go")
  }

  test("vacuumProtocolCheck: vacuums tables whose features Strata writes, refuses the others by name") {
    val t = freshTable("vac", "(id INT) USING strata TBLPROPERTIES ('delta.feature.vacuumProtocolCheck' = 'supported')")
    implicit val root: String = location(t)
    assert(log(t).snapshot().protocol.writerFeatures.exists(_("vacuumProtocolCheck")))
    spark.sql(s"INSERT INTO $t VALUES (1)")
    assert(vacuum(t).isEmpty)

    val dir = tempDir("vac-protocol").resolve("t")
    val other = dir.toUri.toString.stripSuffix("/")
    Files.createDirectories(dir.resolve("_delta_log"))
    val actions = Seq(
      Protocol(3, 7, Some(Set("vacuumProtocolCheck")), Some(Set("vacuumProtocolCheck", "rowTracking"))),
      Metadata(id = "x", schemaString = """{"type":"struct","fields":[]}"""))
    Files.write(dir.resolve("_delta_log/00000000000000000000.json"),
      actions.map(ActionCodec.serialize).mkString("", "\n", "\n").getBytes(UTF_8))
    write(other, "orphan.parquet"); ageAll(other, 500)
    val e = intercept[Exception](vacuum(other)(other))
    assert(causeOf[UnsupportedProtocolException](e).getMessage.contains("rowTracking"), e)
    assert(exists(other, "orphan.parquet"))
  }
}
