package io.strata.log

import java.io.IOException
import java.nio.{ByteBuffer, ByteOrder}

import org.roaringbitmap.{InvalidRoaringFormat, RoaringBitmap}

/**
 * The data of a deletion vector (PROTOCOL.md, "Deletion Vector Format"): the magic number 1681511377 (4 bytes,
 * little-endian) and a "RoaringBitmapArray" in its portable form: the number of buckets (8 bytes, little-endian),
 * then per bucket, keys ascending, the key (the high 32 bits of its row indexes, 4 bytes little-endian) and a 32-bit
 * Roaring bitmap of the low 32 bits in the portable Roaring format.
 *
 * What delta-spark writes, and so what [[DeletedRows.encode]] writes (its RoaringBitmapArray, checked against its
 * jar by DeletionVectorFormatSuite): one bucket for every key from 0 to the largest, empty ones included (its array
 * is indexed by key); a new vector's bitmaps are run-optimized before they are serialized (its bitmap aggregate
 * calls `runOptimize`); a vector merged into a file's existing one is the existing bitmaps OR-ed in place with the
 * new ones, serialized as they come out, without another `runOptimize`.
 */
object DeletionVectorFormat {
  val Magic = 1681511377
  /** The first byte of a deletion vector file. */
  val FileVersion: Byte = 1

  /**
   * Up to this key (row indexes below 2^48) [[DeletedRows.encode]] writes the empty buckets of the keys in between,
   * as delta-spark does. Beyond it only non-empty buckets are written, which the format allows and delta-spark
   * reads (it fills the gaps), instead of delta-spark's 12 bytes for every empty key.
   */
  val DenseKeyLimit: Int = 1 << 16

  private val EmptyBitmapSize = new RoaringBitmap().serializedSizeInBytes()

  /** The row indexes in a deletion vector's data. */
  def decode(data: Array[Byte]): DeletedRows = {
    val buf = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN)
    try {
      val magic = buf.getInt
      if (magic != Magic) throw CorruptLogException("STRATA_CORRUPT_DELETION_VECTOR",
        s"Deletion vector data starts with $magic, not the magic " +
        s"number $Magic.")
      val count = buf.getLong
      if (count < 0 || count > buf.remaining() / 4) throw CorruptLogException("STRATA_CORRUPT_DELETION_VECTOR",
        s"Deletion vector claims $count " +
        s"bitmaps in ${data.length} bytes.")
      var previous = -1L
      val buckets = (0 until count.toInt).map { _ =>
        val key = Integer.toUnsignedLong(buf.getInt)
        if (key > Int.MaxValue) throw CorruptLogException("STRATA_CORRUPT_DELETION_VECTOR",
          s"Deletion vector bitmap key $key is beyond the " +
          "largest row index (2^63 - 1).")
        if (key <= previous) throw CorruptLogException("STRATA_CORRUPT_DELETION_VECTOR",
          s"Deletion vector bitmap keys are not ascending " +
          s"($previous, then $key).")
        previous = key
        val bitmap = new RoaringBitmap()
        bitmap.deserialize(buf.slice().order(ByteOrder.LITTLE_ENDIAN))
        buf.position(buf.position() + bitmap.serializedSizeInBytes())
        (key.toInt, bitmap)
      }
      DeletedRows.fromBuckets(buckets.filterNot(_._2.isEmpty))
    } catch {
      case e @ (_: java.nio.BufferUnderflowException | _: IOException | _: IndexOutOfBoundsException |
                _: IllegalArgumentException | _: InvalidRoaringFormat) =>
        throw CorruptLogException("STRATA_CORRUPT_DELETION_VECTOR", s"Deletion vector data is malformed: $e", e)
    }
  }

  private[log] def encode(keys: Array[Int], bitmaps: Array[RoaringBitmap]): Array[Byte] = {
    val dense = keys.isEmpty || keys.last < DenseKeyLimit
    val buckets = if (keys.isEmpty) 0 else if (dense) keys.last + 1 else keys.length
    val size = 4L + 8L + 4L * buckets + bitmaps.map(_.serializedSizeInBytes().toLong).sum +
      (buckets - keys.length).toLong * EmptyBitmapSize
    if (size > Int.MaxValue) throw StrataException("STRATA_DELETION_VECTOR_TOO_LARGE",
      s"A deletion vector of $size bytes is too large to store.")
    val buf = ByteBuffer.allocate(size.toInt).order(ByteOrder.LITTLE_ENDIAN)
    buf.putInt(Magic).putLong(buckets.toLong)
    if (dense) {
      val empty = new RoaringBitmap()
      var i = 0
      for (key <- 0 until buckets) {
        buf.putInt(key)
        if (keys(i) == key) { bitmaps(i).serialize(buf); i += 1 } else empty.serialize(buf)
      }
    } else keys.indices.foreach { i => buf.putInt(keys(i)); bitmaps(i).serialize(buf) }
    assert(!buf.hasRemaining, s"deletion vector encoding wrote ${buf.position()} of $size bytes")
    buf.array()
  }
}

/**
 * The deleted row indexes of one data file: a set of non-negative Longs, held as 32-bit Roaring bitmaps keyed by the
 * indexes' high 32 bits (only non-empty ones). Immutable: [[union]] copies the bitmaps it changes.
 */
final class DeletedRows private (private val keys: Array[Int], private val bitmaps: Array[RoaringBitmap])
  extends Serializable {

  def isEmpty: Boolean = keys.isEmpty

  @transient lazy val cardinality: Long = bitmaps.iterator.map(_.getLongCardinality).sum

  def contains(rowIndex: Long): Boolean = rowIndex >= 0 && {
    val i = java.util.Arrays.binarySearch(keys, (rowIndex >>> 32).toInt)
    i >= 0 && bitmaps(i).contains(rowIndex.toInt)
  }

  /** The largest deleted row index, -1 when there is none. */
  def maxRowIndex: Long =
    if (isEmpty) -1L else (keys.last.toLong << 32) | Integer.toUnsignedLong(bitmaps.last.last())

  /**
   * The rows deleted by either. Like delta-spark when it adds newly deleted rows to a file's existing vector
   * (existing OR new, in place, no `runOptimize`): call it on the existing vector with the new rows as `other` and
   * [[encode]] gives delta-spark's bytes.
   */
  def union(other: DeletedRows): DeletedRows = {
    if (other.isEmpty) return this
    if (isEmpty) return other
    val ks = Array.newBuilder[Int]
    val bs = Array.newBuilder[RoaringBitmap]
    var i = 0
    var j = 0
    while (i < keys.length || j < other.keys.length) {
      if (j == other.keys.length || (i < keys.length && keys(i) < other.keys(j))) {
        ks += keys(i); bs += bitmaps(i); i += 1
      } else if (i == keys.length || other.keys(j) < keys(i)) {
        ks += other.keys(j); bs += other.bitmaps(j); j += 1
      } else {
        val merged = bitmaps(i).clone()
        merged.or(other.bitmaps(j))
        ks += keys(i); bs += merged; i += 1; j += 1
      }
    }
    new DeletedRows(ks.result(), bs.result())
  }

  /** Whether every row `other` deletes is deleted here too (this set is a superset of `other`). */
  def containsAll(other: DeletedRows): Boolean = {
    var i = 0
    other.keys.indices.forall { j =>
      while (i < keys.length && keys(i) < other.keys(j)) i += 1
      i < keys.length && keys(i) == other.keys(j) && RoaringBitmap.andNotCardinality(other.bitmaps(j), bitmaps(i)) == 0
    }
  }

  /** Whether a row is deleted by both. */
  def intersects(other: DeletedRows): Boolean = {
    var i = 0
    var j = 0
    while (i < keys.length && j < other.keys.length) {
      if (keys(i) < other.keys(j)) i += 1
      else if (other.keys(j) < keys(i)) j += 1
      else if (RoaringBitmap.intersects(bitmaps(i), other.bitmaps(j))) return true
      else { i += 1; j += 1 }
    }
    false
  }

  /**
   * The deletion vector's data ([[DeletionVectorFormat]]): magic number and portable RoaringBitmapArray, byte for
   * byte what delta-spark writes for the same vector (built by [[DeletedRows.of]] for new rows, [[union]] for rows
   * added to an existing vector).
   */
  def encode(): Array[Byte] = DeletionVectorFormat.encode(keys, bitmaps)

  /** Every deleted index, ascending. */
  def iterator: Iterator[Long] = keys.indices.iterator.flatMap { i =>
    val high = keys(i).toLong << 32
    val it = bitmaps(i).getIntIterator
    Iterator.continually(it).takeWhile(_.hasNext).map(x => high | Integer.toUnsignedLong(x.next()))
  }

  /** Every deleted index, ascending. */
  def toSeq: Seq[Long] = iterator.toVector

  /** The same set of row indexes (however the bitmaps happen to be laid out). */
  override def equals(o: Any): Boolean = o match {
    case that: DeletedRows => (this eq that) || (java.util.Arrays.equals(keys, that.keys) &&
      keys.indices.forall { i =>
        val (a, b) = (bitmaps(i), that.bitmaps(i))
        a.getLongCardinality == b.getLongCardinality && RoaringBitmap.andCardinality(a, b) == a.getLongCardinality
      })
    case _ => false
  }

  override def hashCode: Int = java.util.Arrays.hashCode(keys) * 31 + cardinality.## * 17 + maxRowIndex.##

  override def toString: String =
    s"DeletedRows(${iterator.take(10).mkString(", ")}${if (cardinality > 10) s", ... ($cardinality rows)" else ""})"
}

object DeletedRows {
  val empty: DeletedRows = new DeletedRows(Array.empty, Array.empty)

  /** The given row indexes (non-negative, any order, duplicates ignored), as delta-spark builds a new vector. */
  def of(rows: Iterable[Long]): DeletedRows = build(rows.iterator, sorted = false)

  /** Like [[of]], for indexes in ascending order (refused otherwise), without holding them all. */
  def fromSorted(it: Iterator[Long]): DeletedRows = build(it, sorted = true)

  private def build(rows: Iterator[Long], sorted: Boolean): DeletedRows = {
    val byKey = new java.util.TreeMap[Integer, RoaringBitmap]()
    var lastKey = -1
    var last: RoaringBitmap = null
    var previous = -1L
    rows.foreach { r =>
      if (r < 0) throw new IllegalArgumentException(s"Row index $r is negative.")
      if (sorted && r < previous) throw new IllegalArgumentException(s"Row indexes not ascending: $previous, then $r.")
      previous = r
      val key = (r >>> 32).toInt
      if (key != lastKey) {
        last = byKey.computeIfAbsent(key, _ => new RoaringBitmap())
        lastKey = key
      }
      last.add(r.toInt)
    }
    // delta-spark's bitmap aggregate adds the rows one by one, then run-optimizes the result.
    byKey.values.forEach(b => b.runOptimize())
    val keys = byKey.keySet.stream.mapToInt(_.intValue).toArray
    new DeletedRows(keys, byKey.values.toArray(new Array[RoaringBitmap](0)))
  }

  /** From (key, non-empty bitmap) pairs with ascending keys; the bitmaps are taken over, not copied. */
  private[log] def fromBuckets(buckets: Seq[(Int, RoaringBitmap)]): DeletedRows =
    if (buckets.isEmpty) empty else new DeletedRows(buckets.map(_._1).toArray, buckets.map(_._2).toArray)
}

/**
 * Z85 (ZeroMQ RFC 32), the encoding of deletion vector ids and inline vectors: every 4 bytes (a big-endian 32-bit
 * number) become 5 characters (its base-85 digits, most significant first).
 */
object Z85 {
  private val Alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
  private val Values: Array[Int] = {
    val v = Array.fill(128)(-1)
    Alphabet.zipWithIndex.foreach { case (c, i) => v(c.toInt) = i }
    v
  }

  /** The Z85 text of `bytes`, whose length must be a multiple of 4 (else IllegalArgumentException). */
  def encode(bytes: Array[Byte]): String = {
    require(bytes.length % 4 == 0, s"Z85 encodes a multiple of 4 bytes, not ${bytes.length}; use encodePadded.")
    val out = new java.lang.StringBuilder(bytes.length / 4 * 5)
    val buf = ByteBuffer.wrap(bytes)
    val digits = new Array[Char](5)
    while (buf.hasRemaining) {
      var value = Integer.toUnsignedLong(buf.getInt)
      for (d <- 4 to 0 by -1) { digits(d) = Alphabet.charAt((value % 85).toInt); value /= 85 }
      out.append(digits)
    }
    out.toString
  }

  /**
   * The Z85 text of `bytes` padded with zero bytes to a multiple of 4, as delta-spark encodes inline deletion
   * vectors (the descriptor's sizeInBytes keeps the unpadded length, and readers drop the padding).
   */
  def encodePadded(bytes: Array[Byte]): String =
    encode(if (bytes.length % 4 == 0) bytes else java.util.Arrays.copyOf(bytes, (bytes.length + 3) / 4 * 4))

  def decode(s: String): Array[Byte] = {
    if (s.length % 5 != 0) throw CorruptLogException("STRATA_CORRUPT_DELETION_VECTOR",
      s"Z85 text of ${s.length} characters (not a multiple of 5).")
    val out = ByteBuffer.allocate(s.length / 5 * 4)
    s.grouped(5).foreach { group =>
      var value = 0L
      group.foreach { c =>
        val d = if (c.toInt < 128) Values(c.toInt) else -1
        if (d < 0) throw CorruptLogException("STRATA_CORRUPT_DELETION_VECTOR", s"'$c' is not a Z85 character.")
        value = value * 85 + d
      }
      if (value > 0xFFFFFFFFL) throw CorruptLogException("STRATA_CORRUPT_DELETION_VECTOR",
        s"Z85 group '$group' exceeds 32 bits.")
      out.putInt(value.toInt)
    }
    out.array()
  }
}
