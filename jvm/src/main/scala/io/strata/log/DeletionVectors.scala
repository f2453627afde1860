package io.strata.log

import java.io.{DataInputStream, IOException}
import java.nio.{ByteBuffer, ByteOrder}
import java.util.UUID
import java.util.zip.CRC32

import com.fasterxml.jackson.databind.JsonNode
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.roaringbitmap.RoaringBitmap

/**
 * A deletion vector descriptor (PROTOCOL.md, "Deletion Vector Descriptor Schema"): where the bitmap of a data
 * file's deleted row indexes is kept. `u`: a file `deletion_vector_<uuid>.bin` in the table (with an optional
 * directory prefix), `pathOrInlineDv` holding the prefix and the Z85-encoded uuid; `p`: a file at an absolute path;
 * `i`: the bitmap itself, Z85-encoded, inline.
 */
final case class DeletionVectorDescriptor(storageType: String, pathOrInlineDv: String, offset: Option[Int],
                                          sizeInBytes: Int, cardinality: Long) {
  /** The descriptor's identity: with the file path, the key of a file action in log replay. */
  def uniqueId: String = storageType + pathOrInlineDv + offset.fold("")(o => s"@$o")

  /** The file holding the bitmap (None for an inline one). */
  def file(tablePath: Path): Option[Path] = storageType match {
    case "u" =>
      if (pathOrInlineDv.length < 20) throw new CorruptLogException(s"Deletion vector id '$pathOrInlineDv' is shorter " +
        "than the 20 characters of a Z85-encoded uuid.")
      val prefix = pathOrInlineDv.dropRight(20)
      val bytes = ByteBuffer.wrap(Z85.decode(pathOrInlineDv.takeRight(20)))
      val name = s"deletion_vector_${new UUID(bytes.getLong, bytes.getLong)}.bin"
      Some(if (prefix.isEmpty) new Path(tablePath, name) else new Path(new Path(tablePath, prefix), name))
    case "p" => Some(new Path(new java.net.URI(pathOrInlineDv)))
    case "i" => None
    case other => throw new CorruptLogException(s"Unknown deletion vector storage type '$other' (expected u, p or i).")
  }
}

object DeletionVectorDescriptor {
  /** The descriptor of an add or remove action, from its `deletionVector` field. */
  def of(extra: Option[com.fasterxml.jackson.databind.node.ObjectNode]): Option[DeletionVectorDescriptor] =
    extra.flatMap(e => Option(e.get("deletionVector"))).filterNot(_.isNull).map(parse)

  def parse(n: JsonNode): DeletionVectorDescriptor = {
    def field(name: String) = Option(n.get(name)).filterNot(_.isNull).getOrElse(
      throw new CorruptLogException(s"Deletion vector descriptor $n has no '$name'."))
    DeletionVectorDescriptor(field("storageType").asText, field("pathOrInlineDv").asText,
      Option(n.get("offset")).filterNot(_.isNull).map(_.asInt), field("sizeInBytes").asInt, field("cardinality").asLong)
  }
}

/**
 * Reads deletion vectors (PROTOCOL.md, "Deletion Vector Format"). A stored one sits at `offset` in its file (after
 * a version byte 1): its size (4 bytes, big-endian), the data, then the data's CRC-32 (4 bytes, big-endian). The
 * data is the magic number 1681511377 (little-endian) and a "RoaringBitmapArray": the number of 32-bit bitmaps
 * (8 bytes, little-endian), then each bitmap's key (the high 32 bits of its row indexes, 4 bytes little-endian)
 * followed by the bitmap in the portable Roaring format.
 */
object DeletionVectors {
  val Magic = 1681511377

  /** The deleted row indexes of the file `dv` describes, sorted. */
  def read(dv: DeletionVectorDescriptor, tablePath: Path, conf: Configuration): DeletedRows = {
    val data = dv.file(tablePath) match {
      case None => Z85.decode(dv.pathOrInlineDv).take(dv.sizeInBytes)
      case Some(file) =>
        val in = new DataInputStream(file.getFileSystem(conf).open(file))
        try {
          val offset = dv.offset.getOrElse(1)
          if (offset == 1) {
            val version = in.readByte()
            if (version != 1) throw new CorruptLogException(s"Deletion vector file $file has format version $version; " +
              "Strata reads version 1.")
          } else in.skipNBytes(offset.toLong)
          val size = in.readInt()
          if (size != dv.sizeInBytes) throw new CorruptLogException(s"Deletion vector at $file offset $offset holds " +
            s"$size bytes; its descriptor says ${dv.sizeInBytes}.")
          val bytes = new Array[Byte](size)
          in.readFully(bytes)
          val crc = new CRC32()
          crc.update(bytes)
          if (in.readInt() != crc.getValue.toInt) throw new CorruptLogException(s"Deletion vector at $file offset " +
            s"$offset fails its CRC-32 check.")
          bytes
        } catch {
          case e: java.io.EOFException => throw new CorruptLogException(s"Deletion vector file $file is truncated.", e)
        } finally in.close()
    }
    val rows = decode(data)
    if (rows.cardinality != dv.cardinality) throw new CorruptLogException(s"Deletion vector ${dv.uniqueId} holds " +
      s"${rows.cardinality} row indexes; its descriptor says ${dv.cardinality}.")
    rows
  }

  /** The row indexes in a deletion vector's data (magic number and RoaringBitmapArray). */
  def decode(data: Array[Byte]): DeletedRows = {
    val buf = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN)
    try {
      val magic = buf.getInt
      if (magic != Magic) throw new CorruptLogException(s"Deletion vector data starts with $magic, not the magic " +
        s"number $Magic.")
      val count = buf.getLong
      if (count < 0 || count > Int.MaxValue) throw new CorruptLogException(s"Deletion vector claims $count bitmaps.")
      val bitmaps = (0 until count.toInt).map { _ =>
        val key = buf.getInt
        val bitmap = new RoaringBitmap()
        bitmap.deserialize(buf.slice().order(ByteOrder.LITTLE_ENDIAN))
        buf.position(buf.position() + bitmap.serializedSizeInBytes())
        (Integer.toUnsignedLong(key), bitmap)
      }
      new DeletedRows(bitmaps.sortBy(_._1))
    } catch {
      case e @ (_: java.nio.BufferUnderflowException | _: IOException | _: IndexOutOfBoundsException) =>
        throw new CorruptLogException(s"Deletion vector data is malformed: $e", e)
    }
  }
}

object DeletedRows {
  val empty: DeletedRows = new DeletedRows(Nil)
}

/** The deleted row indexes of one data file: 32-bit Roaring bitmaps keyed by the indexes' high 32 bits. */
final class DeletedRows private[log] (bitmaps: Seq[(Long, RoaringBitmap)]) extends Serializable {
  private val byKey = bitmaps.toMap
  def cardinality: Long = bitmaps.map(_._2.getLongCardinality).sum
  def contains(rowIndex: Long): Boolean =
    byKey.get(rowIndex >>> 32).exists(_.contains((rowIndex & 0xFFFFFFFFL).toInt))
  /** Every deleted index, ascending. */
  def toSeq: Seq[Long] = bitmaps.flatMap { case (key, b) =>
    val it = b.getIntIterator
    Iterator.continually(it).takeWhile(_.hasNext).map(i => (key << 32) | Integer.toUnsignedLong(i.next())).toSeq
  }
}

/** Z85 (ZeroMQ RFC 32), the encoding of deletion vector ids and inline bitmaps: 5 characters per 4 bytes. */
object Z85 {
  private val Alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
  private val Values: Array[Int] = {
    val v = Array.fill(128)(-1)
    Alphabet.zipWithIndex.foreach { case (c, i) => v(c.toInt) = i }
    v
  }

  def decode(s: String): Array[Byte] = {
    if (s.length % 5 != 0) throw new CorruptLogException(s"Z85 text of ${s.length} characters (not a multiple of 5).")
    val out = ByteBuffer.allocate(s.length / 5 * 4)
    s.grouped(5).foreach { group =>
      var value = 0L
      group.foreach { c =>
        val d = if (c.toInt < 128) Values(c.toInt) else -1
        if (d < 0) throw new CorruptLogException(s"'$c' is not a Z85 character.")
        value = value * 85 + d
      }
      if (value > 0xFFFFFFFFL) throw new CorruptLogException(s"Z85 group '$group' exceeds 32 bits.")
      out.putInt(value.toInt)
    }
    out.array()
  }
}
