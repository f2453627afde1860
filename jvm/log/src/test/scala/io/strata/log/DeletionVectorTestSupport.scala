package io.strata.log

import java.lang.reflect.Method
import java.net.URLClassLoader
import java.nio.file.{Files, Path => JPath, Paths}

import scala.jdk.CollectionConverters._
import scala.util.Random

/** Golden deletion vectors, random row sets, and delta-spark's own deletion vector classes for comparison. */
object DeletionVectorTestSupport {
  /** delta-spark's golden tables with deletion vectors. */
  val GoldenTables: Seq[String] = Seq("dv-partitioned-with-checkpoint", "log-replay-dv-key-cases", "dv-with-columnmapping")

  def goldenTable(name: String): JPath = Fixtures.goldenTable(name)

  /** Every `deletionVector` descriptor (as JSON) in the table's JSON commits. */
  def goldenDescriptors(table: JPath): Seq[com.fasterxml.jackson.databind.JsonNode] =
    Files.list(table.resolve("_delta_log")).iterator.asScala.map(_.toString).filter(_.endsWith(".json")).toSeq.sorted
      .flatMap(f => Files.readAllLines(Paths.get(f)).asScala.filter(_.trim.nonEmpty).map(ActionCodec.mapper.readTree))
      .flatMap(n => Seq("add", "remove").flatMap(k => Option(n.get(k)))).flatMap(a => Option(a.get("deletionVector")))
      .filterNot(_.isNull)

  /** A stored vector in a deletion vector file: where its size field is, its data and the CRC that follows. */
  final case class StoredVector(file: JPath, offset: Int, data: Array[Byte], crc: Int)

  /** Every vector of a deletion vector file, walking it from the version byte to its end. */
  def storedVectors(file: JPath): Seq[StoredVector] = {
    val bytes = Files.readAllBytes(file)
    assert(bytes(0) == 1, s"$file: version ${bytes(0)}")
    val buf = java.nio.ByteBuffer.wrap(bytes)
    buf.get()
    Iterator.continually(buf).takeWhile(_.hasRemaining).map { b =>
      val offset = b.position()
      val data = new Array[Byte](b.getInt)
      b.get(data)
      StoredVector(file, offset, data, b.getInt)
    }.toVector
  }

  def dvFiles(table: JPath): Seq[JPath] = Files.walk(table).iterator.asScala
    .filter(p => p.getFileName.toString.matches("deletion_vector_.*\\.bin")).toSeq.sortBy(_.toString)

  /**
   * A random set of row indexes, of one of several shapes: empty, sparse, dense runs, dense random (bitmap
   * containers), across several high-32-bit keys up to 2^34, around 2^40.
   */
  def randomRows(r: Random): Set[Long] = {
    def runs(n: Int, from: Long, span: Long, maxLen: Int) = (0 until n).flatMap { _ =>
      val start = from + (r.nextDouble() * span).toLong
      start until start + 1 + r.nextInt(maxLen)
    }
    r.nextInt(9) match {
      case 0 => if (r.nextBoolean()) Set.empty else Set(r.nextLong(1L << 20))
      case 1 => Seq.fill(1 + r.nextInt(300))(r.nextLong(1L << 22)).toSet
      case 2 => runs(1 + r.nextInt(8), 0, 1L << 21, 6000).toSet
      case 3 => Seq.fill(3000 + r.nextInt(20000))(r.nextLong(1L << 16)).toSet
      case 4 => (runs(1 + r.nextInt(4), 0, 1L << 34, 3000) ++ Seq.fill(r.nextInt(200))(r.nextLong(1L << 33))).toSet
      case 5 => (runs(r.nextInt(3), (1L << 40) - (1L << 20), 1L << 21, 5000) ++
        Seq.fill(1 + r.nextInt(100))((1L << 40) - (1L << 16) + r.nextLong(1L << 17))).toSet
      case 6 => (0L until 65536L * (1 + r.nextInt(3))).filter(_ => r.nextInt(50) != 0).toSet
      case 7 => Set(0L, 1L, 2L).take(1 + r.nextInt(3)) ++ (if (r.nextBoolean()) Set(3L) else Set.empty)
      case _ => (Seq.fill(r.nextInt(50))(r.nextLong(1L << 33)) ++ runs(r.nextInt(3), 1L << 32, 1L << 20, 9000)).toSet
    }
  }

  /** A second set that sometimes overlaps `a`, sometimes not. */
  def otherRows(r: Random, a: Set[Long]): Set[Long] = r.nextInt(4) match {
    case 0 if a.nonEmpty => a.filter(_ => r.nextInt(20) == 0) ++ randomRows(r).take(50)
    case 1 if a.nonEmpty => Set(a.max + 1 + r.nextInt(3))
    case 2 => randomRows(r).filterNot(a)
    case _ => randomRows(r)
  }

  /**
   * delta-spark's deletion vector classes (RoaringBitmapArray, its Z85 codec), loaded from the delta-spark jar that
   * `make peer-jars` fetches into build/peers (used here only to compare bytes, never shipped).
   */
  object DeltaSpark {
    lazy val jar: JPath = Seq(Fixtures.peersDir).filter(Files.isDirectory(_))
      .flatMap(d => Files.list(d).iterator.asScala.filter(_.getFileName.toString.matches("delta-spark_.*\\.jar")))
      .headOption.map(_.toAbsolutePath).getOrElse(throw new AssertionError("No delta-spark jar in build/peers: " +
        "run `make peer-jars` (make test-jvm does)."))
    private lazy val loader = new URLClassLoader(Array(jar.toUri.toURL), getClass.getClassLoader)
    private lazy val arrayClass = loader.loadClass("org.apache.spark.sql.delta.deletionvectors.RoaringBitmapArray")
    private def method(c: Class[_], name: String): Method = c.getMethods.find(_.getName == name).get
    private def module(name: String): AnyRef = loader.loadClass(name).getField("MODULE$").get(null)
    private lazy val portable = {
      val formats = module("org.apache.spark.sql.delta.deletionvectors.RoaringBitmapArrayFormat$")
      method(formats.getClass, "Portable").invoke(formats)
    }
    private lazy val (addM, runOptimizeM, mergeM, serializeM, readFromM) = (method(arrayClass, "add"),
      method(arrayClass, "runOptimize"), method(arrayClass, "merge"), method(arrayClass, "serializeAsByteArray"),
      method(arrayModule.getClass, "readFrom"))
    private lazy val base85 = module("org.apache.spark.sql.delta.util.Codec$Base85Codec$")

    private def newArray(rows: Iterable[Long]): AnyRef = {
      val a = arrayClass.getConstructor().newInstance().asInstanceOf[AnyRef]
      rows.foreach(v => addM.invoke(a, Long.box(v)))
      a
    }
    private def serialize(a: AnyRef): Array[Byte] = serializeM.invoke(a, portable).asInstanceOf[Array[Byte]]
    private lazy val arrayModule = module("org.apache.spark.sql.delta.deletionvectors.RoaringBitmapArray$")
    private def readFrom(bytes: Array[Byte]): AnyRef = readFromM.invoke(arrayModule, bytes)

    /**
     * The data delta-spark's bitmap aggregate writes for a new vector: each part's rows added one by one (one part
     * per task), the parts serialized, read back and merged, then run-optimized and serialized.
     */
    def newVector(parts: Seq[Seq[Long]]): Array[Byte] = {
      val merged = newArray(Nil)
      parts.foreach(p => mergeM.invoke(merged, readFrom(serialize(newArray(p)))))
      runOptimizeM.invoke(merged)
      serialize(merged)
    }

    /** The data delta-spark writes when it adds a new vector's rows to a file's existing one (stored data). */
    def merged(existing: Array[Byte], added: Array[Byte]): Array[Byte] = {
      val e = readFrom(existing)
      mergeM.invoke(e, readFrom(added))
      serialize(e)
    }

    /** delta-spark's Z85 text of arbitrary bytes (padded to 4 bytes), as for inline vectors. */
    def encodeBytes(bytes: Array[Byte]): String =
      method(base85.getClass, "encodeBytes").invoke(base85, bytes).asInstanceOf[String]
  }
}
