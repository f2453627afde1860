package io.strata.log

import org.scalatest.funsuite.AnyFunSuite

/**
 * Metadata domains (PROTOCOL.md, "Domain Metadata"): kept through commits and checkpoints, a removed domain's tombstone
 * hides it, two transactions writing one domain conflict, and writing one needs the `domainMetadata` writer feature.
 * The races are deterministic: both transactions read the same version, one commits, then the other tries.
 */
class DomainMetadataSuite extends AnyFunSuite with LogTestSupport {
  private val WithDomains = Protocol(1, 7, None, Some(Set(DomainWrites.Feature)))

  private def tableWithDomains(name: String): (java.nio.file.Path, TableLog) = {
    val table = tempDir(name)
    val log = TableLog.forPath(hpath(table), newConf())
    val txn = log.startTransaction()
    txn.updateMetadata(metadata())
    txn.requireProtocol(WithDomains)
    txn.commit(Nil, Operation("CREATE TABLE"))
    (table, log)
  }

  private def setDomain(txn: Transaction, name: String, conf: String, removed: Boolean = false): CommitResult =
    txn.commit(Seq(DomainMetadata(name, conf, removed)), Operation("SET DOMAIN"))

  test("domains are kept across commits and checkpoints; a removed one is a tombstone that hides it") {
    val (table, log) = tableWithDomains("domains-replay")
    setDomain(log.startTransaction(), "app.a", """{"k":1}""")
    setDomain(log.startTransaction(), "app.b", """{"k":2}""")
    append(log, add("f1.parquet"))
    setDomain(log.startTransaction(), "app.a", """{"k":3}""")
    assert(log.snapshot().activeDomains.map { case (k, d) => k -> d.configuration } ==
      Map("app.a" -> """{"k":3}""", "app.b" -> """{"k":2}"""))
    // Removed: the tombstone carries the pre-image (PROTOCOL.md: writers should preserve it).
    setDomain(log.startTransaction(), "app.b", """{"k":2}""", removed = true)
    assert(log.snapshot().domainConfiguration("app.b").isEmpty)
    assert(log.snapshot().domains("app.b").removed, "the tombstone stays in the state for replay")
    log.checkpoint(log.snapshot())
    // A fresh JVM view: from the checkpoint only (tombstones are not written there), then one more commit.
    val cpActions = Checkpoints.read(hpath(checkpointFile(table, 5)), newConf()).toSeq
    assert(cpActions.collect { case d: DomainMetadata => d.domain }.toSet == Set("app.a"))
    setDomain(log.startTransaction(), "app.c", "c")
    SnapshotCache.invalidate(hpath(table).toString)
    val reloaded = TableLog.forPath(hpath(table), newConf()).snapshot()
    assert(reloaded.segment.checkpointVersion.contains(5L))
    assert(reloaded.activeDomains.map { case (k, d) => k -> d.configuration } ==
      Map("app.a" -> """{"k":3}""", "app.c" -> "c"))
    assert(reloaded.files.map(_.path) == Seq("f1.parquet"), "domains do not disturb the files")
    // Time travel sees the domains of its version.
    assert(log.snapshotAt(2).activeDomains.keySet == Set("app.a", "app.b"))
  }

  test("two transactions writing the same domain: the later one fails with a typed conflict and writes nothing") {
    val (table, log) = tableWithDomains("domains-race")
    val first = log.startTransaction()
    val second = log.startTransaction()
    assert(setDomain(first, "app.x", "one").version == 1L)
    val e = intercept[ConcurrentDomainMetadataException](setDomain(second, "app.x", "two"))
    assert(e.winningVersion == 1L && e.getMessage.contains("metadata domain 'app.x'"), e.getMessage)
    assert(latestVersion(table) == 1L)
    assert(log.snapshot().domainConfiguration("app.x").contains("one"))
  }

  test("removing a domain races a write of it: conflict; different domains and plain appends commit on top") {
    val (table, log) = tableWithDomains("domains-disjoint")
    setDomain(log.startTransaction(), "app.x", "x0")
    val remover = log.startTransaction()
    val writer = log.startTransaction()
    val other = log.startTransaction()
    val appender = log.startTransaction()
    assert(setDomain(remover, "app.x", "x0", removed = true).version == 2L)
    val e = intercept[ConcurrentDomainMetadataException](setDomain(writer, "app.x", "x1"))
    assert(e.getMessage.contains("(removed it)"), e.getMessage)
    assert(setDomain(other, "app.y", "y").version == 3L, "another domain does not conflict")
    assert(appender.commit(Seq(add("a.parquet")), Operation("WRITE")).version == 4L, "nor does a blind append")
    assert(latestVersion(table) == 4L)
    assert(log.snapshot().activeDomains.keySet == Set("app.y"))
  }

  test("writing a domain needs the domainMetadata writer feature, once per commit, never a delta. domain") {
    val plain = createTable(tempDir("domains-plain"))
    val e = intercept[UnsupportedProtocolException](setDomain(plain.startTransaction(), "app.a", "v"))
    assert(e.getMessage.contains("domainMetadata") && e.getMessage.contains("delta.feature.domainMetadata"), e.getMessage)
    val (_, log) = tableWithDomains("domains-rules")
    val twice = intercept[IllegalArgumentException](log.startTransaction().commit(
      Seq(DomainMetadata("app.a", "1", removed = false), DomainMetadata("app.a", "2", removed = false)), Operation("X")))
    assert(twice.getMessage.contains("appears twice"))
    val system = intercept[IllegalArgumentException](setDomain(log.startTransaction(), "delta.rowTracking", "{}"))
    assert(system.getMessage.contains("system-controlled"))
    // The clustering domain is Strata's to write, but only on a protocol with the clustering feature.
    val clustering = intercept[UnsupportedProtocolException](setDomain(log.startTransaction(), Clustering.Domain,
      Clustering.encode(Seq(Seq("a")))))
    assert(clustering.getMessage.contains("writer feature clustering"), clustering.getMessage)
    assert(log.snapshot().version == 0L && log.snapshot().activeDomains.isEmpty)
  }

  test("a table with domains from another writer stays writable, and its domains survive Strata's commits") {
    val table = tempDir("domains-foreign")
    writeCommit(table, 0, Seq(Protocol(3, 7, Some(Set("timestampNtz")), Some(Set("domainMetadata", "timestampNtz"))),
      metadata(), DomainMetadata("delta.rowTrackingLike", """{"x":1}""", removed = false)))
    val log = TableLog.forPath(hpath(table), newConf())
    append(log, add("a.parquet"))
    val s = log.snapshot()
    assert(s.version == 1L && s.domainConfiguration("delta.rowTrackingLike").contains("""{"x":1}"""))
  }

  test("the clustering domain's JSON: delta-spark's column paths, PROTOCOL.md's plain names, and back") {
    assert(Clustering.encode(Seq(Seq("a"), Seq("s", "x.y"))) == """{"clusteringColumns":[["a"],["s","x.y"]]}""")
    assert(Clustering.decode("""{"clusteringColumns":[["a"],["s","x.y"]]}""") == Seq(Seq("a"), Seq("s", "x.y")))
    assert(Clustering.decode("""{"clusteringColumns":["col-1","col-2"]}""") == Seq(Seq("col-1"), Seq("col-2")))
    assert(Clustering.decode("""{"clusteringColumns":[]}""").isEmpty)
    val add = AddFile("f.parquet", Map.empty, 1, 1, dataChange = false)
    val done = ActionCodec.parse(ActionCodec.serialize(Clustering.clustered(add, "cube-1", Seq("a", "s.b"), "hilbert")))
      .asInstanceOf[AddFile] // delta-spark's ZCube tags survive the log's JSON
    assert(Clustering.provider(done).contains("liquid") && Clustering.cube(done).contains(("cube-1", Seq("a", "s.b"))))
    assert(done.tags("ZCUBE_ZORDER_BY") == """["a","s.b"]""" && done.tags("ZCUBE_ZORDER_CURVE") == "hilbert")
    assert(Clustering.cube(add).isEmpty && Clustering.cube(add.copy(tags = Map("ZCUBE_ID" -> "x"))).isEmpty)
  }
}
