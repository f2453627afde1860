package io.strata.dml

import io.strata.log.{DeletionVectors, Protocol}
import org.apache.spark.sql.Row
import org.scalatest.funsuite.AnyFunSuite

/**
 * DELETE, UPDATE and MERGE on tables with `delta.enableDeletionVectors = true`: rows are marked deleted in the data
 * files' vectors (merge-on-read), nothing is copied, the results equal the same statements on a copy-on-write table.
 */
class MergeOnReadSuite extends AnyFunSuite with DmlTestSupport {
  private val cols = "(id BIGINT, v STRING, p STRING)"

  private def pair(): (String, String) = {
    val dv = freshTable("mor", s"$cols USING strata PARTITIONED BY (p) TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    val cow = freshTable("cow", s"$cols USING strata PARTITIONED BY (p)")
    Seq(dv, cow).foreach { t =>
      spark.sql(s"INSERT INTO $t SELECT id, concat('v', id), IF(id % 2 = 0, 'even', 'odd') FROM range(0, 40)")
    }
    (dv, cow)
  }

  private def both(dv: String, cow: String)(sql: String): Unit = {
    spark.sql(sql.replace("{t}", dv))
    spark.sql(sql.replace("{t}", cow))
    assert(rowsOf(dv) == rowsOf(cow), sql)
  }

  test("enabling the property upgrades the protocol to reader 3 / writer 7 with deletionVectors") {
    val (dv, _) = pair()
    val p = log(dv).snapshot().protocol
    assert(p.minReaderVersion == 3 && p.minWriterVersion == 7)
    assert(p.readerFeatures.exists(_("deletionVectors")) && p.writerFeatures.exists(_("deletionVectors")), p)
    val plain = freshTable("mor_alter", s"$cols USING strata")
    spark.sql(s"INSERT INTO $plain VALUES (1, 'a', 'x')")
    spark.sql(s"ALTER TABLE $plain SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    assert(log(plain).snapshot().protocol == Protocol(3, 7, Some(Set("deletionVectors")),
      Some(Set("appendOnly", "invariants", "deletionVectors"))))
  }

  test("DELETE marks the rows in vectors: no file is rewritten, each touched file gets remove + add with a vector") {
    val (dv, cow) = pair()
    val before = log(dv).snapshot()
    both(dv, cow)("DELETE FROM {t} WHERE id IN (3, 4, 17)")
    val (adds, removes) = changes(dv, before.version + 1)
    assert(adds.nonEmpty && adds.forall(_.deletionVector.isDefined), adds)
    assert(adds.map(_.path).toSet == removes.map(_.path).toSet, "same files, new vectors")
    assert(removes.forall(_.deletionVector.isEmpty))
    assert(adds.map(_.deletionVector.get.cardinality).sum == 3)
    assert(adds.forall(_.stats.exists(_.contains("\"tightBounds\":false"))))
    assert(metric(dv, "numDeletedRows") == 3 && metric(dv, "numDeletionVectorsAdded") == adds.size)
    // each vector holds exactly the deleted rows' indexes in its file
    val snap = log(dv).snapshot()
    snap.files.filter(_.deletionVector.isDefined).foreach { f =>
      val rows = DeletionVectors.read(f.deletionVector.get, snap.tablePath, log(dv).conf)
      val ids = spark.read.parquet(snap.absolutePath(f.path).toString).collect().map(_.getLong(0)).toSeq
      assert(rows.toSeq.map(i => ids(i.toInt)).toSet.subsetOf(Set(3L, 4L, 17L)), (f.path, rows.toSeq))
    }
    // a second DELETE on the same file grows its vector: remove carries the old one
    both(dv, cow)("DELETE FROM {t} WHERE id = 5")
    val (adds2, removes2) = changes(dv, before.version + 2)
    assert(removes2.size == 1 && removes2.head.deletionVector.isDefined && adds2.head.deletionVector.get.cardinality == 3)
  }

  test("UPDATE is a delete plus a reinsert; MERGE with all clause kinds; results equal copy-on-write") {
    val (dv, cow) = pair()
    both(dv, cow)("UPDATE {t} SET v = upper(v) WHERE id % 7 = 0")
    assert(metric(dv, "numUpdatedRows") == 6)
    both(dv, cow)("UPDATE {t} SET p = 'moved' WHERE id = 1")
    spark.range(30, 50).selectExpr("id", "concat('s', id) AS v", "id % 3 = 0 AS gone").createOrReplaceTempView("mor_src")
    both(dv, cow)("MERGE INTO {t} t USING mor_src s ON t.id = s.id WHEN MATCHED AND s.gone THEN DELETE " +
      "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (id, v, p) VALUES (s.id, s.v, 'new') " +
      "WHEN NOT MATCHED BY SOURCE AND t.id < 3 THEN DELETE")
    assert(metric(dv, "numTargetRowsInserted") == 10 && metric(dv, "numTargetRowsDeleted") == 7) // 30, 33, 36, 39 and 0, 1, 2
    both(dv, cow)("DELETE FROM {t} WHERE v LIKE 'V%'")
    assert(spark.sql(s"SELECT count(*) FROM $dv").head().getLong(0) == rowsOf(cow).size)
  }

  test("deleting every row of a file removes it; time travel reads the rows before each change") {
    val (dv, cow) = pair()
    val v0 = version(dv)
    both(dv, cow)("DELETE FROM {t} WHERE id = 0")
    both(dv, cow)("DELETE FROM {t} WHERE p = 'even' AND id > 0")
    assert(rowsOf(dv).forall(_.getString(2) == "odd"))
    val snap = log(dv).snapshot()
    assert(snap.files.forall(_.partitionValues("p").contains("odd")), "even files removed")
    assert(rows(spark.sql(s"SELECT * FROM $dv VERSION AS OF $v0")).size == 40)
    assert(rows(spark.sql(s"SELECT * FROM $dv VERSION AS OF ${v0 + 1}")).size == 39)
  }

  test("a copy-on-write DELETE on files with vectors drops the deleted rows and removes with the vector") {
    val (dv, _) = pair()
    spark.sql(s"DELETE FROM $dv WHERE id = 2")
    spark.sql(s"ALTER TABLE $dv SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'false')")
    spark.sql(s"DELETE FROM $dv WHERE id = 4")
    val (adds, removes) = changes(dv, version(dv))
    assert(adds.forall(_.deletionVector.isEmpty) && removes.exists(_.deletionVector.isDefined))
    assert(!rowsOf(dv, "id").contains(Row(2L)) && !rowsOf(dv, "id").contains(Row(4L)))
    assert(rowsOf(dv).size == 38)
  }

  test("a checkpoint carries the vectors of adds and removes; replay from it gives the same files and rows") {
    val (dv, cow) = pair()
    spark.sql(s"ALTER TABLE $dv SET TBLPROPERTIES ('delta.checkpointInterval' = '2')")
    Seq("DELETE FROM {t} WHERE id = 1", "DELETE FROM {t} WHERE id = 3", "UPDATE {t} SET v = 'u' WHERE id = 5")
      .foreach(both(dv, cow))
    val snap = log(dv).snapshot()
    val cp = snap.segment.checkpointVersion.getOrElse(fail("no checkpoint written"))
    val cpFile = io.strata.log.FileNames.checkpointFile(log(dv).logPath, cp)
    val actions = io.strata.log.Checkpoints.read(cpFile, log(dv).conf).toSeq
    val cpAdds = actions.collect { case a: io.strata.log.AddFile => (a.path, a.deletionVector) }
    assert(cpAdds.exists(_._2.isDefined), cpAdds)
    assert(actions.collect { case r: io.strata.log.RemoveFile => r }.exists(_.deletionVector.isDefined))
    assert(cpAdds.toSet == log(dv).snapshotAt(cp).files.map(f => (f.path, f.deletionVector)).toSet)
    assert(rowsOf(dv) == rowsOf(cow))
  }

  test("spark.strata.properties.defaults.enableDeletionVectors turns vectors on for new tables only") {
    val existing = freshTable("mor_def_old", s"$cols USING strata")
    spark.conf.set("spark.strata.properties.defaults.enableDeletionVectors", "true")
    try {
      val created = freshTable("mor_def", s"$cols USING strata")
      val optedOut = freshTable("mor_def_off", s"$cols USING strata TBLPROPERTIES ('delta.enableDeletionVectors' = 'false')")
      val path = tempDir("mor-def-path").resolve("t").toString
      spark.range(3).selectExpr("id", "'a' AS v", "'x' AS p").write.format("strata").save(path)
      spark.sql(s"INSERT INTO $existing VALUES (1, 'a', 'x')")
      def enabled(l: io.strata.log.TableLog) =
        l.snapshot().metadata.configuration.get("delta.enableDeletionVectors")
      assert(enabled(log(created)).contains("true") && log(created).snapshot().protocol.minReaderVersion == 3)
      assert(enabled(log(optedOut)).contains("false"))
      val pathLog = io.strata.log.TableLog.forPath(new org.apache.hadoop.fs.Path(path), log(created).conf)
      assert(enabled(pathLog).contains("true"))
      assert(enabled(log(existing)).isEmpty)
      spark.range(0, 10, 1, 1).selectExpr("id", "'a' AS v", "'x' AS p").writeTo(created).append() // one file
      spark.sql(s"DELETE FROM $created WHERE id = 1")
      assert(changes(created, version(created))._1.exists(_.deletionVector.isDefined))
    } finally spark.conf.unset("spark.strata.properties.defaults.enableDeletionVectors")
  }

  test("small vectors inline in the log when asked (write.deletion-vector.inline-max-bytes); bad values refused") {
    val (dv, cow) = pair()
    spark.conf.set("spark.strata.write.deletion-vector.inline-max-bytes", "1000")
    try {
      both(dv, cow)("DELETE FROM {t} WHERE id IN (6, 9)")
      val (adds, _) = changes(dv, version(dv))
      assert(adds.nonEmpty && adds.forall(_.deletionVector.exists(_.storageType == "i")), adds)
      both(dv, cow)("UPDATE {t} SET v = 'z' WHERE id = 11")
      spark.conf.set("spark.strata.write.deletion-vector.inline-max-bytes", "-1")
      val e = intercept[Exception](spark.sql(s"DELETE FROM $dv WHERE id = 12"))
      assert(causes(e).exists(_.getMessage.contains("inline-max-bytes has invalid value '-1'")), e)
    } finally spark.conf.unset("spark.strata.write.deletion-vector.inline-max-bytes")
    assert(rowsOf(dv) == rowsOf(cow))
  }

  test("MERGE WITH SCHEMA EVOLUTION on a table with vectors adds the column and marks the matched rows deleted") {
    val (dv, cow) = pair()
    spark.range(38, 42).selectExpr("id", "concat('e', id) AS v", "'odd' AS p", "id * 10 AS extra")
      .createOrReplaceTempView("mor_evo")
    both(dv, cow)("MERGE WITH SCHEMA EVOLUTION INTO {t} t USING mor_evo s ON t.id = s.id " +
      "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    assert(rowsOf(dv, "id, extra").filter(_.getLong(0) >= 38) ==
      Seq(Row(38L, 380L), Row(39L, 390L), Row(40L, 400L), Row(41L, 410L)))
    assert(changes(dv, version(dv))._1.exists(_.deletionVector.isDefined))
  }

  test("_strata_file and _strata_row_index are queryable: each live row's file and index in it") {
    val t = freshTable("mor_meta", s"$cols USING strata TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    spark.range(0, 20, 1, 1).selectExpr("id", "concat('v', id) AS v", "'x' AS p").writeTo(t).append()
    spark.sql(s"DELETE FROM $t WHERE id IN (3, 4)")
    val meta = rows(spark.sql(s"SELECT id, _strata_row_index, _strata_file FROM $t WHERE id < 7"))
    assert(meta.map(r => (r.getLong(0), r.getLong(1))) == Seq(0L, 1L, 2L, 5L, 6L).map(i => (i, i)))
    assert(meta.map(_.getString(2)).distinct.size == 1 && meta.head.getString(2).endsWith(".parquet"))
  }

  test("nested columns (struct, array, map, decimal, binary) read right around deleted rows, vectorized or not") {
    val ddl = "(id BIGINT, s STRUCT<a: INT, b: STRING>, arr ARRAY<STRING>, m MAP<STRING, INT>, d DECIMAL(12, 2), " +
      "bin BINARY)"
    val dv = freshTable("mor_nested", s"$ddl USING strata TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    val cow = freshTable("cow_nested", s"$ddl USING strata")
    val data = spark.range(0, 5000, 1, 1).selectExpr("id", "named_struct('a', CAST(id AS INT), 'b', concat('b', id)) AS s",
      "IF(id % 5 = 0, NULL, array(concat('x', id), 'y')) AS arr", "map(concat('k', id), CAST(id AS INT)) AS m",
      "CAST(id / 7 AS DECIMAL(12, 2)) AS d", "CAST(concat('z', id) AS BINARY) AS bin")
    Seq(dv, cow).foreach(t => data.writeTo(t).append())
    both(dv, cow)("DELETE FROM {t} WHERE id % 3 = 1 OR id BETWEEN 4000 AND 4100")
    for (vectorized <- Seq("true", "false")) {
      spark.conf.set("spark.sql.parquet.enableVectorizedReader", vectorized)
      try {
        assert(rowsOf(dv) == rowsOf(cow), s"vectorized=$vectorized")
        assert(rowsOf(dv, "s.b, arr[0], m") == rowsOf(cow, "s.b, arr[0], m"), s"vectorized=$vectorized")
      } finally spark.conf.unset("spark.sql.parquet.enableVectorizedReader")
    }
  }
}
