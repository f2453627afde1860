package io.strata.log

import java.nio.file.{Files, Path => JPath, Paths}

import io.strata.log.DeletionVectorTestSupport._
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import scala.jdk.CollectionConverters._
import scala.util.Random

/** Storing deletion vectors: inline or in one new file, read back through [[DeletionVectors.read]]. */
class DeletionVectorStoreSuite extends AnyFunSuite {
  private val conf = new Configuration()
  private val seed = sys.props.get("strata.test.seed").map(_.toLong).getOrElse(System.nanoTime())

  /** The files in `dir`, without the local file system's hidden checksum files. */
  private def files(dir: JPath): Seq[JPath] = Files.walk(dir).iterator.asScala
    .filter(p => Files.isRegularFile(p) && !p.getFileName.toString.startsWith(".")).toSeq.sortBy(_.toString)

  /** Replaces the file's bytes the way damage on an object store would: its local checksum file goes too. */
  private def damage(file: JPath, bytes: Array[Byte]): Unit = {
    Files.write(file, bytes)
    Files.deleteIfExists(file.resolveSibling(s".${file.getFileName}.crc"))
  }

  private val small = DeletedRows.of(Seq(3L, 9L))                               // 36 bytes
  private val large = DeletedRows.of((0L until 5000L).filter(_ % 3 != 0))       // one bitmap container
  private val runs =
    DeletedRows.of((0L until 60000L).filter(i => (i / 7) % 3 == 0) ++ ((1L << 33) + 5 to (1L << 33) + 70000))
  private val tiny = DeletedRows.of(Seq(1L << 35))

  test("a mix of inline and stored vectors: descriptors in input order, one file, offsets, sizes, CRCs") {
    val dir = Files.createTempDirectory("dv-store")
    val table = new Path(dir.toUri)
    val vectors = Seq(large, small, runs, DeletedRows.empty, tiny)
    val dvs = DeletionVectorStore.write(table, conf, vectors, maxInlineBytes = 300, prefix = "ab")
    assert(dvs.map(_.storageType) == Seq("u", "i", "u", "i", "i"))
    assert(dvs(3) == DeletionVectorDescriptor.Empty && DeletionVectors.read(dvs(3), table, conf).isEmpty)
    dvs.zip(vectors).foreach { case (dv, v) =>
      assert(dv.cardinality == v.cardinality && dv.sizeInBytes == (if (v.isEmpty) 0 else v.encode().length), dv)
      assert(DeletionVectors.read(dv, table, conf) == v, dv)
      assert(DeletionVectors.read(dv, table, conf).toSeq == v.toSeq, dv)
    }
    // Inline: the padded Z85 text of the data, no offset.
    Seq(dvs(1) -> small, dvs(4) -> tiny).foreach { case (dv, v) =>
      assert(dv.offset.isEmpty && dv.pathOrInlineDv == Z85.encodePadded(v.encode()))
      assert(dv.pathOrInlineDv.length == (v.encode().length + 3) / 4 * 5, dv)
    }
    // Stored: one file under the prefix, named after the uuid the descriptor carries.
    val written = files(dir)
    assert(written.size == 1 && written.head.getParent == dir.resolve("ab"), written)
    assert(dvs(0).pathOrInlineDv == dvs(2).pathOrInlineDv && dvs(0).pathOrInlineDv.startsWith("ab") &&
      dvs(0).pathOrInlineDv.length == 22)
    assert(Paths.get(dvs(0).file(table).get.toUri) == written.head)
    val stored = storedVectors(written.head)
    assert(stored.map(_.offset) == Seq(1, 1 + 4 + large.encode().length + 4) && dvs(0).offset.contains(1) &&
      dvs(2).offset.contains(stored(1).offset))
    assert(stored.map(_.data.toSeq) == Seq(large.encode().toSeq, runs.encode().toSeq))
    stored.foreach { v =>
      val crc = new java.util.zip.CRC32()
      crc.update(v.data)
      assert(v.crc == crc.getValue.toInt)
    }
    assert(Files.size(written.head) == 1 + stored.map(8L + _.data.length).sum)
    // Each descriptor serializes like delta-spark's (offset only when stored).
    assert(ActionCodec.mapper.writeValueAsString(dvs(2).toJson) == s"""{"storageType":"u","pathOrInlineDv":""" +
      s""""${dvs(2).pathOrInlineDv}","offset":${stored(1).offset},"sizeInBytes":${runs.encode().length},""" +
      s""""cardinality":${runs.cardinality}}""")
  }

  test("no file when every vector is inline (or empty); everything in the file when maxInlineBytes is 0") {
    val dir = Files.createTempDirectory("dv-store")
    val table = new Path(dir.toUri)
    val inline = DeletionVectorStore.write(table, conf, Seq(small, DeletedRows.empty, runs), maxInlineBytes = 1 << 20)
    assert(inline.map(_.storageType) == Seq("i", "i", "i") && files(dir).isEmpty)
    assert(inline.map(DeletionVectors.read(_, table, conf)) == Seq(small, DeletedRows.empty, runs))
    assert(DeletionVectorStore.write(table, conf, Nil).isEmpty && files(dir).isEmpty)
    val stored = DeletionVectorStore.write(table, conf, Seq(small, tiny))
    assert(stored.map(_.storageType) == Seq("u", "u") && stored.map(_.offset.get) == Seq(1, 1 + 4 + 36 + 4))
    assert(files(dir).size == 1 && files(dir).head.getParent == dir && stored.head.pathOrInlineDv.length == 20)
    assert(stored.map(DeletionVectors.read(_, table, conf)) == Seq(small, tiny))
    // A second write never reuses the first's file.
    val again = DeletionVectorStore.write(table, conf, Seq(small))
    assert(files(dir).size == 2 && again.head.pathOrInlineDv != stored.head.pathOrInlineDv)
  }

  test("random vectors stored together all read back, whatever mix of inline and file") {
    val r = new Random(seed)
    val dir = Files.createTempDirectory("dv-store")
    val table = new Path(dir.toUri)
    for (round <- 1 to 10) {
      val sets = Seq.fill(1 + r.nextInt(6))(randomRows(r))
      val vectors = sets.map(DeletedRows.of)
      val limit = r.nextInt(400)
      withClue(s"seed $seed, round $round, maxInlineBytes $limit: ") {
        val prefix = if (round % 2 == 0) "" else "x7"
        val dvs = DeletionVectorStore.write(table, conf, vectors, maxInlineBytes = limit, prefix = prefix)
        assert(dvs.size == sets.size)
        dvs.zip(sets).foreach { case (dv, set) =>
          assert(DeletionVectors.read(dv, table, conf).toSeq == set.toSeq.sorted && dv.cardinality == set.size)
          assert(dv.storageType == (if (set.isEmpty || dv.sizeInBytes <= limit) "i" else "u"), dv)
        }
        assert(dvs.filter(_.storageType == "u").map(_.pathOrInlineDv).distinct.size <= 1)
      }
    }
  }

  test("a flipped byte in a stored vector is refused with CorruptLogException naming the file") {
    val dir = Files.createTempDirectory("dv-store")
    val table = new Path(dir.toUri)
    val dvs = DeletionVectorStore.write(table, conf, Seq(small, runs, large))
    val file = Paths.get(dvs.head.file(table).get.toUri)
    val bytes = Files.readAllBytes(file)
    val inSecond = dvs(1).offset.get + 4 + dvs(1).sizeInBytes / 2
    bytes(inSecond) = (bytes(inSecond) ^ 0x10).toByte
    Files.write(file, bytes) // the local file system's own checksum catches it first
    val checksum = intercept[CorruptLogException](DeletionVectors.read(dvs(1), table, conf)).getMessage
    assert(checksum.contains(file.getFileName.toString) && checksum.contains("checksum"), checksum)
    damage(file, bytes)
    val e = intercept[CorruptLogException](DeletionVectors.read(dvs(1), table, conf))
    assert(e.getMessage.contains(file.getFileName.toString) && e.getMessage.contains("CRC"), e.getMessage)
    // The vectors around it have CRCs of their own and still read.
    assert(DeletionVectors.read(dvs(0), table, conf) == small && DeletionVectors.read(dvs(2), table, conf) == large)
    // A wrong offset (size field) or a damaged version byte is refused too, naming the file.
    damage(file, Files.readAllBytes(file).updated(inSecond, (bytes(inSecond) ^ 0x10).toByte))
    assert(DeletionVectors.read(dvs(1), table, conf) == runs)
    val wrongOffset = intercept[CorruptLogException](DeletionVectors.read(dvs(2).copy(offset = Some(3)), table, conf))
    assert(wrongOffset.getMessage.contains(file.getFileName.toString) && wrongOffset.getMessage.contains("holds"))
    damage(file, Files.readAllBytes(file).updated(0, 2.toByte))
    val version = intercept[CorruptLogException](DeletionVectors.read(dvs(0), table, conf)).getMessage
    assert(version.contains("version 2") && version.contains(file.getFileName.toString), version)
  }

  test("a truncated file is refused as truncated") {
    val dir = Files.createTempDirectory("dv-store")
    val table = new Path(dir.toUri)
    val dvs = DeletionVectorStore.write(table, conf, Seq(small, large))
    val file = Paths.get(dvs.head.file(table).get.toUri)
    damage(file, Files.readAllBytes(file).take(dvs(1).offset.get + 10))
    assert(DeletionVectors.read(dvs(0), table, conf) == small)
    val e = intercept[CorruptLogException](DeletionVectors.read(dvs(1), table, conf))
    assert(e.getMessage.contains("truncated") && e.getMessage.contains(file.getFileName.toString), e.getMessage)
  }
}
