package io.strata.s3

import java.io.File
import java.net.{InetSocketAddress, ServerSocket, Socket}
import java.nio.file.{Files, Path => JPath}

import org.apache.hadoop.conf.Configuration

/**
 * A local S3 server for tests: s3proxy (Maven Central, `make s3-test-jars` puts it in build/s3proxy), path-style,
 * on 127.0.0.1 at a free port, in a child JVM, with bucket `bucket`.
 *
 * The backend is `transient-nio2` (in memory): s3proxy 4.0.0's `filesystem-nio2` backend answers conditional PUTs
 * atomically too, but its LIST silently drops existing keys while other PUTs land (seen here: 167 of 200 listings
 * taken during 4 concurrent writers missed some of 60 untouched objects), which real S3 never does (LIST is strongly
 * consistent); the in-memory backend lists consistently and answers racing conditional PUTs with one winner.
 */
final class S3Proxy private (val port: Int, process: Process, dir: JPath) extends AutoCloseable {
  val bucket = "strata-test"
  val endpoint = s"http://127.0.0.1:$port"

  /** Creates a bucket through the AWS SDK (S3A does not create buckets). */
  def createBucket(name: String): Unit = {
    import software.amazon.awssdk.auth.credentials.{AwsBasicCredentials, StaticCredentialsProvider}
    import software.amazon.awssdk.regions.Region
    import software.amazon.awssdk.services.s3.S3Client
    import software.amazon.awssdk.services.s3.model.CreateBucketRequest
    val client = S3Client.builder().endpointOverride(java.net.URI.create(endpoint)).forcePathStyle(true)
      .region(Region.US_EAST_1)
      .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(S3Proxy.AccessKey, S3Proxy.SecretKey)))
      .build()
    try client.createBucket(CreateBucketRequest.builder().bucket(name).build()) finally client.close()
  }

  def uri(key: String): String = s"s3a://$bucket/$key"

  /** Hadoop settings for S3A against this server (a fresh FileSystem instance per Configuration for s3a:// and s3://: cache off). */
  def hadoopSettings: Map[String, String] = S3Proxy.hadoopSettings(endpoint)

  def conf(extra: (String, String)*): Configuration = {
    val c = new Configuration()
    (hadoopSettings ++ extra).foreach { case (k, v) => c.set(k, v) }
    c
  }

  override def close(): Unit = {
    process.destroy()
    if (!process.waitFor(20, java.util.concurrent.TimeUnit.SECONDS)) process.destroyForcibly().waitFor()
    io.strata.log.LogTestSupport.deleteRecursively(dir)
  }
}

object S3Proxy {
  val AccessKey = "strata-test-key"
  val SecretKey = "strata-test-secret"

  def hadoopSettings(endpoint: String): Map[String, String] = Map(
    "fs.s3a.endpoint" -> endpoint,
    "fs.s3a.endpoint.region" -> "us-east-1",
    "fs.s3a.path.style.access" -> "true",
    "fs.s3a.connection.ssl.enabled" -> "false",
    "fs.s3a.access.key" -> AccessKey,
    "fs.s3a.secret.key" -> SecretKey,
    "fs.s3a.aws.credentials.provider" -> "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
    "fs.s3a.impl.disable.cache" -> "true",
    "fs.s3.impl.disable.cache" -> "true",
    "fs.s3a.attempts.maximum" -> "2",
    "fs.s3a.retry.limit" -> "2",
    "fs.s3a.retry.interval" -> "50ms"
  )

  def jar: File = {
    val path = sys.env.getOrElse("STRATA_S3PROXY_JAR", "build/s3proxy/s3proxy-4.0.0-jar-with-dependencies.jar")
    val f = new File(path)
    require(f.isFile, s"s3proxy jar not found at ${f.getAbsolutePath}: run `make s3-test-jars` first")
    f
  }

  private def freePort(): Int = { val s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress); try s.getLocalPort finally s.close() }

  /**
   * `authorization = false` lets the server accept requests a proxy has changed after the client signed them (a
   * stripped `If-None-Match` header would no longer match the signature).
   */
  def start(authorization: Boolean = true): S3Proxy = {
    val dir = Files.createTempDirectory("s3proxy")
    val port = freePort()
    val props = dir.resolve("s3proxy.conf")
    Files.writeString(props,
      s"""s3proxy.endpoint=http://127.0.0.1:$port
         |s3proxy.authorization=${if (authorization) "aws-v2-or-v4" else "none"}
         |s3proxy.identity=$AccessKey
         |s3proxy.credential=$SecretKey
         |jclouds.provider=transient-nio2
         |""".stripMargin)
    val log = dir.resolve("s3proxy.log").toFile
    val javaBin = new File(System.getProperty("java.home"), "bin/java").getPath
    val p = new ProcessBuilder(javaBin, "-Xmx256m", "-XX:TieredStopAtLevel=1", "-jar", jar.getAbsolutePath,
      "--properties", props.toString).redirectErrorStream(true).redirectOutput(log).start()
    val deadline = System.currentTimeMillis() + 60000
    def listening: Boolean = try { val s = new Socket(); try { s.connect(new InetSocketAddress("127.0.0.1", port), 200); true } finally s.close() } catch { case _: java.io.IOException => false }
    while (!listening) {
      if (!p.isAlive || System.currentTimeMillis() > deadline) {
        p.destroyForcibly()
        throw new IllegalStateException(s"s3proxy did not start on port $port: ${Files.readString(log.toPath)}")
      }
      Thread.sleep(50)
    }
    val server = new S3Proxy(port, p, dir)
    try server.createBucket(server.bucket) catch { case e: Throwable => server.close(); throw e }
    server
  }
}
