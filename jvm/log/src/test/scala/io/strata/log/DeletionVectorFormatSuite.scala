package io.strata.log

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, ObjectInputStream, ObjectOutputStream}
import java.nio.file.{Files, Paths}

import io.strata.log.DeletionVectorTestSupport._
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import scala.util.Random

/**
 * The deletion vector codec, write side: the bytes Strata encodes are the ones delta-spark writes (its golden
 * tables, and its own RoaringBitmapArray on random row sets), Z85 both ways, and the set operations of
 * [[DeletedRows]] against plain Scala sets. Random tests print their seed in failure messages; replay one with
 * `sbt 'set jvm / Test / javaOptions += "-Dstrata.test.seed=<seed>"' "jvm/testOnly <suite>"` (tests run forked).
 */
class DeletionVectorFormatSuite extends AnyFunSuite {
  private val seed = sys.props.get("strata.test.seed").map(_.toLong).getOrElse(System.nanoTime())
  private def hex(b: Array[Byte]) = b.map(x => f"${x & 0xff}%02x").mkString

  test("every golden vector re-encodes to exactly its stored bytes, and Strata stores it as the same file") {
    val checked = GoldenTables.flatMap { name =>
      val table = goldenTable(name)
      val files = dvFiles(table)
      assert(files.nonEmpty, name)
      files.flatMap { file =>
        val vectors = storedVectors(file)
        vectors.foreach { v =>
          val rows = DeletionVectors.decode(v.data)
          assert(hex(rows.encode()) == hex(v.data), (file, v.offset))
          assert(DeletionVectors.crc(v.data) == v.crc, (file, v.offset))
          assert(hex(DeletedRows.of(rows.toSeq).encode()) == hex(v.data), (file, v.offset))
        }
        // The same row sets, stored by Strata in a file of its own: the same file, byte for byte.
        val dir = Files.createTempDirectory("dv-golden")
        val written = DeletionVectorStore.write(new Path(dir.toUri), new Configuration(),
          vectors.map(v => DeletedRows.of(DeletionVectors.decode(v.data).toSeq)))
        assert(written.map(_.offset.get) == vectors.map(_.offset))
        assert(written.map(_.sizeInBytes) == vectors.map(_.data.length))
        assert(hex(Files.readAllBytes(Paths.get(written.head.file(new Path(dir.toUri)).get.toUri))) ==
          hex(Files.readAllBytes(file)), file)
        vectors
      }
    }
    // Every descriptor in the logs points at one of the vectors checked, with its size and cardinality.
    val descriptors = GoldenTables.flatMap { name =>
      val table = goldenTable(name)
      goldenDescriptors(table).map(DeletionVectorDescriptor.parse).distinct.map { d =>
        val file = Paths.get(d.file(new Path(table.toUri)).get.toUri)
        val v = checked.find(v => v.file == file && v.offset == d.offset.get).getOrElse(fail(s"$d: no vector"))
        assert(v.data.length == d.sizeInBytes && DeletionVectors.decode(v.data).cardinality == d.cardinality, d)
        d
      }
    }
    assert(checked.size == 33 && descriptors.size >= 20, (checked.size, descriptors.size))
  }

  test("a golden descriptor prints back to the exact JSON delta-spark wrote (field order, offset)") {
    val nodes = GoldenTables.flatMap(n => goldenDescriptors(goldenTable(n)))
    assert(nodes.nonEmpty)
    nodes.foreach { n =>
      assert(ActionCodec.mapper.writeValueAsString(DeletionVectorDescriptor.parse(n).toJson) == n.toString)
    }
    val inline = DeletionVectorDescriptor("i", "abcde", None, 3, 2L)
    assert(ActionCodec.mapper.writeValueAsString(inline.toJson) ==
      """{"storageType":"i","pathOrInlineDv":"abcde","sizeInBytes":3,"cardinality":2}""")
    assert(DeletionVectorDescriptor.parse(inline.toJson) == inline)
  }

  test("Z85 encodes the ZeroMQ reference vector, refuses unaligned input, and round-trips random bytes") {
    val hello = Array(0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B).map(_.toByte)
    assert(Z85.encode(hello) == "HelloWorld" && Z85.decode("HelloWorld").sameElements(hello))
    assert(Z85.encode(Array.emptyByteArray) == "")
    assert(intercept[IllegalArgumentException](Z85.encode(new Array[Byte](5))).getMessage.contains("multiple of 4"))
    assert(Z85.encode(Array.fill(4)(0xff.toByte)) == "%nSc0" && Z85.encode(new Array[Byte](4)) == "00000")
    val r = new Random(seed)
    for (_ <- 1 to 500) {
      val bytes = Array.fill(4 * r.nextInt(40))(r.nextInt(256).toByte)
      val text = Z85.encode(bytes)
      withClue(s"seed $seed, ${hex(bytes)}: ") {
        assert(text.length == bytes.length / 4 * 5 && Z85.decode(text).sameElements(bytes))
        assert(Z85.encode(Z85.decode(text)) == text)
      }
      val odd = Array.fill(r.nextInt(40))(r.nextInt(256).toByte)
      val padded = Z85.encodePadded(odd)
      withClue(s"seed $seed, ${hex(odd)}: ") {
        assert(padded.length == (odd.length + 3) / 4 * 5 && Z85.decode(padded).take(odd.length).sameElements(odd))
        assert(Z85.decode(padded).drop(odd.length).forall(_ == 0))
      }
    }
  }

  test("a u descriptor's id is the Z85 text of its file's uuid") {
    GoldenTables.foreach { name =>
      val table = goldenTable(name)
      goldenDescriptors(table).map(DeletionVectorDescriptor.parse).foreach { d =>
        val uuid = java.util.UUID.fromString(d.file(new Path(table.toUri)).get.getName
          .stripPrefix("deletion_vector_").stripSuffix(".bin"))
        val bytes = java.nio.ByteBuffer.allocate(16).putLong(uuid.getMostSignificantBits)
          .putLong(uuid.getLeastSignificantBits).array()
        assert(Z85.encode(bytes) == d.pathOrInlineDv, d)
      }
    }
  }

  test("random row sets: encode/decode round trip, contains, cardinality, maxRowIndex, union, intersects") {
    val r = new Random(seed)
    for (round <- 1 to 150) {
      val a = randomRows(r)
      val b = otherRows(r, a)
      withClue(s"seed $seed, round $round (|a| = ${a.size}, |b| = ${b.size}): ") {
        val ra = DeletedRows.of(a)
        val rb = DeletedRows.fromSorted(b.toSeq.sorted.iterator)
        assert(ra.toSeq == a.toSeq.sorted && ra.cardinality == a.size && ra.isEmpty == a.isEmpty)
        assert(ra.maxRowIndex == (if (a.isEmpty) -1L else a.max))
        val probes = a.take(200) ++ b.take(200) ++ Seq.fill(200)(r.nextLong(1L << 41)) ++ a.take(50).map(_ + 1)
        probes.foreach(p => assert(ra.contains(p) == a.contains(p), p))
        assert(!ra.contains(-1L) && !ra.contains(Long.MaxValue))
        val bytes = ra.encode()
        val decoded = DeletionVectors.decode(bytes)
        assert(decoded == ra && decoded.toSeq == ra.toSeq && hex(decoded.encode()) == hex(bytes))
        assert(hex(DeletedRows.fromSorted(a.toSeq.sorted.iterator).encode()) == hex(bytes))
        val union = DeletionVectors.decode(bytes).union(rb)
        assert(union.toSeq == (a ++ b).toSeq.sorted && union.cardinality == (a ++ b).size)
        assert(union == DeletedRows.of(a ++ b) && union == rb.union(ra) && union.hashCode == DeletedRows.of(a ++ b).hashCode)
        assert(DeletionVectors.decode(union.encode()) == union)
        assert(ra.intersects(rb) == a.exists(b) && rb.intersects(ra) == a.exists(b))
        // Immutable: the union changed neither side.
        assert(ra.toSeq == a.toSeq.sorted && rb.toSeq == b.toSeq.sorted && hex(ra.encode()) == hex(bytes))
      }
    }
  }

  test("encoding: one bucket per key up to the largest (empty ones included), sparse beyond 2^48; Java-serializable") {
    def buckets(rows: DeletedRows) = java.nio.ByteBuffer.wrap(rows.encode()).order(java.nio.ByteOrder.LITTLE_ENDIAN)
      .getLong(4)
    assert(hex(DeletedRows.empty.encode()) == "d1d3396400000000" + "00000000" && DeletedRows.empty.maxRowIndex == -1)
    assert(buckets(DeletedRows.of(Seq(5L))) == 1 && buckets(DeletedRows.of(Seq(3L << 32))) == 4)
    assert(buckets(DeletedRows.of(Seq(1L << 40, 7L))) == 257)
    val far = DeletedRows.of(Seq(3L, 1L << 50, (1L << 62) + 9, Long.MaxValue))
    assert(buckets(far) == 4 &&
      DeletionVectors.decode(far.encode()).toSeq == Seq(3L, 1L << 50, (1L << 62) + 9, Long.MaxValue))
    assert(far.maxRowIndex == Long.MaxValue && far.contains(1L << 50) && !far.contains((1L << 50) + 1))
    assert(intercept[IllegalArgumentException](DeletedRows.of(Seq(1L, -2L))).getMessage.contains("negative"))
    assert(intercept[IllegalArgumentException](DeletedRows.fromSorted(Iterator(5L, 3L))).getMessage.contains("ascending"))
    val rows = DeletedRows.of((0L until 10000L) ++ Seq(1L << 33))
    val out = new ByteArrayOutputStream()
    new ObjectOutputStream(out).writeObject(rows)
    val back = new ObjectInputStream(new ByteArrayInputStream(out.toByteArray)).readObject().asInstanceOf[DeletedRows]
    assert(back == rows && back.cardinality == 10001 && hex(back.encode()) == hex(rows.encode()))
  }

  test("malformed vector data is refused with CorruptLogException") {
    val good = DeletedRows.of(Seq(1L, 2L, 1L << 32)).encode()
    def refused(bytes: Array[Byte]) = intercept[CorruptLogException](DeletionVectors.decode(bytes)).getMessage
    assert(refused(good.take(good.length - 3)).contains("malformed"))
    assert(refused(Array.fill(12)(0.toByte)).contains("magic"))
    val tooMany = good.clone(); tooMany(4) = 100
    assert(refused(tooMany).contains("claims"))
    val secondKey = 12 + 4 + org.roaringbitmap.RoaringBitmap.bitmapOf(1, 2).serializedSizeInBytes()
    val badKey = good.clone(); java.nio.ByteBuffer.wrap(badKey).order(java.nio.ByteOrder.LITTLE_ENDIAN).putInt(secondKey, 0)
    assert(refused(badKey).contains("not ascending"))
    val badCookie = good.clone(); badCookie(16) = 0
    assert(refused(badCookie).contains("malformed"))
  }

  test("delta-spark's own RoaringBitmapArray writes the same bytes: new vectors and vectors merged into existing ones") {
    val r = new Random(seed)
    // A vector merged into an existing one is not run-optimized again: {0, 1, 2} plus {3} keeps an array container
    // where a new vector of the same four rows gets a run. Both follow delta-spark.
    val existing = DeletedRows.of(Seq(0L, 1L, 2L))
    val merged = existing.union(DeletedRows.of(Seq(3L)))
    assert(merged == DeletedRows.of(Seq(0L, 1L, 2L, 3L)) && hex(merged.encode()) != hex(DeletedRows.of(0L to 3L).encode()))
    assert(hex(merged.encode()) == hex(DeltaSpark.merged(existing.encode(), DeletedRows.of(Seq(3L)).encode())))
    assert(hex(DeletedRows.of(0L to 3L).encode()) == hex(DeltaSpark.newVector(Seq(0L to 3L))))
    for (round <- 1 to 80) {
      val a = randomRows(r)
      val b = otherRows(r, a).filterNot(a) // delta-spark merges only newly deleted rows into a vector
      withClue(s"seed $seed, round $round (|a| = ${a.size}, |b| = ${b.size}): ") {
        val shuffled = r.shuffle(a.toSeq)
        val cut = Seq(r.nextInt(a.size + 1), r.nextInt(a.size + 1)).sorted
        val parts = Seq(shuffled.take(cut(0)), shuffled.slice(cut(0), cut(1)), shuffled.drop(cut(1)))
        assert(hex(DeletedRows.of(a).encode()) == hex(DeltaSpark.newVector(parts)))
        val stored = DeletedRows.of(a).encode()
        val added = DeletedRows.of(b)
        assert(hex(DeletionVectors.decode(stored).union(added).encode()) == hex(DeltaSpark.merged(stored, added.encode())))
      }
    }
    for (_ <- 1 to 200) {
      val bytes = Array.fill(r.nextInt(64))(r.nextInt(256).toByte)
      assert(Z85.encodePadded(bytes) == DeltaSpark.encodeBytes(bytes), s"seed $seed, ${hex(bytes)}")
    }
  }
}
