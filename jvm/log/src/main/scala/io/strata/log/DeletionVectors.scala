package io.strata.log

import java.nio.ByteBuffer
import java.util.UUID
import java.util.zip.CRC32

import com.fasterxml.jackson.databind.JsonNode
import com.fasterxml.jackson.databind.node.{JsonNodeFactory, ObjectNode}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

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
      if (pathOrInlineDv.length < 20) throw CorruptLogException("STRATA_CORRUPT_DELETION_VECTOR",
        s"Deletion vector id '$pathOrInlineDv' is shorter " +
        "than the 20 characters of a Z85-encoded uuid.")
      val prefix = pathOrInlineDv.dropRight(20)
      val bytes = ByteBuffer.wrap(Z85.decode(pathOrInlineDv.takeRight(20)))
      val name = s"deletion_vector_${new UUID(bytes.getLong, bytes.getLong)}.bin"
      Some(if (prefix.isEmpty) new Path(tablePath, name) else new Path(new Path(tablePath, prefix), name))
    case "p" => Some(new Path(new java.net.URI(pathOrInlineDv)))
    case "i" => None
    case other => throw CorruptLogException("STRATA_CORRUPT_DELETION_VECTOR",
      s"Unknown deletion vector storage type '$other' (expected u, p or i).")
  }

  /** The descriptor as a log action holds it: delta-spark's field order, no `offset` when there is none. */
  def toJson: ObjectNode = {
    val n = JsonNodeFactory.instance.objectNode()
    n.put("storageType", storageType).put("pathOrInlineDv", pathOrInlineDv)
    offset.foreach(o => n.put("offset", o))
    n.put("sizeInBytes", sizeInBytes).put("cardinality", cardinality)
  }
}

object DeletionVectorDescriptor {
  /** delta-spark's descriptor of an empty vector (inline, no data); a file action with no deleted rows has none. */
  val Empty: DeletionVectorDescriptor = DeletionVectorDescriptor("i", "", None, 0, 0L)

  def parse(n: JsonNode): DeletionVectorDescriptor = {
    def field(name: String) = Option(n.get(name)).filterNot(_.isNull).getOrElse(
      throw CorruptLogException("STRATA_CORRUPT_DELETION_VECTOR", s"Deletion vector descriptor $n has no '$name'."))
    DeletionVectorDescriptor(field("storageType").asText, field("pathOrInlineDv").asText,
      Option(n.get("offset")).filterNot(_.isNull).map(_.asInt), field("sizeInBytes").asInt, field("cardinality").asLong)
  }
}

/**
 * Reads deletion vectors (PROTOCOL.md, "Deletion Vector Format"). A stored one sits at `offset` in its file (which
 * starts with the version byte 1): its size (4 bytes, big-endian), the data ([[DeletionVectorFormat]]), then the
 * data's CRC-32 (4 bytes, big-endian). An inline one is the Z85 text of the data (padded to 4 bytes).
 */
object DeletionVectors {
  val Magic: Int = DeletionVectorFormat.Magic

  /** The deleted row indexes of the file `dv` describes. */
  def read(dv: DeletionVectorDescriptor, tablePath: Path, conf: Configuration): DeletedRows = {
    if (dv.cardinality == 0) return DeletedRows.empty // delta-spark's empty descriptor has no data at all
    val data = dv.file(tablePath) match {
      case None => Z85.decode(dv.pathOrInlineDv).take(dv.sizeInBytes)
      case Some(file) =>
        val offset = dv.offset.getOrElse(1)
        if (offset < 1) throw CorruptLogException("STRATA_CORRUPT_DELETION_VECTOR",
          s"Deletion vector ${dv.uniqueId} has offset $offset.")
        val in = file.getFileSystem(conf).open(file)
        try {
          val version = in.readByte()
          if (version != DeletionVectorFormat.FileVersion) throw CorruptLogException("STRATA_CORRUPT_DELETION_VECTOR",
            s"Deletion vector file " +
            s"$file has format version $version; Strata reads version ${DeletionVectorFormat.FileVersion}.")
          if (offset > 1) in.seek(offset.toLong)
          val size = in.readInt()
          if (size != dv.sizeInBytes) throw CorruptLogException("STRATA_CORRUPT_DELETION_VECTOR",
            s"Deletion vector at $file offset $offset holds " +
            s"$size bytes; its descriptor says ${dv.sizeInBytes}.")
          val bytes = new Array[Byte](size)
          in.readFully(bytes)
          if (in.readInt() != crc(bytes)) throw CorruptLogException("STRATA_CORRUPT_DELETION_VECTOR",
            s"Deletion vector at $file offset $offset " +
            "fails its CRC-32 check.")
          bytes
        } catch {
          case e: java.io.EOFException => throw CorruptLogException("STRATA_CORRUPT_DELETION_VECTOR",
            s"Deletion vector file $file is truncated.", e)
          case e: org.apache.hadoop.fs.ChecksumException => throw CorruptLogException("STRATA_CORRUPT_DELETION_VECTOR",
            s"Deletion vector file " +
            s"$file fails the file system's checksum (${e.getMessage}).", e)
        } finally in.close()
    }
    val rows = decode(data)
    if (rows.cardinality != dv.cardinality) throw CorruptLogException("STRATA_CORRUPT_DELETION_VECTOR",
      s"Deletion vector ${dv.uniqueId} holds " +
      s"${rows.cardinality} row indexes; its descriptor says ${dv.cardinality}.")
    rows
  }

  /**
   * The statistics of a file entry that gets a deletion vector: `numRecords` (the stored rows; PROTOCOL.md, "Writer
   * Requirement for Deletion Vectors", requires it of every add with a vector, even for a file written without
   * statistics) and `tightBounds: false` (min/max still bound the live rows, no longer tightly).
   */
  def statsWithVector(stats: Option[String], physicalRows: Long): String = {
    val node = stats.flatMap(s => scala.util.Try(ActionCodec.mapper.readTree(s)).toOption).collect {
      case o: com.fasterxml.jackson.databind.node.ObjectNode => o
    }.getOrElse(ActionCodec.mapper.createObjectNode())
    if (!Option(node.get("numRecords")).exists(_.canConvertToLong)) node.put("numRecords", physicalRows)
    node.put("tightBounds", false)
    ActionCodec.mapper.writeValueAsString(node)
  }

  /** The row indexes in a deletion vector's data (magic number and RoaringBitmapArray). */
  def decode(data: Array[Byte]): DeletedRows = DeletionVectorFormat.decode(data)

  private[log] def crc(data: Array[Byte]): Int = {
    val c = new CRC32()
    c.update(data)
    c.getValue.toInt
  }
}

/** Writes deletion vectors the way delta-spark does (its DeletionVectorStore and DeletionVectorDescriptor). */
object DeletionVectorStore {
  /**
   * The new entries of files whose deleted rows grow: per (entry, every row now deleted, old vector's included,
   * stored rows), None when every stored row is deleted (the file goes), else the entry with the new vector,
   * `dataChange = true` and [[DeletionVectors.statsWithVector]]. The new vectors are [[write]]n together; returns
   * the entries in the order given, then the vector file when one was written.
   */
  def grow(tablePath: Path, conf: Configuration, files: Seq[(AddFile, DeletedRows, Long)],
           maxInlineBytes: Int): (Seq[(AddFile, Option[AddFile])], Option[Path]) = {
    val (gone, kept) = files.partition { case (_, rows, stored) => rows.cardinality == stored }
    val vectors = if (kept.isEmpty) Nil else write(tablePath, conf, kept.map(_._2), maxInlineBytes)
    val changed = gone.map { case (file, _, _) => (file, None) } ++ kept.zip(vectors).map {
      case ((file, _, stored), dv) => (file, Some(file.copy(deletionVector = Some(dv), dataChange = true,
        stats = Some(DeletionVectors.statsWithVector(file.stats, stored)))))
    }
    (changed, vectors.flatMap(_.file(tablePath)).headOption)
  }

  /**
   * Stores `vectors` and returns their descriptors, in the same order. A vector whose data takes at most
   * `maxInlineBytes` bytes is kept inline (`i`: the Z85 text of its data padded to 4 bytes, sizeInBytes the
   * unpadded length). The others all go into one new file, `<table>/<prefix>/deletion_vector_<random uuid>.bin`
   * (never overwriting): the version byte 1, then per vector its size (4 bytes, big-endian), data and CRC-32 of the
   * data (4 bytes, big-endian); each is described by `u` (`prefix` then the Z85 text of the uuid's 16 big-endian
   * bytes) with the offset of its size field. No file when nothing goes to one. An empty vector gets
   * [[DeletionVectorDescriptor.Empty]], as in delta-spark.
   */
  def write(tablePath: Path, conf: Configuration, vectors: Seq[DeletedRows], maxInlineBytes: Int = 0,
            prefix: String = ""): Seq[DeletionVectorDescriptor] = {
    require(!prefix.startsWith("/") && !prefix.contains(":"), s"Deletion vector prefix '$prefix' is not relative.")
    val encoded = vectors.map(v => if (v.isEmpty) null else v.encode())
    val toFile = encoded.indices.filter(i => encoded(i) != null && encoded(i).length > maxInlineBytes)
    val stored: Map[Int, DeletionVectorDescriptor] = if (toFile.isEmpty) Map.empty else {
      val id = UUID.randomUUID()
      val idBytes = ByteBuffer.allocate(16).putLong(id.getMostSignificantBits).putLong(id.getLeastSignificantBits)
      val pathOrInlineDv = prefix + Z85.encode(idBytes.array())
      val file = DeletionVectorDescriptor("u", pathOrInlineDv, None, 0, 0).file(tablePath).get
      val fs = file.getFileSystem(conf)
      val out = fs.create(file, false)
      var written = false
      try {
        out.writeByte(DeletionVectorFormat.FileVersion)
        val descriptors = toFile.map { i =>
          val data = encoded(i)
          val offset = out.getPos
          if (offset + 8L + data.length > Int.MaxValue) throw StrataException("STRATA_DELETION_VECTOR_TOO_LARGE",
            s"Deletion vector file $file " +
            "would exceed 2 GB; write fewer vectors to one file.")
          out.writeInt(data.length)
          out.write(data)
          out.writeInt(DeletionVectors.crc(data))
          i -> DeletionVectorDescriptor("u", pathOrInlineDv, Some(offset.toInt), data.length, vectors(i).cardinality)
        }
        out.close()
        written = true
        descriptors.toMap
      } finally if (!written) {
        try out.close() catch { case _: Exception => }
        try fs.delete(file, false) catch { case _: Exception => }
      }
    }
    encoded.indices.map { i =>
      if (encoded(i) == null) DeletionVectorDescriptor.Empty
      else stored.getOrElse(i, DeletionVectorDescriptor("i", Z85.encodePadded(encoded(i)), None, encoded(i).length,
        vectors(i).cardinality))
    }
  }
}
