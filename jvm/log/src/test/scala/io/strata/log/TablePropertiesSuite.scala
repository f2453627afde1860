package io.strata.log

import org.scalatest.funsuite.AnyFunSuite

/** The `delta.*` table-property rules of [[TableProperties]], on their own and through a transaction. */
class TablePropertiesSuite extends AnyFunSuite with LogTestSupport {
  private def invalid(props: (String, String)*): String =
    intercept[InvalidTableOperationException](TableProperties.validate(props.toMap, "t")).getMessage
  private def unsupported(props: (String, String)*): String =
    intercept[UnsupportedProtocolException](TableProperties.validate(props.toMap, "t")).getMessage

  test("unknown delta.* keys are refused with the closest known name; other namespaces pass") {
    val e = invalid("delta.checkpointIntervl" -> "5")
    assert(e.contains("Unknown table property 'delta.checkpointIntervl'") && e.contains("'delta.checkpointInterval'"), e)
    assert(invalid("delta.fooBar" -> "1").contains("Unknown table property 'delta.fooBar'"))
    assert(invalid("delta.appendOnli" -> "true").contains("'delta.appendOnly'"))
    assert(invalid("delta.minReaderVersoin" -> "3").contains("'delta.minReaderVersion'"))
    val fine = Map("owner.team" -> "x", "strata.isolationLevel" -> "snapshot", "delta.constraints.pos" -> "id > 0")
    assert(TableProperties.validate(fine, "t") == fine)
  }

  test("known keys are matched case-insensitively and stored in their canonical spelling") {
    assert(TableProperties.validate(Map("delta.CHECKPOINTINTERVAL" -> "5", "DELTA.appendonly" -> "true"), "t") ==
      Map("delta.checkpointInterval" -> "5", "delta.appendOnly" -> "true"))
  }

  test("values are checked as delta-spark checks them") {
    assert(invalid("delta.appendOnly" -> "yes").contains("delta.appendOnly of t has invalid value 'yes': it must be true or false"))
    assert(invalid("delta.checkpointInterval" -> "0").contains("a positive whole number"))
    assert(invalid("delta.dataSkippingNumIndexedCols" -> "-2").contains(">= -1"))
    assert(invalid("delta.logRetentionDuration" -> "interval 1 month").contains("months and years are not accepted"))
    assert(invalid("delta.isolationLevel" -> "SnapshotIsolation").contains("Serializable"))
    TableProperties.validate(Map("delta.logRetentionDuration" -> "interval 30 days",
      "delta.deletedFileRetentionDuration" -> "1 week", "delta.dataSkippingNumIndexedCols" -> "-1",
      "delta.autoOptimize.autoCompact" -> "auto", "delta.checkpointPolicy" -> "classic"), "t")
  }

  test("properties that turn on a feature Strata cannot write are refused by name; turned off they pass") {
    Seq("delta.enableIcebergCompatV1" -> "Iceberg", "delta.enableIcebergCompatV2" -> "Iceberg",
      "delta.enableRowTracking" -> "row tracking",
      "delta.enableChangeDataFeed" -> "change data feed").foreach { case (key, what) =>
      val e = unsupported(key -> "true")
      assert(e.contains(key) && e.contains(what) && e.contains("cannot write"), e)
      assert(TableProperties.validate(Map(key -> "false"), "t") == Map(key -> "false"))
    }
    assert(unsupported("delta.universalFormat.enabledFormats" -> "iceberg").contains("UniForm"))
    assert(TableProperties.validate(Map("delta.columnMapping.mode" -> "name"), "t").nonEmpty)
    assert(invalid("delta.columnMapping.mode" -> "names").contains("none, name, id"))
    assert(invalid("delta.checkpointPolicy" -> "v3").contains("classic, v2"))
  }

  test("protocol properties: versions and features become a protocol request, checked against what Strata writes") {
    def req(props: (String, String)*) = TableProperties.protocolRequest(props.toMap, "t")
    assert(req("delta.minReaderVersion" -> "3", "delta.minWriterVersion" -> "7") ==
      Some(Protocol(3, 7, Some(Set.empty), Some(Set.empty))))
    assert(req("delta.feature.appendOnly" -> "supported") == Some(Protocol(1, 7, None, Some(Set("appendOnly")))))
    assert(req("delta.feature.TIMESTAMPNTZ" -> "enabled") ==
      Some(Protocol(3, 7, Some(Set("timestampNtz")), Some(Set("timestampNtz")))))
    assert(req("delta.minWriterVersion" -> "3") == Some(Protocol(1, 3)))
    assert(req("delta.appendOnly" -> "true").isEmpty)
    def err(props: (String, String)*) = intercept[StrataException](req(props: _*)).getMessage
    assert(err("delta.feature.rowTracking" -> "supported").contains("table feature rowTracking, which Strata cannot write"))
    assert(req("delta.feature.deletionVectors" -> "supported") ==
      Some(Protocol(3, 7, Some(Set("deletionVectors")), Some(Set("deletionVectors")))))
    assert(err("delta.feature.fooBar" -> "supported").contains("unknown table feature 'fooBar'"))
    assert(err("delta.feature.checkConstraint" -> "supported").contains("Did you mean 'checkConstraints'?"))
    assert(err("delta.feature.appendOnly" -> "disabled").contains("it must be 'supported'"))
    assert(err("delta.minReaderVersion" -> "4").contains("must be one of 1, 2, 3"))
    assert(err("delta.minWriterVersion" -> "seven").contains("must be one of 1, 2, 3, 4, 5, 6, 7"))
    assert(req("delta.minWriterVersion" -> "5") == Some(Protocol(1, 4))) // no more than writer 4 without reader 2
    // Legacy versions stand for their features (reader 2: column mapping; writer 4 / 6: features a table may support
    // without using them), as delta-spark takes them.
    assert(req("delta.minReaderVersion" -> "2", "delta.minWriterVersion" -> "5") == Some(Protocol(2, 5)))
    assert(req("delta.minWriterVersion" -> "4") == Some(Protocol(1, 4)))
    // Reader 2 without writer 5 implies nothing more than (1, 2): delta-spark normalizes it so.
    assert(req("delta.minReaderVersion" -> "2", "delta.minWriterVersion" -> "2") == Some(Protocol(1, 2)))
    assert(req("delta.feature.columnMapping" -> "supported") ==
      Some(Protocol(2, 7, None, Some(Set("columnMapping")))))
    assert(req("delta.feature.changeDataFeed" -> "supported") ==
      Some(Protocol(1, 7, None, Some(Set("changeDataFeed")))))
    assert(err("delta.minReaderVersion" -> "3").contains("'delta.minWriterVersion'='7'"))
    // on a writer-7 table the reader version alone is enough; a lower writer version there is no request to refuse
    val features = Some(Protocol(1, 7, None, Some(Set("appendOnly"))))
    assert(TableProperties.protocolRequest(Map("delta.minReaderVersion" -> "3"), "t", features) ==
      Some(Protocol(3, 7, Some(Set.empty), Some(Set.empty))))
    assert(TableProperties.protocolRequest(Map("delta.minWriterVersion" -> "3"), "t", features) == Some(Protocol(1, 3)))
  }

  test("CREATE with minReaderVersion 3 / minWriterVersion 7: the protocol action says so, the metadata does not") {
    val table = tempDir()
    val log = TableLog.forPath(hpath(table), newConf())
    val txn = log.startTransaction()
    val conf = TableProperties.applyTo(txn, Map("delta.minReaderVersion" -> "3", "delta.minWriterVersion" -> "7",
      "delta.appendOnly" -> "true", "comment.x" -> "y"), "t")
    assert(conf == Map("delta.appendOnly" -> "true", "comment.x" -> "y"))
    txn.updateMetadata(metadata(configuration = conf))
    txn.commit(Nil, Operation("CREATE TABLE"))
    val protocol = actionsOf(deltaFile(table, 0)).collectFirst { case p: Protocol => p }
    assert(protocol == Some(Protocol(3, 7, Some(Set.empty), Some(Set("appendOnly", "invariants")))))
    assert(log.snapshot().metadata.configuration == conf)
    ProtocolSupport.checkWritable(log.snapshot().protocol, log.snapshot().metadata, "t")
  }

  test("on an existing table: upgrades in the metadata commit, asking for less is a no-op, unknown keys refused") {
    val table = tempDir()
    val log = createTable(table)
    def alter(props: (String, String)*): CommitResult = {
      val txn = log.startTransaction()
      val stored = TableProperties.applyTo(txn, props.toMap, "t")
      txn.updateMetadata(log.snapshot().metadata.copy(configuration = log.snapshot().metadata.configuration ++ stored))
      txn.commit(Nil, Operation("ALTER TABLE"))
    }
    val v1 = alter("delta.feature.checkConstraints" -> "supported").version
    assert(actionsOf(deltaFile(table, v1)).collect { case p: Protocol => p } ==
      Seq(Protocol(1, 7, None, Some(Set("appendOnly", "invariants", "checkConstraints")))))
    // lower versions than the table has: nothing changes, no protocol action
    val v2 = alter("delta.minWriterVersion" -> "2", "delta.minReaderVersion" -> "1").version
    assert(!actionsOf(deltaFile(table, v2)).exists(_.isInstanceOf[Protocol]))
    val v3 = alter("delta.feature.timestampNtz" -> "supported").version
    assert(log.snapshot().protocol == Protocol(3, 7, Some(Set("timestampNtz")),
      Some(Set("appendOnly", "invariants", "checkConstraints", "timestampNtz"))))
    assert(v3 == 3L && log.snapshot().metadata.configuration.isEmpty)
    val before = contentDigests(logDir(table))
    intercept[InvalidTableOperationException](alter("delta.fooBar" -> "1"))
    intercept[UnsupportedProtocolException](alter("delta.enableRowTracking" -> "true"))
    assert(contentDigests(logDir(table)) == before, "nothing was committed")
  }

  test("a table written by others with unknown delta.* keys stays readable and writable") {
    val table = tempDir()
    val log = createTable(table, metadata(configuration = Map("delta.someFutureKey" -> "x", "delta.fooBar" -> "1")))
    assert(append(log, add("a.parquet")).version == 1L)
    assert(log.snapshot().metadata.configuration.keySet == Set("delta.someFutureKey", "delta.fooBar"))
  }
}
