package io.strata.config

import java.nio.file.Files

import io.strata.config.SettingSource.{SessionConf, TableProperty, WriteOption}
import io.strata.config.WriteEntry._
import io.strata.config.WriteSettings._
import io.strata.log.{Fixtures, InvalidTableOperationException}
import org.scalatest.funsuite.AnyFunSuite

/**
 * The write-configuration resolver on its own (no Spark): one precedence rule for every setting, the write options
 * each entry point accepts, the application transaction, and errors that name where a bad value came from.
 */
class WriteConfSuite extends AnyFunSuite {
  private def conf(options: Map[String, String] = Map.empty, entry: WriteEntry = PathWrite,
                   session: Map[String, String] = Map.empty, properties: Map[String, String] = Map.empty): WriteConf =
    WriteConf.forWrite(options, entry, session.get).forTable(properties)

  /** The refusal's message without its `[CONDITION] ` prefix. */
  private def refused(body: => Any): String = intercept[InvalidTableOperationException](body).messageText
  private def conditionOf(body: => Any): String = intercept[InvalidTableOperationException](body).getCondition

  /** Three distinct valid values of each setting (as text), and what the first of them reads as. */
  private val samples: Map[WriteSetting[_], Seq[String]] = Map(
    Compression -> Seq("zstd", "gzip", "lz4"), MaxRecordsPerFile -> Seq("10", "20", "30"),
    UserMetadata -> Seq("a", "b", "c"), ReplaceWhere -> Seq("d = 1", "d = 2", "d = 3"),
    PartitionOverwriteMode -> Seq("dynamic", "static", "dynamic"), MergeSchema -> Seq("true", "false", "true"),
    OverwriteSchema -> Seq("true", "false", "true"), OptimizeWrite -> Seq("true", "false", "true"),
    PartitionColumns -> Seq("[\"a\"]", "[\"b\"]", "[\"c\"]"), Distribution -> Seq("range", "none", "hash"),
    TargetFileSize -> Seq("1000", "2000", "3000"), MaxOpenFiles -> Seq("7", "8", "9"),
    InlineVectorBytes -> Seq("10", "20", "30"), NumIndexedColumns -> Seq("5", "6", "7"),
    AutoCompact -> Seq("true", "false", "auto"), AutoCompactMinNumFiles -> Seq("4", "5", "6"),
    AutoCompactMinFileSize -> Seq("100", "200", "300"), AutoCompactMaxFileSize -> Seq("400", "500", "600"),
    OptimizeTargetFileSize -> Seq("1mb", "2mb", "3mb"), OptimizeMaxThreads -> Seq("2", "3", "4"),
    OptimizeMaxCommits -> Seq("5", "6", "7"), ClusteringMinCubeSize -> Seq("1g", "2g", "3g"),
    ClusteringTargetCubeSize -> Seq("4g", "5g", "6g"), OptimizeBatchSize -> Seq("7g", "8g", "9g"))
  /** Resolved as a pair, not one by one (see the transaction tests). */
  private val pairs = Set[WriteSetting[_]](TxnAppId, TxnVersion)

  test("every setting resolves by one rule: write option > session conf > table property > default") {
    assert(WriteSettings.all.filterNot(pairs).toSet == samples.keySet, "a sample for each setting")
    WriteSettings.all.filterNot(pairs).foreach { s =>
      val entry = s.entries.headOption.getOrElse(CatalogWrite)
      val sources = Seq(s.option.map(WriteOption), s.sessions.map(SessionConf), s.property.map(TableProperty)).flatten
      assert(sources.nonEmpty, s"$s has no source")
      // Every combination of sources set: the first in precedence order wins, with its own value.
      (1 until (1 << sources.size)).foreach { mask =>
        val set = sources.indices.filter(i => (mask & (1 << i)) != 0)
        def of(f: PartialFunction[SettingSource, String]) = set.flatMap(i => f.lift(sources(i)).map(_ -> samples(s)(i)))
          .toMap
        val c = conf(of { case WriteOption(k) => k }, entry, of { case SessionConf(k) => k },
          of { case TableProperty(k) => k })
        val winner = sources(set.head)
        assert(c.resolved(s).map(_._1).contains(winner), s"$s with ${set.map(sources)}")
        assert(c(s) == WriteConf.parse(s, winner, samples(s)(set.head)), s"$s with ${set.map(sources)}")
      }
      assert(conf(entry = entry).resolved(s).isEmpty && conf(entry = entry)(s) == s.default, s"$s: its default")
    }
  }

  test("delta-spark's session confs are read when Strata's own are not set, and named when invalid") {
    val moved = WriteSettings.all.filter(_.sessions.exists(_.startsWith(DeltaConf)))
    assert(Set[WriteSetting[_]](OptimizeWrite, AutoCompact, AutoCompactMinNumFiles, OptimizeBatchSize,
      OptimizeMaxThreads, ClusteringMinCubeSize, MergeSchema).subsetOf(moved.toSet))
    val internal = WriteConf.internal(Map("spark.databricks.delta.optimize.batchSize" -> "10g",
      "spark.databricks.delta.optimize.maxThreads" -> "3", "spark.strata.optimize.maxThreads" -> "5",
      "spark.databricks.delta.autoCompact.enabled" -> "true",
      "spark.databricks.delta.autoCompact.minNumFiles" -> "7").get, Map("delta.autoOptimize.autoCompact" -> "false"))
    assert(internal(OptimizeBatchSize) == 10L << 30)
    assert(internal(OptimizeMaxThreads) == 5, "Strata's conf before delta-spark's")
    assert(internal(AutoCompact), "delta-spark's session conf before the table property, as there")
    assert(internal(AutoCompactMinNumFiles) == 7)
    assert(conf(session = Map("spark.databricks.delta.optimizeWrite.enabled" -> "true")).optimizeWrite)
    assert(!conf(Map("optimizeWrite" -> "false"), session = Map("spark.databricks.delta.optimizeWrite.enabled" ->
      "true")).optimizeWrite)
    assert(refused(conf(session = Map("spark.databricks.delta.optimizeWrite.enabled" -> "yes")).optimizeWrite) ==
      "session conf spark.databricks.delta.optimizeWrite.enabled has invalid value 'yes': it must be true or false.")
  }

  test("typed values and defaults") {
    val c = conf()
    assert(c.compression == "snappy" && c.maxRecordsPerFile.isEmpty && !c.optimizeWrite && !c.mergeSchema)
    assert(c.distributionMode(partitioned = true) == DistributionMode.Hash)
    assert(c.distributionMode(partitioned = false) == DistributionMode.None)
    assert(c.targetFileSizeBytes == 128L * 1024 * 1024 && c.maxOpenFiles == 100 && c.maxInlineVectorBytes == 0)
    assert(c.numIndexedColumns == 32 && c.appTransaction.isEmpty && c.partitionColumns.isEmpty)
    assert(conf(Map("compression" -> "NONE")).compression == "uncompressed")
    assert(conf(Map("maxRecordsPerFile" -> "0")).maxRecordsPerFile.isEmpty)
    assert(conf(Map("__partition_columns" -> "[\"a\",\"b\"]")).partitionColumns.contains(Seq("a", "b")))
    assert(conf(properties = Map("delta.dataSkippingNumIndexedCols" -> "-1")).numIndexedColumns == Int.MaxValue)
    assert(conf(session = Map("spark.sql.sources.partitionOverwriteMode" -> "DYNAMIC")).dynamicPartitionOverwrite)
    val optionStatic = conf(Map("partitionOverwriteMode" -> "static"),
      session = Map("spark.sql.sources.partitionOverwriteMode" -> "DYNAMIC"))
    assert(!optionStatic.dynamicPartitionOverwrite && optionStatic.givenAsOption(PartitionOverwriteMode))
    assert(conf().withPartitionColumns(Seq("p")).partitionColumns.contains(Seq("p")))
    assert(WriteConf.internal(_ => None, Map("delta.targetFileSize" -> "64 MiB"))(OptimizeTargetFileSize) == 64L << 20)
  }

  test("unknown options are refused with the closest known name and the options this write takes") {
    assert(refused(conf(Map("compresion" -> "zstd"))) == "Unknown option 'compresion'. Did you mean " +
      "'compression'? Known options: path, compression, maxRecordsPerFile, userMetadata, txnAppId, txnVersion, " +
      "replaceWhere, partitionOverwriteMode, mergeSchema, overwriteSchema, optimizeWrite.")
    assert(refused(conf(Map("write.distribution-mod" -> "hash"), CatalogWrite)) == "Unknown option " +
      "'write.distribution-mod'. Did you mean 'write.distribution-mode'? Known options: path, compression, " +
      "maxRecordsPerFile, userMetadata, txnAppId, txnVersion, mergeSchema, overwriteSchema, optimizeWrite, " +
      "write.distribution-mode, write.fanout.max-open-files, write.target-file-size-bytes.")
    assert(refused(conf(Map("DataChange" -> "false"))) ==
      "Option 'dataChange' is not supported by this version of Strata yet; nothing was written.")
    // Keys are matched without case, as Spark passes them; Spark's stream writer options reach streams only.
    assert(conf(Map("COMPRESSION" -> "zstd")).compression == "zstd")
    assert(conf(Map("checkpointLocation" -> "/c", "txnAppId" -> "a"), PathStream).forMicroBatch("q", 1)
      .appTransaction.contains("a" -> 1L))
    assert(refused(conf(Map("checkpointLocation" -> "/c"))).startsWith("Unknown option 'checkpointLocation'."))
    // The inline deletion vector size is a session conf or table property only.
    assert(refused(conf(Map("write.deletion-vector.inline-max-bytes" -> "1"), CatalogWrite))
      .startsWith("Unknown option 'write.deletion-vector.inline-max-bytes'."))
    assert(conditionOf(conf(Map("compresion" -> "zstd"))) == "STRATA_UNKNOWN_OPTION")
    assert(conditionOf(conf(Map("DataChange" -> "false"))) == "STRATA_UNSUPPORTED_OPTION")
  }

  test("an option another kind of write takes is refused saying where it belongs") {
    val catalogOnly = "Option 'write.target-file-size-bytes' applies to catalog table writes (writeTo / INSERT), " +
      "where Spark distributes rows for the writer; path writes do not take it."
    assert(refused(conf(Map("write.target-file-size-bytes" -> "1"))) == catalogOnly)
    assert(refused(conf(Map("write.target-file-size-bytes" -> "1"), PathStream)) == catalogOnly)
    assert(conf(Map("write.target-file-size-bytes" -> "1"), CatalogStream).targetFileSizeBytes == 1L)
    Seq("replaceWhere" -> "d = 1", "partitionOverwriteMode" -> "dynamic").foreach { o =>
      assert(refused(conf(Map(o), CatalogWrite)) == "Options replaceWhere and partitionOverwriteMode belong to " +
        "path writes; for catalog tables use INSERT OVERWRITE ... PARTITION, overwrite(condition) or " +
        "overwritePartitions().")
    }
    Seq(PathWrite -> "write.target-file-size-bytes", CatalogWrite -> "replaceWhere", PathStream -> "txnVersion",
      CatalogStream -> "overwriteSchema").foreach { case (entry, k) =>
      assert(conditionOf(conf(Map(k -> "1"), entry)) == "STRATA_UNSUPPORTED_OPTION", entry)
    }
    Seq(PathStream, CatalogStream).foreach { entry =>
      assert(refused(conf(Map("txnAppId" -> "a", "txnVersion" -> "1"), entry)) == "Option txnVersion does not " +
        "apply to streaming writes: each micro-batch commits with its batch id as the version. Give txnAppId alone " +
        "to name the application across checkpoints.")
      Seq("replaceWhere", "partitionOverwriteMode", "overwriteSchema").foreach { k =>
        assert(refused(conf(Map(k -> "true"), entry)) == s"Option '$k' does not apply to streaming writes: output " +
          "mode 'append' adds each micro-batch's rows, 'complete' replaces all rows of the table with them.", entry)
      }
    }
  }

  test("the application transaction: both halves from one source, the write's before the session's") {
    val session = Map("spark.strata.txnAppId" -> "sql", "spark.strata.txnVersion" -> "7")
    assert(conf(Map("txnAppId" -> "job", "txnVersion" -> "3")).appTransaction.contains("job" -> 3L))
    assert(conf(session = session).appTransaction.contains("sql" -> 7L))
    assert(conf(Map("txnAppId" -> "job", "txnVersion" -> "0"), session = session).appTransaction.contains("job" -> 0L))
    assert(conf(session = session, entry = CatalogWrite).appTransaction.contains("sql" -> 7L))
    Seq(Map("txnAppId" -> "job"), Map("txnVersion" -> "3")).foreach { o =>
      assert(refused(conf(o, session = session)) == "Options txnAppId and txnVersion go together: set both (an " +
        "application id and its monotonically increasing version) or neither.")
    }
    Seq(Map("spark.strata.txnAppId" -> "sql"), Map("spark.strata.txnVersion" -> "7"),
      Map("spark.strata.txnAppId" -> " ", "spark.strata.txnVersion" -> "7")).foreach { s =>
      assert(refused(conf(session = s)) == "Session confs spark.strata.txnAppId and spark.strata.txnVersion go " +
        "together: set both (a non-empty application id and its increasing version) or neither.")
    }
    assert(conditionOf(conf(Map("txnAppId" -> "job"))) == "STRATA_CONFLICTING_OPTIONS")
    assert(conditionOf(conf(session = Map("spark.strata.txnAppId" -> "sql"))) == "STRATA_CONFLICTING_OPTIONS")
    assert(refused(conf(session = session + ("spark.strata.txnVersion" -> "x"))) == "session conf " +
      "spark.strata.txnVersion has invalid value 'x': it must be a whole number >= 0.")
    assert(refused(conf(Map("txnAppId" -> "a", "txnVersion" -> "-1"))) ==
      "Option 'txnVersion' has invalid value '-1': it must be a whole number >= 0.")
    assert(refused(conf(Map("txnAppId" -> " "), PathStream)) ==
      "Option 'txnAppId' has invalid value ' ': it must be a non-empty application id.")
    // delta-spark's pair of session confs, read when Strata's pair is not set; each pair is whole on its own.
    val delta = Map("spark.databricks.delta.write.txnAppId" -> "moved",
      "spark.databricks.delta.write.txnVersion" -> "9")
    assert(conf(session = delta).appTransaction.contains("moved" -> 9L))
    assert(conf(session = delta, entry = CatalogWrite).appTransaction.contains("moved" -> 9L))
    assert(conf(session = delta ++ session).appTransaction.contains("sql" -> 7L))
    assert(refused(conf(session = delta - "spark.databricks.delta.write.txnVersion")) == "Session confs " +
      "spark.databricks.delta.write.txnAppId and spark.databricks.delta.write.txnVersion go together: set both (a " +
      "non-empty application id and its increasing version) or neither.")
    assert(refused(conf(session = delta + ("spark.databricks.delta.write.txnVersion" -> "-2"))) == "session conf " +
      "spark.databricks.delta.write.txnVersion has invalid value '-2': it must be a whole number >= 0.")
    // Streams: the query's id (or txnAppId) and the batch id; the session's confs are for batch SQL.
    val stream = conf(entry = CatalogStream, session = session)
    assert(stream.appTransaction.isEmpty)
    assert(stream.forMicroBatch("query-1", 4).appTransaction.contains("query-1" -> 4L))
    assert(conf(Map("txnAppId" -> "app"), PathStream, session).forMicroBatch("query-1", 5).appTransaction
      .contains("app" -> 5L))
  }

  test("an invalid value names where it came from: write option, session conf or table property") {
    assert(refused(conf(Map("compression" -> "brotli"))) == "Option 'compression' has invalid value 'brotli': it " +
      "must be one of snappy, zstd, gzip, lz4, lz4_raw, uncompressed, none.")
    assert(refused(conf(Map("optimizeWrite" -> "yes"))) ==
      "Option 'optimizeWrite' has invalid value 'yes': it must be true or false.")
    assert(refused(conf(Map("write.distribution-mode" -> "random"), CatalogWrite)) == "write option " +
      "write.distribution-mode has invalid value 'random': it must be one of none, hash, range.")
    assert(refused(conf(session = Map("spark.strata.write.target-file-size-bytes" -> "big")).targetFileSizeBytes) ==
      "session conf spark.strata.write.target-file-size-bytes has invalid value 'big': it must be a whole number " +
        "of bytes > 0.")
    assert(refused(conf(properties = Map("write.fanout.max-open-files" -> "0")).maxOpenFiles) == "table property " +
      "write.fanout.max-open-files has invalid value '0': it must be a whole number > 0.")
    assert(refused(conf(properties = Map("delta.autoOptimize.optimizeWrite" -> "maybe")).optimizeWrite) ==
      "table property delta.autoOptimize.optimizeWrite has invalid value 'maybe': it must be true or false.")
    assert(refused(conf(session = Map("spark.strata.write.deletion-vector.inline-max-bytes" -> "5000"))
      .maxInlineVectorBytes) == "session conf spark.strata.write.deletion-vector.inline-max-bytes has invalid " +
      "value '5000': it must be a whole number of bytes from 0 to 4096.")
    assert(refused(WriteConf.internal(Map("spark.strata.autoCompact.maxFileSize" -> "many").get, Map.empty)(
      AutoCompactMaxFileSize)) == "session conf spark.strata.autoCompact.maxFileSize has invalid value 'many': it " +
      "must be a whole number > 0.")
    assert(refused(WriteConf.internal(_ => None, Map("delta.targetFileSize" -> "-1"))(OptimizeTargetFileSize)) ==
      "table property delta.targetFileSize has invalid value '-1': it must be a number of bytes > 0, optionally " +
      "with a unit (134217728, 128mb, 1g).")
    // The error condition says which kind of source it was, the parameters which one and what it must be.
    val byOption = intercept[InvalidTableOperationException](conf(Map("compression" -> "brotli")))
    assert(byOption.getCondition == "STRATA_INVALID_OPTION_VALUE")
    assert(byOption.messageParameters == Map("setting" -> "Option 'compression'", "value" -> "brotli",
      "allowed" -> "one of snappy, zstd, gzip, lz4, lz4_raw, uncompressed, none"))
    assert(conditionOf(conf(Map("write.distribution-mode" -> "random"), CatalogWrite)) == "STRATA_INVALID_OPTION_VALUE")
    assert(conditionOf(conf(session = Map("spark.strata.write.target-file-size-bytes" -> "big")).targetFileSizeBytes)
      == "STRATA_INVALID_CONF_VALUE")
    assert(conditionOf(conf(properties = Map("write.fanout.max-open-files" -> "0")).maxOpenFiles) ==
      "STRATA_INVALID_TABLE_PROPERTY_VALUE")
    assert(conditionOf(WriteConf.internal(_ => None, Map("delta.targetFileSize" -> "-1"))(OptimizeTargetFileSize)) ==
      "STRATA_INVALID_TABLE_PROPERTY_VALUE")
    // A session conf with a bad value fails only the writes that read it; an option fails before anything is written.
    assert(conf(session = Map("spark.strata.write.target-file-size-bytes" -> "big")).compression == "snappy")
    // Properties other engines set loosely are read leniently.
    assert(conf(properties = Map("delta.dataSkippingNumIndexedCols" -> "many")).numIndexedColumns == 32)
    assert(!WriteConf.internal(_ => None, Map("delta.autoOptimize.autoCompact" -> "maybe"))(AutoCompact))
  }

  test("a table property is never read before the write knows the table") {
    val e = intercept[IllegalStateException](WriteConf.forWrite(Map.empty, CatalogWrite, _ => None).maxOpenFiles)
    assert(e.getMessage.contains("before the write knew its table's properties"))
    assert(WriteConf.forWrite(Map("compression" -> "zstd"), PathWrite, _ => None).compression == "zstd")
  }

  test("README documents every key of every setting") {
    val readme = new String(Files.readAllBytes(Fixtures.repoRoot.resolve("README.md")), "UTF-8")
    val keys = WriteSettings.all.flatMap(s => s.option.toSeq ++ s.sessions ++ s.property).filterNot(_.startsWith("__"))
    val missing = keys.distinct.filterNot(k => readme.contains(s"`$k`"))
    assert(missing.isEmpty, s"not in README.md: ${missing.mkString(", ")}")
  }
}
