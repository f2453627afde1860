package io.strata.write

import java.nio.file.{Files, Paths}

import io.strata.SparkTestSession
import io.strata.log.{ActionCodec, AddFile, InvalidTableOperationException, TableAlreadyExistsException, TableLog}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.SparkException
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.functions._
import org.scalatest.funsuite.AnyFunSuite

class V1WriteSuite extends AnyFunSuite with SparkTestSession {
  import spark.implicits._

  private def log(path: String) = TableLog.forPath(new Path(path), new Configuration())
  private def read(path: String): DataFrame = spark.read.format("strata").load(path)
  private def rows(df: DataFrame): Seq[Row] = df.collect().toSeq.sortBy(_.toString)

  private def sample(n: Int, offset: Int = 0): DataFrame =
    spark.range(offset, offset + n).select($"id", ($"id" % 3).cast("string").as("p"), ($"id" * 1.5).as("v"))

  test("append, append, overwrite: versions, contents and time travel") {
    val path = tempDir().resolve("t").toString
    sample(10).write.format("strata").partitionBy("p").save(path)
    sample(10, 10).write.format("strata").mode("append").save(path)
    assert(read(path).count() == 20)
    sample(5, 100).write.format("strata").mode("overwrite").save(path)
    assert(rows(read(path)) == rows(sample(5, 100).select("id", "p", "v")))
    assert(read(path).where($"p" === "1").count() == sample(5, 100).where($"p" === "1").count())
    assert(spark.read.format("strata").option("versionAsOf", 1).load(path).count() == 20)
    assert(spark.read.format("strata").option("versionAsOf", 0).load(path).count() == 10)
    val snap = log(path).snapshot()
    assert(snap.version == 2)
    assert(snap.partitionColumns == Seq("p"))
    val ops = log(path).history().map(c => c.commitInfo.get.json.get("operationParameters").get("mode").asText)
    assert(ops == Seq("Overwrite", "Append", "Append"))
    val version = new String(Files.readAllBytes(io.strata.log.Fixtures.repoRoot.resolve("VERSION"))).trim
    val engines = log(path).history().map(_.commitInfo.get.json.get("engineInfo").asText).distinct
    assert(engines == Seq(s"Strata/$version Apache-Spark/4.1.1"), "the connector names Spark (io.strata.SparkEngine)")
  }

  test("partition values with nulls, empty strings and special characters round-trip") {
    val path = tempDir().resolve("special").toString
    val values = Seq(null, "", "a/b", "k=v", "100%", "with space", "colon:x", "ünïcødé ✓")
    val df = values.zipWithIndex.map { case (p, i) => (i.toLong, p) }.toDF("id", "p")
    df.write.format("strata").partitionBy("p").save(path)
    val back = read(path).collect().map(r => r.getLong(0) -> Option(r.getString(1))).toMap
    values.zipWithIndex.foreach { case (p, i) =>
      assert(back(i.toLong) == Option(p).filter(_.nonEmpty), s"value #$i")
    }
    val adds = log(path).readCommit(0).collect { case a: AddFile => a }
    val byValue = adds.map(a => a.partitionValues("p") -> a.path).toMap
    assert(byValue(Some("a/b")).startsWith("p=a%252Fb/"))
    assert(byValue(Some("with space")).startsWith("p=with%20space/"))
    assert(byValue(None).startsWith("p=__HIVE_DEFAULT_PARTITION__/"))
    assert(!byValue.contains(Some("")), "an empty string is stored as the null partition value")
    adds.foreach(a => assert(a.path.matches(""".*/part-\d{5}-[0-9a-f-]{36}-[0-9a-f]{8}-c\d{3}\.snappy\.parquet"""), a.path))
  }

  test("statistics: numRecords, min, max and null counts per file") {
    val path = tempDir().resolve("stats").toString
    Seq((1L, "b", Some(2.0)), (5L, "a", None), (3L, "c", Some(-1.0))).toDF("id", "s", "d")
      .coalesce(1).write.format("strata").save(path)
    val add = log(path).snapshot().files.head
    val stats = ActionCodec.mapper.readTree(add.stats.get)
    assert(stats.get("numRecords").asLong == 3)
    assert(stats.get("minValues").get("id").asLong == 1 && stats.get("maxValues").get("id").asLong == 5)
    assert(stats.get("minValues").get("s").asText == "a" && stats.get("maxValues").get("s").asText == "c")
    assert(stats.get("nullCount").get("d").asLong == 1)
  }

  test("ErrorIfExists and Ignore on an existing table") {
    val path = tempDir().resolve("modes").toString
    sample(3).write.format("strata").save(path)
    val e = intercept[TableAlreadyExistsException](sample(3).write.format("strata").mode("errorifexists").save(path))
    assert(e.getMessage.contains("already exists (version 0)") && e.getCondition == "STRATA_TABLE_ALREADY_EXISTS")
    sample(3).write.format("strata").mode("ignore").save(path)
    assert(log(path).snapshot().version == 0)
  }

  test("a task failing mid-write leaves the table at its previous version and no new files") {
    val dir = tempDir()
    val path = dir.resolve("fail").toString
    sample(20).write.format("strata").save(path)
    val before = filesUnder(Paths.get(path))
    val boom = udf((id: Long) => { if (id == 17) throw new IllegalStateException("injected failure"); id })
    val bad = sample(20).repartition(2).withColumn("id", boom($"id"))
    intercept[SparkException](bad.write.format("strata").mode("append").save(path))
    assert(log(path).snapshot().version == 0)
    assert(read(path).count() == 20)
    assert(filesUnder(Paths.get(path)) == before, "files of the failed job were not cleaned up")
  }

  test("a task that commits after its job already failed (a straggler) leaves no file behind") {
    val path = tempDir().resolve("straggler").toString
    sample(4).write.format("strata").save(path)
    val before = filesUnder(Paths.get(path))
    // Task 0 (rows 0-9) is authorized to commit, commits, and is held before it reports; task 1 (rows 10-19) fails
    // once task 0 is held there, so Spark fails the job before it hears of task 0, and drops task 0's late report.
    val whileHeld = Straggler.run(spark, held = 0, failing = 19, () => filesUnder(Paths.get(path)))(intercept[SparkException](
      spark.range(0, 20, 1, 2).select(Straggler.column(spark, $"id").as("id"), ($"id" % 3).cast("string").as("p"),
        ($"id" * 1.5).as("v")).write.format("strata").mode("append").save(path)))
    assert((whileHeld -- before).exists(_.endsWith(".parquet")), "the straggler had committed no file")
    assert(log(path).snapshot().version == 0)
    assert(filesUnder(Paths.get(path)) == before, "the straggler's file was left behind")
  }

  test("schema mismatches fail clearly and write nothing") {
    val path = tempDir().resolve("schema").toString
    sample(3).write.format("strata").save(path)
    val before = filesUnder(Paths.get(path))
    val extra = intercept[InvalidTableOperationException](
      sample(3).withColumn("x", lit(1)).write.format("strata").mode("append").save(path))
    assert(extra.getMessage.contains("column 'x' (int) is not in the table"))
    val typed = intercept[InvalidTableOperationException](
      sample(3).withColumn("v", $"v".cast("string")).write.format("strata").mode("append").save(path))
    assert(typed.getMessage.contains("column 'v' is double in the table but string in the data"))
    val parts = intercept[InvalidTableOperationException](
      sample(3).write.format("strata").mode("append").partitionBy("p").save(path))
    assert(parts.getMessage.contains("partitioned by []"))
    assert(filesUnder(Paths.get(path)) == before)
    assert(log(path).snapshot().version == 0)
  }

  test("a nullable column missing from the data is written as nulls, as delta-spark does; a NOT NULL one is refused") {
    val path = tempDir().resolve("missing").toString
    sample(3).write.format("strata").partitionBy("p").save(path)
    sample(2, 3).drop("v").write.format("strata").mode("append").save(path)
    sample(2, 5).drop("p").write.format("strata").mode("append").save(path)
    assert(rows(read(path).select("id", "p", "v")) == rows(sample(3).union(
      sample(2, 3).withColumn("v", lit(null).cast("double"))).union(
      sample(2, 5).withColumn("p", lit(null).cast("string")))))
    val strict = tempDir().resolve("strict").toString
    spark.sql(s"CREATE TABLE strata.`$strict` (id BIGINT NOT NULL, v DOUBLE) USING strata")
    val e = intercept[InvalidTableOperationException](
      spark.range(2).select(($"id" * 1.5).as("v")).write.format("strata").mode("append").save(strict))
    assert(e.getMessage.contains("column 'id' (bigint) is NOT NULL but missing from the data"))
    assert(log(strict).snapshot().version == 0)
  }

  test("columns are matched by name, case-insensitively, and stored in the table's order and spelling") {
    val path = tempDir().resolve("order").toString
    sample(3).write.format("strata").save(path)
    sample(3, 3).select($"V", $"ID", $"p").write.format("strata").mode("append").save(path)
    assert(rows(read(path)) == rows(sample(6)))
  }

  test("unknown and invalid options are rejected before anything is written") {
    val path = tempDir().resolve("opts").toString
    val e = intercept[InvalidTableOperationException](
      sample(3).write.format("strata").option("compresion", "zstd").save(path))
    assert(e.getMessage.contains("Unknown option 'compresion'. Did you mean 'compression'?"))
    val codec = intercept[InvalidTableOperationException](
      sample(3).write.format("strata").option("compression", "brotli2").save(path))
    assert(codec.getMessage.contains("'compression' has invalid value 'brotli2'"))
    assert(!Files.exists(Paths.get(path, "_delta_log")))
  }

  test("compression and maxRecordsPerFile reach the Parquet writer") {
    val path = tempDir().resolve("codec").toString
    spark.range(100).coalesce(1).write.format("strata").option("compression", "zstd")
      .option("maxRecordsPerFile", 30).save(path)
    val files = log(path).snapshot().files
    assert(files.size == 4)
    assert(files.forall(_.path.endsWith(".zstd.parquet")))
    assert(read(path).count() == 100)
  }

  test("a location holding files but no log is refused") {
    val dir = tempDir().resolve("foreign")
    spark.range(3).write.parquet(dir.toString)
    val e = intercept[InvalidTableOperationException](spark.range(3).write.format("strata").save(dir.toString))
    assert(e.getMessage.contains("but no Strata/Delta log"))
  }

  test("txnAppId/txnVersion make a retried write a no-op") {
    val path = tempDir().resolve("idem").toString
    def w(v: Long) = sample(4).write.format("strata").mode("append")
      .option("txnAppId", "job-1").option("txnVersion", v).save(path)
    w(1); w(1); w(2); w(1)
    assert(log(path).snapshot().version == 1)
    assert(read(path).count() == 8)
    assert(log(path).snapshot().transactionVersion("job-1").contains(2))
  }

  test("a checkpoint every 10 commits, and the table reads the same through it") {
    val path = tempDir().resolve("cp").toString
    (0 until 12).foreach(i => spark.range(i * 10, i * 10 + 10).write.format("strata").mode("append").save(path))
    assert(Files.exists(Paths.get(path, "_delta_log", "00000000000000000010.checkpoint.parquet")))
    assert(Files.exists(Paths.get(path, "_delta_log", "_last_checkpoint")))
    val snap = log(path).snapshot()
    assert(snap.segment.checkpointVersion.contains(10L) && snap.segment.commitFiles.size == 1)
    assert(read(path).count() == 120)
    assert(read(path).agg(sum("id")).head().getLong(0) == (0 until 120).sum)
  }

  test("NOT NULL columns of a catalog table are enforced on path writes") {
    spark.sql("CREATE NAMESPACE IF NOT EXISTS strata.nn")
    spark.sql("CREATE TABLE strata.nn.t (id BIGINT NOT NULL, s STRING) USING strata")
    val path = spark.sql("DESCRIBE TABLE EXTENDED strata.nn.t").where($"col_name" === "Location").head().getString(1)
    Seq((1L, "a")).toDF("id", "s").write.format("strata").mode("append").save(path)
    // Local data may fail while planning (constant folding), real data inside the tasks: both must commit nothing.
    val e = intercept[Exception](
      Seq((Some(2L), "b"), (None, "c")).toDF("id", "s").write.format("strata").mode("append").save(path))
    assert(e.getMessage.contains("NOT NULL constraint violated: column 'id'"))
    val e2 = intercept[Exception](spark.range(10).select(when($"id" =!= 7, $"id").as("id"), lit("x").as("s"))
      .repartition(2).write.format("strata").mode("append").save(path))
    assert(e2.getMessage.contains("NOT NULL constraint violated: column 'id'"))
    assert(spark.table("strata.nn.t").count() == 1)
    assert(log(path).snapshot().version == 1)
  }

  test("replaceWhere on partition columns replaces just those partitions, in one commit") {
    val path = tempDir().resolve("rw").toString
    sample(30).write.format("strata").partitionBy("p").save(path)
    sample(6, 100).where($"p" === "1").write.format("strata").mode("overwrite").option("replaceWhere", "p = '1'")
      .save(path)
    val expected = sample(30).where($"p" =!= "1").union(sample(6, 100).where($"p" === "1"))
    assert(rows(read(path)) == rows(expected))
    val info = log(path).history(1).head.commitInfo.get.json
    assert(info.get("operationParameters").get("predicate").asText == "[\"p = '1'\"]")
    assert(info.get("operationMetrics").get("numRemovedFiles").asLong > 0)
  }

  test("replaceWhere on a data column rewrites the rows outside the predicate") {
    val path = tempDir().resolve("rwdata").toString
    sample(30).coalesce(2).write.format("strata").save(path)
    sample(5, 10).withColumn("v", lit(-1.0)).write.format("strata").mode("overwrite")
      .option("replaceWhere", "id >= 10 AND id < 15").save(path)
    val expected = sample(30).where($"id" < 10 || $"id" >= 15).union(sample(5, 10).withColumn("v", lit(-1.0)))
    assert(rows(read(path)) == rows(expected))
  }

  test("replaceWhere rejects written rows outside the predicate and commits nothing") {
    val path = tempDir().resolve("rwbad").toString
    sample(9).write.format("strata").partitionBy("p").save(path)
    val before = filesUnder(Paths.get(path))
    val e = intercept[Exception](sample(9, 50).repartition(2).write.format("strata").mode("overwrite")
      .option("replaceWhere", "p = '1'").save(path))
    assert(e.getMessage.contains("Written rows must match replaceWhere 'p = '1''"))
    assert(log(path).snapshot().version == 0)
    assert(filesUnder(Paths.get(path)) == before)
  }

  test("dynamic partition overwrite matches Spark's Parquet source, by option and by session conf") {
    val strata = tempDir().resolve("dyn").toString
    val parquet = tempDir().resolve("dynpq").toString
    val first = sample(30)
    val second = sample(4, 200).where($"p" =!= "2")
    first.write.format("strata").partitionBy("p").save(strata)
    first.write.partitionBy("p").parquet(parquet)
    second.write.format("strata").mode("overwrite").option("partitionOverwriteMode", "dynamic").save(strata)
    second.write.mode("overwrite").option("partitionOverwriteMode", "dynamic").partitionBy("p").parquet(parquet)
    assert(rows(read(strata)) == rows(spark.read.parquet(parquet).select($"id", $"p".cast("string"), $"v")))
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try sample(2, 300).where($"p" === "0").write.format("strata").mode("overwrite").save(strata)
    finally spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    assert(read(strata).where($"p" === "0").count() == sample(2, 300).where($"p" === "0").count())
    assert(read(strata).where($"p" === "2").count() == first.where($"p" === "2").count())
  }

  test("mergeSchema adds new columns; safe widening casts the data to the table type") {
    val path = tempDir().resolve("merge").toString
    sample(3).write.format("strata").save(path)
    sample(2, 10).withColumn("extra", lit("x")).write.format("strata").mode("append").option("mergeSchema", "true")
      .save(path)
    val df = read(path)
    assert(df.columns.toSeq == Seq("id", "p", "v", "extra"))
    assert(df.where($"extra".isNull).count() == 3 && df.where($"extra" === "x").count() == 2)
    spark.range(3).select($"id".cast("int").as("id"), lit("9").as("p"), lit(1.0f).as("v"), lit("y").as("extra"))
      .write.format("strata").mode("append").save(path)
    assert(read(path).schema("id").dataType.simpleString == "bigint")
    assert(read(path).count() == 8)
  }

  test("overwriteSchema replaces schema and partitioning in one commit; older versions stay readable") {
    val path = tempDir().resolve("ows").toString
    sample(6).write.format("strata").partitionBy("p").save(path)
    val e = intercept[InvalidTableOperationException](
      spark.range(4).select($"id".as("k")).write.format("strata").mode("overwrite").save(path))
    assert(e.getMessage.contains("column 'k' (bigint) is not in the table"))
    spark.range(4).select($"id".as("k"), ($"id" % 2).as("q")).write.format("strata").mode("overwrite")
      .option("overwriteSchema", "true").partitionBy("q").save(path)
    assert(read(path).columns.toSeq == Seq("k", "q"))
    assert(log(path).snapshot().partitionColumns == Seq("q"))
    assert(spark.read.format("strata").option("versionAsOf", 0).load(path).columns.toSeq == Seq("id", "p", "v"))
  }

  test("an injected writer failure mid-file aborts the job: previous version kept, no files left behind") {
    val path = tempDir().resolve("inject").toString
    sample(10).write.format("strata").partitionBy("p").save(path)
    val before = filesUnder(Paths.get(path))
    val e = FaultInjectingFileSystem.withFailingWrites(spark, bytes = 100)(intercept[Exception](spark.range(100)
      .select($"id", ($"id" % 3).cast("string").as("p"), ($"id" * 1.5).as("v")).repartition(2)
      .write.format("strata").mode("append").save(path)))
    assert(e.toString.contains("Injected write failure after 100 bytes") ||
      Option(e.getCause).exists(_.toString.contains("Injected")))
    assert(log(path).snapshot().version == 0)
    assert(filesUnder(Paths.get(path)) == before)
  }

  test("date, timestamp, decimal, boolean and integer partition columns round-trip; log values follow the protocol") {
    val path = tempDir().resolve("typedparts").toString
    val df = spark.sql("""SELECT * FROM VALUES
      (1, DATE'2024-02-29', TIMESTAMP'2024-03-01 10:11:12.345678', CAST(12.50 AS DECIMAL(6,2)), true, 7),
      (2, DATE'1970-01-01', TIMESTAMP'1999-12-31 23:59:59', CAST(-3.00 AS DECIMAL(6,2)), false, -1),
      (3, NULL, NULL, NULL, NULL, NULL) AS t(id, d, ts, dec, b, i)""")
    df.write.format("strata").partitionBy("d", "ts", "dec", "b", "i").save(path)
    assert(rows(read(path).select("id", "d", "ts", "dec", "b", "i")) == rows(df))
    assert(read(path).where($"ts" === lit("2024-03-01 10:11:12.345678").cast("timestamp")).count() == 1)
    val values = log(path).snapshot().files.map(_.partitionValues).toSet
    assert(values.contains(Map("d" -> Some("2024-02-29"), "ts" -> Some("2024-03-01T10:11:12.345678Z"),
      "dec" -> Some("12.50"), "b" -> Some("true"), "i" -> Some("7"))))
    assert(values.contains(Map("d" -> None, "ts" -> None, "dec" -> None, "b" -> None, "i" -> None)))
  }

  test("the concurrent-writers path gives the same table as the sorted single writer") {
    val sorted = tempDir().resolve("single").toString
    val concurrent = tempDir().resolve("concurrent").toString
    val data = spark.range(2000).select($"id", ($"id" % 7).cast("string").as("p"), ($"id" * 1.5).as("v"))
    data.write.format("strata").partitionBy("p").save(sorted)
    spark.conf.set("spark.sql.maxConcurrentOutputFileWriters", "4")
    try data.write.format("strata").partitionBy("p").save(concurrent)
    finally spark.conf.unset("spark.sql.maxConcurrentOutputFileWriters")
    assert(rows(read(sorted)) == rows(read(concurrent)))
    assert(log(concurrent).snapshot().files.map(_.partitionValues).distinct.size == 7)
  }

  test("statistics keep timestamp bounds (millisecond, rounded outward) and truncate long strings as bounds") {
    val path = tempDir().resolve("stats2").toString
    val long = "x" * 40
    spark.sql(s"""SELECT * FROM VALUES
      (TIMESTAMP'2024-01-01 00:00:00.000999', '$long', CAST(1.25 AS DECIMAL(5,2)), DATE'2024-02-29'),
      (TIMESTAMP'2024-01-02 00:00:00.000001', 'a', CAST(-3.5 AS DECIMAL(5,2)), DATE'2020-01-01')
      AS t(ts, s, dec, d)""").coalesce(1).write.format("strata").save(path)
    val stats = ActionCodec.mapper.readTree(log(path).snapshot().files.head.stats.get)
    val (min, max) = (stats.get("minValues"), stats.get("maxValues"))
    assert(min.get("ts").asText == "2024-01-01T00:00:00.000Z")
    assert(max.get("ts").asText == "2024-01-02T00:00:00.001Z")
    assert(min.get("s").asText == "a")
    assert(max.get("s").asText == "x" * 32 + new String(Character.toChars(Character.MAX_CODE_POINT)))
    assert(min.get("dec").decimalValue.compareTo(new java.math.BigDecimal("-3.5")) == 0)
    assert(max.get("dec").decimalValue.compareTo(new java.math.BigDecimal("1.25")) == 0)
    assert(min.get("d").asText == "2020-01-01" && max.get("d").asText == "2024-02-29")
  }

  test("time travel by timestamp; an unparseable timestamp and a missing table get Strata's own errors") {
    val path = tempDir().resolve("tt").toString
    sample(3).write.format("strata").save(path)
    Thread.sleep(20)
    val between = new java.sql.Timestamp(System.currentTimeMillis()).toString
    Thread.sleep(20)
    sample(3, 10).write.format("strata").mode("append").save(path)
    assert(spark.read.format("strata").option("timestampAsOf", between).load(path).count() == 3)
    val bad = intercept[InvalidTableOperationException](
      spark.read.format("strata").option("timestampAsOf", "yesterday-ish").load(path))
    assert(bad.getMessage.contains("Option timestampAsOf has invalid value 'yesterday-ish'"))
    val missing = tempDir().resolve("nothing").toString
    intercept[io.strata.log.TableNotFoundException](log(missing).history())
  }

  test("the relation a V1 save returns reads the table as written, its file index built only when asked") {
    import org.apache.spark.sql.execution.datasources.HadoopFsRelation
    def saved(path: String, data: DataFrame) = new io.strata.StrataDataSource().createRelation(spark.sqlContext,
      org.apache.spark.sql.SaveMode.Append, Map("path" -> path), data).asInstanceOf[HadoopFsRelation]
    val path = tempDir().resolve("t").toString
    sample(10).write.format("strata").partitionBy("p").save(path)
    val relation = saved(path, sample(5, 10))
    assert(relation.location.isInstanceOf[io.strata.read.DeferredFileIndex])
    assert(relation.schema == read(path).schema)
    val all = spark.baseRelationToDataFrame(relation)
    assert(rows(all.select("id", "p", "v")) == rows(sample(15).select("id", "p", "v")))
    assert(all.inputFiles.length == log(path).snapshot().numFiles)
    assert(spark.baseRelationToDataFrame(relation).where($"p" === "1").count() == sample(15).where($"p" === "1").count())
    // A table with deletion vectors: the returned relation drops the rows they delete, as a read does.
    val dv = tempDir().resolve("dv")
    org.apache.commons.io.FileUtils.copyDirectory(io.strata.log.Fixtures.goldenTable("dv-partitioned-with-checkpoint").toFile,
      dv.toFile)
    val before = rows(read(dv.toString))
    val withDv = saved(dv.toString, read(dv.toString).limit(1))
    assert(withDv.fileFormat.isInstanceOf[io.strata.read.DeletionVectorParquetFormat])
    assert(spark.baseRelationToDataFrame(withDv).count() == before.size + 1)
    assert(rows(spark.baseRelationToDataFrame(withDv)) == rows(read(dv.toString)))
  }
}
