package io.strata.s3

import java.nio.charset.StandardCharsets.UTF_8

import io.strata.log._
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.{BeforeAndAfterAll, Suite}

/** A suite's own s3proxy, and tables on it: created, committed to and read through Hadoop's real S3A client. */
trait S3TestTables extends BeforeAndAfterAll { self: Suite =>
  /** Whether the server checks request signatures (a proxy that changes signed headers needs it off). */
  protected def serverAuthorization: Boolean = true
  protected var server: S3Proxy = _

  override def beforeAll(): Unit = { super.beforeAll(); server = S3Proxy.start(serverAuthorization) }
  override def afterAll(): Unit = try if (server != null) server.close() finally super.afterAll()

  private var n = 0
  protected def freshKey(prefix: String): String = synchronized { n += 1; s"$prefix-$n" }
  protected def logOf(key: String, extra: (String, String)*): TableLog =
    TableLog.forPath(new Path(server.uri(key)), server.conf(extra: _*))

  protected def meta(conf: Map[String, String] = Map.empty): Metadata = Metadata(
    id = java.util.UUID.randomUUID().toString,
    schemaString = """{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}""",
    partitionColumns = Nil, configuration = conf, createdTime = Some(System.currentTimeMillis()))

  /** Creates the table (version 0); returns the transaction's id. */
  protected def create(log: TableLog, conf: Map[String, String] = Map.empty): String = {
    val txn = log.startTransaction()
    txn.updateMetadata(meta(conf))
    assert(txn.commit(Nil, Operation("CREATE TABLE")).version == 0L)
    txn.txnId
  }

  protected def add(path: String): AddFile = AddFile(path, Map.empty, 10L, System.currentTimeMillis(), dataChange = true)

  /** The object names under a table's `_delta_log`, listed straight from the server (no proxy). */
  protected def logObjects(key: String): Seq[String] = {
    val dir = new Path(server.uri(s"$key/_delta_log"))
    val fs = dir.getFileSystem(server.conf())
    try fs.listStatus(dir).map(_.getPath.getName).toSeq.sorted
    catch { case _: java.io.FileNotFoundException => Nil }
  }

  protected def objectText(key: String): String = {
    val path = new Path(server.uri(key))
    val in = path.getFileSystem(server.conf()).open(path)
    try new String(in.readAllBytes(), UTF_8) finally in.close()
  }

  /** S3A pointed at `endpoint` (a proxy in front of the server) instead of the server itself. */
  protected def confVia(endpoint: String, extra: (String, String)*): Configuration =
    server.conf((("fs.s3a.endpoint" -> endpoint) +: extra): _*)
}
