package io.strata.s3

import java.util.concurrent.ConcurrentLinkedQueue

import io.strata.log._
import io.strata.s3.FaultProxy._
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import scala.jdk.CollectionConverters._

/**
 * Commits through S3A to a real S3 server with a fault-injecting HTTP proxy in between: responses dropped after the
 * PUT landed, 409 ConditionalRequestConflict, 503 SlowDown, and a server that ignores If-None-Match. Whichever layer
 * retries (the AWS SDK, S3A, S3LogStore or the commit loop), the log must end with every commit exactly once.
 */
class S3FaultProxySuite extends AnyFunSuite with S3TestTables {
  override protected def serverAuthorization: Boolean = false // the strip test changes a signed header
  private var proxy: FaultProxy = _

  override def beforeAll(): Unit = { super.beforeAll(); proxy = FaultProxy.start(server.port) }
  override def afterAll(): Unit = try if (proxy != null) proxy.close() finally super.afterAll()

  private def viaProxy(key: String, p: FaultProxy = proxy): TableLog =
    TableLog.forPath(new Path(server.uri(key)), confVia(p.endpoint))

  private def commitKey(key: String, v: Long): String = f"$key/_delta_log/$v%020d.json"

  /** Appends one file in its own transaction; returns the transaction's id. */
  private def append(log: TableLog, file: String): String = {
    val txn = log.startTransaction()
    txn.commit(Seq(add(file)), Operation("WRITE"))
    txn.txnId
  }

  /**
   * The table's log, read straight from the server: versions 0..n with no gap, each transaction's commit exactly once
   * (by txnId) and each appended file exactly once.
   */
  private def assertLog(key: String, txnIds: Seq[String], files: Seq[String]): Unit = {
    val versions = logObjects(key).filter(_.endsWith(".json")).map(_.stripSuffix(".json").toLong)
    assert(versions == (0L until txnIds.size.toLong), s"contiguous versions, one per commit: $versions")
    val log = logOf(key)
    val commits = versions.map(v => log.readCommit(v))
    val ids = commits.flatMap(_.collect { case c: CommitInfo => c.json.get("txnId").asText })
    assert(ids.sorted == txnIds.sorted, "each transaction's commitInfo exactly once, no other commit")
    val added = commits.flatMap(_.collect { case a: AddFile => a.path })
    assert(added.sorted == files.sorted, "each appended file exactly once")
    assert(log.snapshot().files.map(_.path).sorted == files.sorted)
    assert(!logObjects(key).exists(_.startsWith(".")), s"no probe or temporary objects: ${logObjects(key)}")
  }

  test("a commit PUT that landed but whose response was dropped: the version holds it once, the next commit follows") {
    val key = freshKey("dropped")
    val log = viaProxy(key)
    val created = create(log)
    proxy.inject(DropResponse)
    val first = append(log, "a.parquet")
    assert(proxy.pending == 0)
    val puts = proxy.putsOf(commitKey(key, 1))
    assert(puts.head.fault.contains(DropResponse) && puts.head.status == 200 && puts.head.conditional,
      s"the first PUT of version 1 landed at the server and its answer was dropped: $puts")
    assert(puts.tail.forall(p => p.status == 412 && p.fault.isEmpty), s"any retry of it was refused (412): $puts")
    info(s"PUTs of version 1: ${puts.map(_.status).mkString(", ")}")
    val second = append(log, "b.parquet")
    assertLog(key, Seq(created, first, second), Seq("a.parquet", "b.parquet"))
  }

  test("409 ConditionalRequestConflict is retried; beyond the bound the commit fails and nothing is committed") {
    val key = freshKey("conflict")
    val log = viaProxy(key)
    val created = create(log)
    proxy.inject(Conflict409, Conflict409)
    val first = append(log, "a.parquet")
    val puts = proxy.putsOf(commitKey(key, 1))
    assert(puts.map(_.status) == Seq(409, 409, 200), s"two 409s, then the PUT created version 1: $puts")

    proxy.inject(Seq.fill(1000)(Conflict409): _*)
    val e = intercept[java.io.IOException](append(log, "c.parquet"))
    val answered = 1000 - proxy.pending
    proxy.clearFaults()
    assert(e.toString.contains("ConditionalRequestConflict") || Option(e.getCause).exists(_.toString.contains("409")), e.toString)
    assert(answered > S3LogStore.MaxConflictRetries && answered < 100, s"bounded retries: $answered PUTs answered 409")
    info(s"$answered PUTs answered 409, then: $e")
    assert(proxy.putsOf(commitKey(key, 2)).forall(_.status == 409), "no PUT of version 2 reached the server")
    assertLog(key, Seq(created, first), Seq("a.parquet"))
  }

  test("503 SlowDown is retried: the commit lands once") {
    val key = freshKey("slowdown")
    val log = viaProxy(key)
    val created = create(log)
    proxy.inject(SlowDown503, SlowDown503)
    val first = append(log, "a.parquet")
    assert(proxy.putsOf(commitKey(key, 1)).map(_.status) == Seq(503, 503, 200))
    assertLog(key, Seq(created, first), Seq("a.parquet"))
  }

  test("two writers racing while responses are dropped and PUTs answered 409 and 503: every commit exactly once") {
    val key = freshKey("race")
    create(viaProxy(key))
    val created = viaProxy(key).readCommit(0).collectFirst { case c: CommitInfo => c.json.get("txnId").asText }.get
    val faults = Seq.fill(3)(Seq(DropResponse, Conflict409, SlowDown503)).flatten
    proxy.inject(faults: _*)
    val (writers, perWriter) = (2, 8)
    val done = new ConcurrentLinkedQueue[(String, String)]()
    val race = ThreadRace(writers) { w =>
      val log = viaProxy(key) // each writer its own S3A client
      () => (1 to perWriter).foreach { i => val f = s"w$w-$i.parquet"; done.add((append(log, f), f)) }
    }
    assert(race.finished)
    assert(race.errors.isEmpty, race.errors.mkString("; "))
    assert(proxy.pending == 0, "every injected fault hit a commit PUT")
    val commitPuts = proxy.requests.filter(r => r.method == "PUT" && r.key.startsWith(s"$key/_delta_log/0"))
    assert(commitPuts.flatMap(_.fault).sortBy(_.toString) == faults.sortBy(_.toString)) // answered in any order
    info(s"${commitPuts.size} commit PUTs, ${commitPuts.count(_.status == 412)} answered 412")
    assertLog(key, created +: done.asScala.map(_._1).toSeq, done.asScala.map(_._2).toSeq)
  }

  test("a server that ignores If-None-Match: the probe refuses the first commit, nothing is written") {
    val ignoring = FaultProxy.start(server.port, ignoreConditionalWrites = true)
    try {
      val key = freshKey("ignores")
      val log = viaProxy(key, ignoring)
      val e = intercept[UnsafeLogStoreException](create(log))
      assert(e.getMessage.contains("ignored If-None-Match"), e.getMessage)
      assert(e.getMessage.contains(s"spark.hadoop.${LogStore.implKey("s3a")}"), e.getMessage)
      val probes = ignoring.requests.filter(r => r.method == "PUT" && r.key.contains("/_delta_log/.strata-probe-"))
      assert(probes.map(_.status) == Seq(200, 200) && probes.map(_.key).distinct.size == 1,
        s"the probe created one object twice, the server accepted both: $probes")
      assert(ignoring.putsOf(commitKey(key, 0)).isEmpty, "no commit was attempted")
      assert(logObjects(key).isEmpty, s"nothing written, the probe object deleted: ${logObjects(key)}")
      assert(intercept[UnsafeLogStoreException](create(viaProxy(key, ignoring))).getMessage.contains("If-None-Match"),
        "refused again: only a passed probe is remembered")
      // The same table through an endpoint that honours conditional writes commits.
      val created = create(viaProxy(key))
      assertLog(key, Seq(created), Nil)
    } finally ignoring.close()
  }

  test("the probe runs once per JVM for a bucket and endpoint; its second PUT is refused by the server (412)") {
    val fresh = FaultProxy.start(server.port) // a new endpoint, not probed yet
    try {
      val (k1, k2) = (freshKey("probe"), freshKey("probe"))
      val t1 = create(viaProxy(k1, fresh))
      val t2 = create(viaProxy(k2, fresh))
      val probes = fresh.requests.filter(r => r.method == "PUT" && r.key.contains(".strata-probe-"))
      assert(probes.map(p => (p.status, p.conditional)) == Seq((200, true), (412, true)), probes)
      assert(probes.forall(_.key.startsWith(s"$k1/_delta_log/")), "probed under the first table's log only")
      val probeRequests = fresh.requests.takeWhile(r => !r.key.endsWith(".json"))
      info(s"requests before the first commit PUT: ${probeRequests.map(r => s"${r.method} ${r.key} ${r.status}").mkString("; ")}")
      assertLog(k1, Seq(t1), Nil)
      assertLog(k2, Seq(t2), Nil)
    } finally fresh.close()
  }
}
