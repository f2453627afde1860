package io.strata.log

import org.scalatest.funsuite.AnyFunSuite

class ProtocolSupportSuite extends AnyFunSuite with LogTestSupport {

  private val NtzSchema =
    """{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},""" +
      """{"name":"t","type":"timestamp_ntz","nullable":true,"metadata":{}}]}"""

  test("a plain table needs reader 1 / writer 2") {
    assert(ProtocolSupport.minimumFor(metadata()) == Protocol(1, 2))
    assert(ProtocolSupport.minimumFor(metadata(partitionColumns = Seq("p"),
      configuration = Map("delta.appendOnly" -> "true", "delta.checkpointInterval" -> "5"))) == Protocol(1, 2))
  }

  test("timestamp_ntz needs reader 3 / writer 7 with the timestampNtz feature") {
    val p = ProtocolSupport.minimumFor(metadata(schema = NtzSchema))
    assert(p.minReaderVersion == 3 && p.minWriterVersion == 7)
    assert(p.readerFeatures.exists(_.contains("timestampNtz")))
    assert(p.writerFeatures.exists(_.contains("timestampNtz")))
    ProtocolSupport.checkReadable(p, "t")
    ProtocolSupport.checkWritable(p, metadata(schema = NtzSchema), "t")
    // a plain "timestamp" column does not
    assert(ProtocolSupport.minimumFor(metadata(schema = NtzSchema.replace("timestamp_ntz", "timestamp"))) == Protocol(1, 2))
  }

  test("adding a timestamp_ntz column upgrades a (1,2) table to (3,7), keeping the legacy writer features") {
    val up = ProtocolSupport.upgradeFor(Protocol(1, 2), metadata(schema = NtzSchema))
    assert(up == Protocol(3, 7, Some(Set("timestampNtz")), Some(Set("appendOnly", "invariants", "timestampNtz"))))
    assert(ProtocolSupport.upgradeFor(up, metadata(schema = NtzSchema)) == up, "no change when already enough")
    assert(ProtocolSupport.upgradeFor(up, metadata()) == up, "never downgrades")
  }

  test("a table through a Transaction: the protocol committed is the minimum one") {
    val table = tempDir()
    val log = createTable(table, metadata(schema = NtzSchema))
    assert(log.snapshot().protocol == Protocol(3, 7, Some(Set("timestampNtz")),
      Some(Set("appendOnly", "invariants", "timestampNtz"))))
    val plain = tempDir()
    assert(createTable(plain).snapshot().protocol == Protocol(1, 2))
  }

  test("delta.enableChangeDataFeed=true is rejected naming it") {
    val e = intercept[UnsupportedProtocolException](
      ProtocolSupport.minimumFor(metadata(configuration = Map("delta.enableChangeDataFeed" -> "true"))))
    assert(e.getMessage.contains("delta.enableChangeDataFeed"), e.getMessage)
    // "false" is fine
    assert(ProtocolSupport.minimumFor(metadata(configuration = Map("delta.enableChangeDataFeed" -> "false"))) ==
      Protocol(1, 2))
    // and no table is created with it
    val table = tempDir()
    val txn = TableLog.forPath(hpath(table), newConf()).startTransaction()
    txn.updateMetadata(metadata(configuration = Map("delta.enableChangeDataFeed" -> "TRUE")))
    val e2 = intercept[UnsupportedProtocolException](txn.commit(Nil, Operation("CREATE TABLE")))
    assert(e2.getMessage.contains("delta.enableChangeDataFeed"))
    assert(!java.nio.file.Files.exists(deltaFile(table, 0)))
  }

  test("delta.enableDeletionVectors asks for reader 3 / writer 7 with the deletionVectors feature") {
    assert(ProtocolSupport.minimumFor(metadata(configuration = Map("delta.enableDeletionVectors" -> "true"))) ==
      Protocol(3, 7, Some(Set("deletionVectors")), Some(Set("appendOnly", "invariants", "deletionVectors"))))
    assert(ProtocolSupport.minimumFor(metadata(configuration = Map("delta.enableDeletionVectors" -> "false"))) ==
      Protocol(1, 2))
  }

  test("delta.columnMapping.mode asks for reader 2 / writer 7 with columnMapping, as delta-spark 4.4 creates it") {
    val mapped = Map("delta.columnMapping.mode" -> "name")
    assert(ProtocolSupport.minimumFor(metadata(configuration = mapped)) ==
      Protocol(2, 7, None, Some(Set("appendOnly", "invariants", "columnMapping"))))
    // On a CHECK-constrained legacy table (writer 3): its features listed too (delta-spark's ALTER gives the same).
    assert(ProtocolSupport.upgradeFor(Protocol(1, 3), metadata(configuration = mapped +
      ("delta.constraints.pos" -> "id > 0"))) ==
      Protocol(2, 7, None, Some(Set("appendOnly", "invariants", "checkConstraints", "columnMapping"))))
    assert(ProtocolSupport.minimumFor(metadata(configuration = mapped + ("delta.enableDeletionVectors" -> "true"))) ==
      Protocol(3, 7, Some(Set("deletionVectors", "columnMapping")),
        Some(Set("appendOnly", "invariants", "deletionVectors", "columnMapping"))))
    // an upgrade of a table already at 3 / 7 lists the feature in both lists; of a legacy table, reader 2 / writer 5
    // (which implies every feature of writers 2 to 5, as delta-spark's merge lists them)
    val dv = Protocol(3, 7, Some(Set("deletionVectors")), Some(Set("appendOnly", "invariants", "deletionVectors")))
    assert(ProtocolSupport.merge(dv, Protocol(2, 5)) == Protocol(3, 7, Some(Set("deletionVectors", "columnMapping")),
      Some(Set("appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns",
        "deletionVectors", "columnMapping"))))
    assert(ProtocolSupport.merge(Protocol(1, 2), Protocol(2, 5)) == Protocol(2, 5))
    // A feature asked for by name: an existing legacy table that implies it keeps its form; a new table gets writer 7.
    assert(ProtocolSupport.merge(Protocol(1, 6), Protocol(1, 7, None, Some(Set("changeDataFeed")))) == Protocol(1, 6))
    assert(ProtocolSupport.merge(Protocol(1, 2), Protocol(1, 7, None, Some(Set("appendOnly"))), existing = false) ==
      Protocol(1, 7, None, Some(Set("appendOnly", "invariants"))))
    assert(ProtocolSupport.merge(Protocol(2, 5), Protocol(2, 5)) == Protocol(2, 5))
    ProtocolSupport.checkWritable(Protocol(2, 5), metadata(configuration = mapped), "tbl")
    // A metadata change on a mapped table already on features (typeWidening unset before its drop) adds no feature:
    // writer 5's implied checkConstraints is not needed (delta-spark's protocol after the drop lacks it too).
    val widened = Protocol(3, 7, Some(Set("columnMapping", "typeWidening")),
      Some(Set("appendOnly", "invariants", "columnMapping", "typeWidening")))
    assert(ProtocolSupport.upgradeFor(widened, metadata(configuration = mapped)) == widened)
    assert(ProtocolSupport.upgradeFor(widened, metadata(configuration = mapped + ("delta.constraints.pos" -> "id > 0"))) == widened.copy(
      writerFeatures = widened.writerFeatures.map(_ + "checkConstraints")))
  }

  test("appendOnly table: staging a RemoveFile with dataChange=true fails naming delta.appendOnly") {
    val table = tempDir()
    val log = createTable(table, metadata(configuration = Map("delta.appendOnly" -> "true")),
      Seq(add("a.parquet"), add("b.parquet")))
    val snap = log.snapshot()
    val a = snap.files.find(_.path == "a.parquet").get
    val before = contentDigests(logDir(table))
    val e = intercept[InvalidTableOperationException](
      log.startTransaction().commit(Seq(a.remove(System.currentTimeMillis())), Operation("DELETE")))
    assert(e.getMessage.contains("delta.appendOnly"), e.getMessage)
    assert(contentDigests(logDir(table)) == before, "nothing was committed")
    // appends are fine, and so is a rewrite that does not change data (dataChange=false, e.g. compaction)
    assert(append(log, add("c.parquet")).version == 1L)
    val b = log.snapshot().files.find(_.path == "b.parquet").get
    val r = log.startTransaction().commit(
      Seq(b.remove(System.currentTimeMillis(), dataChange = false), add("b2.parquet").copy(dataChange = false)),
      Operation("OPTIMIZE"))
    assert(r.version == 2L)
    assert(log.snapshot().files.map(_.path).toSet == Set("a.parquet", "c.parquet", "b2.parquet"))
  }

  test("checkReadable and checkWritable name the version or feature") {
    def readErr(p: Protocol) = intercept[UnsupportedProtocolException](ProtocolSupport.checkReadable(p, "tbl")).getMessage
    def writeErr(p: Protocol) =
      intercept[UnsupportedProtocolException](ProtocolSupport.checkWritable(p, metadata(), "tbl")).getMessage
    ProtocolSupport.checkReadable(Protocol(2, 5), "tbl") // column mapping: read by physical name or id
    assert(readErr(Protocol(4, 7)).contains("reader version 4"))
    assert(readErr(Protocol(3, 7, Some(Set("columnMapping", "futureFeatureB", "futureFeatureA")), Some(Set.empty)))
      .contains("futureFeatureA, futureFeatureB, which"))
    // Shredded variants: read (Spark's Parquet reader), never written.
    ProtocolSupport.checkReadable(Protocol(3, 7, Some(Set("variantType", "variantShredding-preview")), Some(Set.empty)),
      "tbl")
    assert(writeErr(Protocol(3, 7, Some(Set.empty), Some(Set("variantType", "variantShredding"))))
      .contains("variantShredding"))
    ProtocolSupport.checkWritable(Protocol(1, 5), metadata(), "tbl") // column mapping: written by physical name
    assert(writeErr(Protocol(3, 7, Some(Set.empty), Some(Set("rowTracking")))).contains("rowTracking"))
    assert(writeErr(Protocol(1, 7, None, Some(Set("futureWriterFeature")))).contains("futureWriterFeature"))
    assert(writeErr(Protocol(1, 8)).contains("writer version 8"))
    ProtocolSupport.checkReadable(Protocol(1, 1), "tbl")
    ProtocolSupport.checkWritable(Protocol(1, 1), metadata(), "tbl")
    ProtocolSupport.checkWritable(Protocol(1, 3), metadata(), "tbl")
    ProtocolSupport.checkWritable(Protocol(3, 7, Some(Set.empty), Some(Set("checkConstraints"))), metadata(), "tbl")
    ProtocolSupport.checkWritable(Protocol(3, 7, Some(Set("vacuumProtocolCheck")),
      Some(Set("vacuumProtocolCheck", "appendOnly", "invariants"))), metadata(), "tbl")
  }

  test("CHECK constraints need writer 3, or the checkConstraints feature beside other table features") {
    val constrained = Map("delta.constraints.pos" -> "id > 0")
    assert(ProtocolSupport.minimumFor(metadata(configuration = constrained)) == Protocol(1, 3))
    val ntz = metadata(configuration = constrained).copy(schemaString =
      """{"type":"struct","fields":[{"name":"t","type":"timestamp_ntz","nullable":true,"metadata":{}}]}""")
    assert(ProtocolSupport.minimumFor(ntz) == Protocol(3, 7, Some(Set("timestampNtz")),
      Some(Set("appendOnly", "invariants", "checkConstraints", "timestampNtz"))))
    // Upgrades: legacy to legacy, and a feature table gains the feature.
    assert(ProtocolSupport.upgradeFor(Protocol(1, 2), metadata(configuration = constrained)) == Protocol(1, 3))
    val features = Protocol(3, 7, Some(Set("timestampNtz")), Some(Set("appendOnly", "invariants", "timestampNtz")))
    assert(ProtocolSupport.upgradeFor(features, metadata(configuration = constrained)) ==
      Protocol(3, 7, Some(Set("timestampNtz")), Some(Set("appendOnly", "invariants", "timestampNtz", "checkConstraints"))))
    // Dropping the last constraint never downgrades.
    assert(ProtocolSupport.upgradeFor(Protocol(1, 3), metadata()) == Protocol(1, 3))
  }

  test("a table may support a feature it does not use: written as any other; once used, refused naming it") {
    def writable(p: Protocol, m: Metadata): Unit = ProtocolSupport.checkWritable(p, m, "tbl")
    def refused(p: Protocol, m: Metadata): String =
      intercept[UnsupportedProtocolException](ProtocolSupport.checkWritable(p, m, "tbl")).getMessage
    val generated = """{"type":"struct","fields":[{"name":"ts","type":"timestamp","nullable":true,"metadata":{}},""" +
      """{"name":"d","type":"date","nullable":true,"metadata":{"delta.generationExpression":"CAST(ts AS DATE)"}}]}"""
    val identity = """{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":""" +
      """{"delta.identity.start":1,"delta.identity.step":1,"delta.identity.allowExplicitInsert":false}}]}"""
    val cdf = metadata(configuration = Map("delta.enableChangeDataFeed" -> "true"))
    // Legacy writer 4 (change data feed, generated columns) and 6 (identity columns): supported, not used.
    Seq(Protocol(1, 4), Protocol(1, 6), Protocol(2, 6), Protocol(1, 7, None, Some(Set("changeDataFeed",
      "generatedColumns", "identityColumns", "allowColumnDefaults", "icebergCompatV1")))).foreach(writable(_, metadata()))
    Seq(Protocol(1, 4), Protocol(1, 7, None, Some(Set("changeDataFeed")))).foreach { p =>
      val e = refused(p, cdf)
      assert(e.contains("changeDataFeed") && e.contains("delta.enableChangeDataFeed"), e)
    }
    assert(refused(Protocol(1, 4), metadata(schema = generated)).contains("generatedColumns"))
    assert(refused(Protocol(1, 6), metadata(schema = identity)).contains("identityColumns"))
    // Another writer turned it on without upgrading the protocol: refused all the same.
    assert(refused(Protocol(1, 2), cdf).contains("changeDataFeed"))
    // Features Strata cannot write at all are refused whether used or not.
    assert(refused(Protocol(1, 7, None, Some(Set("rowTracking"))), metadata()).contains("rowTracking"))
    assert(refused(Protocol(3, 7, Some(Set("catalogManaged")), Some(Set("catalogManaged"))), metadata())
      .contains("catalogManaged"))
  }

  test("features are found in the parsed schema at any depth, never by a name that looks like a type") {
    def field(name: String, t: String) = s"""{"name":"$name","type":$t,"nullable":true,"metadata":{}}"""
    def schema(fields: String*) = fields.mkString("""{"type":"struct","fields":[""", ",", "]}")
    val nested = schema(field("a", """{"type":"array","elementType":{"type":"map","keyType":"string",""" +
      """"valueType":"timestamp_ntz","valueContainsNull":true},"containsNull":true}"""))
    assert(ProtocolSupport.minimumFor(metadata(schema = nested)).readerFeatures.exists(_("timestampNtz")))
    val variantInStruct = schema(field("s", """{"type":"struct","fields":[""" + field("v", "\"variant\"") + "]}"))
    assert(ProtocolSupport.minimumFor(metadata(schema = variantInStruct)).readerFeatures.exists(_("variantType")))
    // Columns named after a type or a metadata key, and a comment quoting one, use nothing.
    val lookalike = """{"type":"struct","fields":[{"name":"timestamp_ntz","type":"string","nullable":true,""" +
      """"metadata":{"comment":"\"delta.generationExpression\" \"variant\""}},""" +
      field("variant", "\"string\"") + "]}"
    assert(ProtocolSupport.minimumFor(metadata(schema = lookalike)) == Protocol(1, 2))
    val invariant = """{"type":"struct","fields":[{"name":"s","type":{"type":"struct","fields":[{"name":"x",""" +
      """"type":"integer","nullable":true,"metadata":{"delta.invariants":"{\"expression\":{\"expression\":""" +
      """\"x > 3\"}}"}}]},"nullable":true,"metadata":{}}]}"""
    val e = intercept[UnsupportedProtocolException](ProtocolSupport.minimumFor(metadata(schema = invariant)))
    assert(e.getMessage.contains("invariants"), e.getMessage)
  }
}
