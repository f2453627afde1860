package io.strata.catalog

import io.strata.dml.DmlTestSupport
import io.strata.log._
import org.apache.spark.sql.Row
import org.apache.spark.sql.functions.min
import org.scalatest.funsuite.AnyFunSuite

/**
 * Liquid clustering through the catalog: CLUSTER BY DDL, incremental OPTIMIZE, and the races of issue 24 with the
 * rival committed at a chosen point ([[withRivalBeforeCommit]], no sleeps): a CLUSTER BY change racing an OPTIMIZE
 * either way round, and two writers of the clustering domain. delta-spark interop is in tests/test_clustering.py.
 */
class ClusteringSuite extends AnyFunSuite with DmlTestSupport {
  private def optimize(t: String, full: Boolean = false): Row =
    spark.sql(s"CALL strata.system.optimize(table => '$t', full => $full)").head()
  private def removedAdded(r: Row): (Long, Long, Int) =
    (r.getAs[Long]("files_removed"), r.getAs[Long]("files_added"), r.getAs[Int]("groups_conflicted"))
  private def clustering(t: String): Seq[Seq[String]] = Clustering.columns(log(t).snapshot())
  private def insert(t: String, from: Int): Unit =
    spark.sql(s"INSERT INTO $t SELECT id, cast(id % 7 AS STRING), cast(id AS INT), map('a', 1) FROM range($from, " +
      s"${from + 50})")
  /** A table clustered by id with two unclustered files. */
  private def clusteredTable(): String = {
    val t = freshTable("clustering", "(id BIGINT, k STRING, v INT, m MAP<STRING, INT>) USING strata CLUSTER BY (id)")
    Seq(0, 100).foreach(insert(t, _))
    t
  }
  private def withConf(key: String, value: String)(body: => Unit): Unit = {
    spark.conf.set(key, value)
    try body finally spark.conf.unset(key)
  }
  /** The table's files by ZCube id (files in no cube left out). */
  private def cubes(t: String): Map[String, Seq[AddFile]] =
    log(t).snapshot().files.flatMap(f => Clustering.cube(f).map(_._1 -> f)).groupBy(_._1).map { case (k, v) =>
      k -> v.map(_._2) }
  private def error(sql: String): String = intercept[Exception](spark.sql(sql).collect()).getMessage

  test("CLUSTER BY: the domain and protocol, DESCRIBE, incremental OPTIMIZE, and what is refused") {
    val t = clusteredTable()
    val p = log(t).snapshot().protocol
    assert(p.minWriterVersion == 7 && Set("clustering", "domainMetadata").subsetOf(p.writerFeatures.get))
    assert(clustering(t) == Seq(Seq("id")))
    val describe = spark.sql(s"DESCRIBE TABLE $t").collect().map(_.getString(0)).toSeq
    assert(describe.contains("# Clustering Information"), describe)
    val unclustered = log(t).snapshot().files.size.toLong // two inserts, a file per task each
    assert(unclustered >= 2 && removedAdded(optimize(t)) == ((unclustered, 1L, 0)))
    val first = log(t).snapshot().files
    assert(first.forall(f => Clustering.provider(f).contains("liquid") && Clustering.cube(f).exists(_._2 == Seq("id"))))
    assert(first.head.tags("ZCUBE_ZORDER_BY") == """["id"]""" && first.head.tags("ZCUBE_ZORDER_CURVE") == "zorder")
    assert(removedAdded(optimize(t)) == ((0L, 0L, 0))) // one cube, nothing unclustered: nothing to do
    // delta-spark's default min cube size (100g): the small cube joins the new files' (ids 200-249) new cube.
    insert(t, 200)
    val added = log(t).snapshot().files.size - 1L
    assert(removedAdded(optimize(t)) == ((added + 1, 1L, 0)))
    val merged = cubes(t)
    assert(merged.size == 1 && !merged.keySet.exists(id => Clustering.cube(first.head).exists(_._1 == id)))
    // With every cube stable, an append over the whole range (ids 0-249) reclusters only the new files.
    withConf("spark.strata.optimize.clustering.minCubeSize", "1") {
      spark.sql(s"INSERT INTO $t SELECT id * 5, 'x', 1, map('a', 1) FROM range(0, 50)")
      val before = log(t).snapshot().files
      val fresh = before.filter(f => Clustering.cube(f).isEmpty)
      assert(fresh.nonEmpty && removedAdded(optimize(t)) == ((fresh.size.toLong, 1L, 0)))
      assert(before.filterNot(fresh.contains).forall(log(t).snapshot().files.contains))
      assert(cubes(t).size == 2 && removedAdded(optimize(t)) == ((0L, 0L, 0))) // two stable cubes
    }
    // Two small cubes and nothing new: merged into one (delta-spark merges small cubes the same way).
    assert(removedAdded(optimize(t)) == ((2L, 1L, 0)) && cubes(t).size == 1)
    spark.sql(s"ALTER TABLE $t CLUSTER BY (k)")
    assert(clustering(t) == Seq(Seq("k")) && lastCommit(t).json.get("operation").asText == "CLUSTER BY")
    // As delta-spark: its cube is by id, which OPTIMIZE leaves to OPTIMIZE FULL (a stable cube of id, too).
    assert(removedAdded(optimize(t)) == ((0L, 0L, 0)))
    withConf("spark.strata.optimize.clustering.minCubeSize", "1") {
      assert(removedAdded(spark.sql(s"OPTIMIZE $t FULL").head()) == ((1L, 1L, 0))) // delta-spark's statement
      assert(lastCommit(t).json.get("operationParameters").get("isFull").asText == "true")
      assert(removedAdded(optimize(t, full = true)) == ((0L, 0L, 0))) // FULL keeps stable cubes of (k)
    }
    assert(cubes(t).values.flatten.forall(f => Clustering.cube(f).exists(_._2 == Seq("k"))))
    assert(rowsOf(t, "count(*), sum(id)") == Seq(Row(200L, (0L until 50).sum + (100L until 150).sum +
      (200L until 250).sum + (0L until 50).map(_ * 5).sum)))
    spark.sql(s"ALTER TABLE $t CLUSTER BY NONE")
    assert(clustering(t).isEmpty && log(t).snapshot().domains.contains(Clustering.Domain))
    spark.sql(s"ALTER TABLE $t CLUSTER BY (v)")

    assert(error("CREATE TABLE strata.clustering.bad (a INT, p INT) USING strata PARTITIONED BY (p) CLUSTER BY (a)")
      .contains("PARTITIONED BY")) // Spark refuses it in the parser; ALTER below reaches Strata
    assert(error(s"ALTER TABLE $t CLUSTER BY (m)").contains("type MAP<STRING, INT>"))
    assert(error(s"ALTER TABLE $t CLUSTER BY (nope)").contains("does not exist"))
    assert(error(s"ALTER TABLE $t SET TBLPROPERTIES ('delta.dataSkippingNumIndexedCols' = '2')")
      .contains("column v has no statistics"))
    assert(error(s"CALL strata.system.optimize(table => '$t', zorder_by => array('id'))").contains("clustered table"))
    val partitioned = freshTable("clustering", "(a INT, p INT) USING strata PARTITIONED BY (p)")
    assert(error(s"CALL strata.system.optimize(table => '$partitioned', full => true)").contains(
      "is not a clustered table (OPTIMIZE FULL reclusters a clustered table's files)"))
    assert(error(s"ALTER TABLE $partitioned CLUSTER BY (a)").contains("either partitioned or clustered"))
    assert(error(s"ALTER TABLE $partitioned CLUSTER BY NONE").contains("not a clustered table"))
    assert(clustering(t) == Seq(Seq("v")))
  }

  test("a CLUSTER BY change committed during an OPTIMIZE: the OPTIMIZE's group conflicts, nothing rewritten") {
    val t = clusteredTable()
    val before = log(t).snapshot().files.map(_.path).toSet
    val r = raced(spark.sql(s"ALTER TABLE $t CLUSTER BY (k)"))(optimize(t))
    assert(removedAdded(r) == ((0L, 0L, 1)))
    assert(clustering(t) == Seq(Seq("k")) && log(t).snapshot().files.map(_.path).toSet == before)
    assert(removedAdded(optimize(t)) == ((before.size.toLong, 1L, 0))) // then it clusters by the new column
    assert(log(t).snapshot().files.forall(f => Clustering.cube(f).exists(_._2 == Seq("k"))))
  }

  test("an OPTIMIZE committed during a CLUSTER BY change: a typed domain conflict, the optimize's result stays") {
    val t = clusteredTable()
    val e = intercept[Exception](raced(optimize(t))(spark.sql(s"ALTER TABLE $t CLUSTER BY (k)")))
    assert(causeOf[ConcurrentDomainMetadataException](e).getMessage.contains(Clustering.Domain))
    assert(clustering(t) == Seq(Seq("id")) && log(t).snapshot().files.size == 1)
  }

  test("two writers of the clustering domain: the later one conflicts; an append racing a change commits") {
    val t = clusteredTable()
    val e = intercept[Exception](raced(spark.sql(s"ALTER TABLE $t CLUSTER BY (k)"))(
      spark.sql(s"ALTER TABLE $t CLUSTER BY (v)")))
    causeOf[ConcurrentDomainMetadataException](e)
    assert(clustering(t) == Seq(Seq("k")))
    raced(spark.sql(s"ALTER TABLE $t CLUSTER BY (v)"))(insert(t, 500)) // the domain alone: no conflict with adds
    assert(clustering(t) == Seq(Seq("v")) && rowsOf(t, "count(*)") == Seq(Row(150L)))
  }

  test("auto-compaction of a clustered table packs the unclustered files and leaves the clustered ones") {
    val t = freshTable("clustering", "(id BIGINT, k STRING, v INT, m MAP<STRING, INT>) USING strata CLUSTER BY (id) " +
      "TBLPROPERTIES ('delta.autoOptimize.autoCompact' = 'true', 'strata.autoCompact.minNumFiles' = '2')")
    insert(t, 0)
    assert(optimize(t).getAs[Long]("files_added") == 1L)
    val clusteredFile = log(t).snapshot().files.map(_.path)
    insert(t, 100) // two more small files: compacted after the write, without the clustered one
    val files = log(t).snapshot().files
    assert(lastCommit(t).json.get("operation").asText == "OPTIMIZE" && files.size == 2)
    assert(files.filter(f => Clustering.provider(f).isDefined).map(_.path) == clusteredFile)
    assert(rowsOf(t, "count(*)") == Seq(Row(100L)))
  }

  test("column mapping: the domain holds physical names; a rename keeps the clustering, a drop is refused") {
    val t = freshTable("clustering", "(id BIGINT, k STRING) USING strata CLUSTER BY (k) " +
      "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    val physical = clustering(t)
    assert(physical.size == 1 && physical.head.head.startsWith("col-"), physical)
    spark.sql(s"ALTER TABLE $t RENAME COLUMN k TO key")
    assert(clustering(t) == physical)
    val describe = spark.sql(s"DESCRIBE TABLE $t").collect().map(_.getString(0)).toSeq
    assert(describe.drop(describe.indexOf("# Clustering Information") + 2) == Seq("key"), describe)
    assert(error(s"ALTER TABLE $t DROP COLUMN key").contains("clustered by"))
    assert(clustering(t) == physical && spark.table(t).columns.toSeq == Seq("id", "key"))
  }

  test("a nested clustering column: DDL, the domain's physical path, OPTIMIZE by it, and refusals") {
    val t = freshTable("clustering", "(id BIGINT, s STRUCT<a: INT, b: STRING>) USING strata CLUSTER BY (s.a) " +
      "TBLPROPERTIES ('delta.columnMapping.mode' = 'name', 'delta.targetFileSize' = '2kb')")
    val Seq(Seq(ps, pa)) = clustering(t)
    assert(ps.startsWith("col-") && pa.startsWith("col-"))
    val describe = spark.sql(s"DESCRIBE TABLE $t").collect().map(_.getString(0)).toSeq
    assert(describe.drop(describe.indexOf("# Clustering Information") + 2) == Seq("s.a"), describe)
    Seq(0, 1).foreach(i => spark.sql(s"INSERT INTO $t SELECT id, named_struct('a', CAST((id * 7919 + $i) % 1000 AS " +
      s"INT), 'b', 'x') FROM range(${i * 500}, ${i * 500 + 500})"))
    val (removed, added, _) = removedAdded(optimize(t))
    assert(removed >= 2 && added > 1, (removed, added))
    val files = log(t).snapshot().files
    assert(files.forall(f => Clustering.cube(f).exists(_._2 == Seq("s.a"))))
    // One column's Z-order is a range partitioning: the files' s.a ranges (nested statistics) do not overlap.
    val ranges = files.map { f =>
      val stats = ActionCodec.mapper.readTree(f.stats.get)
      (stats.get("minValues").get(ps).get(pa).asInt, stats.get("maxValues").get(ps).get(pa).asInt)
    }.sorted
    assert(ranges.sliding(2).forall { case Seq(x, y) => x._2 < y._1; case _ => true }, ranges)
    assert(rowsOf(t, "count(*), sum(s.a)") == Seq(Row(1000L, (0L until 1000L).map(id =>
      (id * 7919 + id / 500) % 1000).sum)))
    spark.sql(s"ALTER TABLE $t RENAME COLUMN s.a TO c")
    assert(clustering(t) == Seq(Seq(ps, pa)))
    assert(removedAdded(optimize(t))._1 == 0L) // its cubes name s.a, the column is s.c now: FULL's to recluster
    assert(removedAdded(optimize(t, full = true))._1 == files.size.toLong)
    assert(log(t).snapshot().files.forall(f => Clustering.cube(f).exists(_._2 == Seq("s.c"))))
    assert(error(s"ALTER TABLE $t SET TBLPROPERTIES ('delta.dataSkippingNumIndexedCols' = '1')")
      .contains("column s.c has no statistics"))
    assert(error(s"ALTER TABLE $t CLUSTER BY (s.nope)").contains("does not exist"))
  }

  test("two columns: a Hilbert layout tagged hilbert; batchSize splits the cubes into commits; a later batch's race") {
    val t = freshTable("clustering", "(id BIGINT, k STRING, v INT, m MAP<STRING, INT>) USING strata CLUSTER BY (v, k)")
    Seq(0, 100, 200, 300).foreach(insert(t, _))
    val files = log(t).snapshot().files
    val before = log(t).snapshot().version
    withConf("spark.strata.optimize.clustering.minCubeSize", "1") {
      withConf("spark.strata.optimize.clustering.targetCubeSize", "1") { // one cube per file
        spark.conf.set("spark.strata.optimize.batchSize", "0")
        try assert(error(s"CALL strata.system.optimize(table => '$t')").contains("spark.strata.optimize.batchSize"))
        finally spark.conf.unset("spark.strata.optimize.batchSize")
        // Files of about one size: two cubes' files per commit, never three.
        assert(files.size >= 4 && files.map(_.size).min * 3 > files.map(_.size).max * 2, files.map(_.size))
        // Another writer compacts the last file (in plan order: the last batch) before the first commit: that
        // batch commits on the latest snapshot, where the file is gone, so its group is lost, not its rows doubled.
        val last = files.map(_.path).max
        withConf("spark.strata.optimize.batchSize", (files.map(_.size).max * 2).toString) {
          val r = raced(compact(t, _.path == last))(optimize(t))
          val versions = r.getSeq[Long](r.fieldIndex("versions"))
          assert(removedAdded(r) == ((files.size - 1L, files.size - 1L, 1)) && r.getAs[Int]("groups_committed") ==
            files.size - 1 && versions == (before + 2 to before + 1 + files.size / 2), versions)
        }
      }
    }
    val (compacted, cubed) = log(t).snapshot().files.partition(_.path.contains("compacted-"))
    assert(cubed.forall(f => f.tags.get("ZCUBE_ZORDER_CURVE").contains("hilbert") && Clustering.cube(f).exists(_._2 ==
      Seq("v", "k"))) && cubed.size == files.size - 1 && compacted.size == 1)
    val sum = Seq(0L, 100L, 200L, 300L).map(f => (f until f + 50).sum).sum
    assert(rowsOf(t, "count(*), sum(v)") == Seq(Row(200L, sum)))
  }

  test("a later batch loses the group whose file a deletion-vector DELETE changed after the plan, not the delete") {
    val t = freshTable("clustering", "(id BIGINT, k STRING, v INT, m MAP<STRING, INT>) USING strata CLUSTER BY (v, k) " +
      "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    Seq(0, 100, 200, 300).foreach(insert(t, _))
    val snap = log(t).snapshot()
    val files = snap.files
    val last = files.map(_.path).max // in plan order: the last batch
    val victim = spark.read.parquet(snap.absolutePath(last).toString).agg(min("id")).head().getLong(0)
    withConf("spark.strata.optimize.clustering.minCubeSize", "1") {
      withConf("spark.strata.optimize.clustering.targetCubeSize", "1") {
        withConf("spark.strata.optimize.batchSize", (files.map(_.size).max * 2).toString) {
          val r = raced(spark.sql(s"DELETE FROM $t WHERE id = $victim"))(optimize(t))
          assert(r.getAs[Int]("groups_committed") == files.size - 1 && removedAdded(r)._3 == 1, r)
        }
      }
    }
    // The DELETE kept the file and gave it a deletion vector; the lost group left both alone.
    assert(log(t).snapshot().files.exists(f => f.path == last && f.deletionVector.isDefined))
    assert(rowsOf(t, s"count(*), count_if(id = $victim)") == Seq(Row(199L, 0L)))
  }
}
