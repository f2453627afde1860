package io.strata.log

import java.nio.charset.StandardCharsets.UTF_8

import com.fasterxml.jackson.databind.node.ObjectNode

import scala.collection.mutable

/**
 * Strings stored as UTF-8 in one byte array with an end offset each: a path of n ASCII characters costs n + 4 bytes
 * instead of a `String`'s 40 + n (a million paths: ~90 MB less heap). Nulls are kept apart; appends only.
 */
private[log] final class Utf8Column(initialCapacity: Int) {
  private var bytes = new Array[Byte](math.max(16, initialCapacity * 32))
  private var ends = new Array[Int](math.max(4, initialCapacity))
  private var nulls: java.util.BitSet = null
  private var count = 0

  def length: Int = count

  def add(s: String): Unit = {
    if (count == ends.length) ends = java.util.Arrays.copyOf(ends, count * 2)
    val start = if (count == 0) 0 else ends(count - 1)
    if (s == null) {
      if (nulls == null) nulls = new java.util.BitSet()
      nulls.set(count)
      ends(count) = start
    } else {
      val b = s.getBytes(UTF_8)
      if (start + b.length > bytes.length) {
        bytes = java.util.Arrays.copyOf(bytes, math.max(bytes.length * 2, start + b.length))
      }
      System.arraycopy(b, 0, bytes, start, b.length)
      ends(count) = start + b.length
    }
    count += 1
  }

  def isNull(i: Int): Boolean = nulls != null && nulls.get(i)

  /** `f` of string i's UTF-8 bytes in place (array, offset, length), or of (null, 0, 0) for a null: nothing copied. */
  def withBytes[A](i: Int)(f: (Array[Byte], Int, Int) => A): A =
    if (isNull(i)) f(null, 0, 0) else {
      val start = if (i == 0) 0 else ends(i - 1)
      f(bytes, start, ends(i) - start)
    }

  def apply(i: Int): String =
    if (isNull(i)) null else {
      val start = if (i == 0) 0 else ends(i - 1)
      new String(bytes, start, ends(i) - start, UTF_8)
    }

  /** Bytes held (arrays as allocated). */
  def heapBytes: Long = bytes.length.toLong + ends.length * 4L + (if (nulls == null) 0 else nulls.size / 8)
}

/**
 * File actions stored column-wise, one row each: the live files or the tombstones of a snapshot. Per row a path and
 * statistics as UTF-8 bytes, size, time and an add's `numRecords` (read from its statistics as it is added, so a
 * count over every file parses nothing) as longs, and an int code into a dictionary of partition-value maps (a
 * table with 1,000 partitions holds 1,000 maps, however many files). Deletion vectors and the rare fields (tags,
 * unknown fields, a remove's extendedFileMetadata) take space only on rows that have them. `dataChange` is not kept:
 * in a snapshot every action is `dataChange = false`. Appends only; see [[FileSet]] for removal.
 */
private[log] final class FileColumns(initialCapacity: Int, dictionary: FileColumns.PartitionDictionary)
    extends TypedStats.Rows {
  import FileColumns._

  private val paths = new Utf8Column(initialCapacity)
  private val stats = new Utf8Column(initialCapacity)
  private var sizes = new Array[Long](math.max(4, initialCapacity))
  private var times = new Array[Long](math.max(4, initialCapacity))
  /** Each add's `numRecords` (-1 unknown: no statistics, none stated, or malformed JSON; removes: -1). */
  private var records = new Array[Long](math.max(4, initialCapacity))
  private var partitions = new Array[Int](math.max(4, initialCapacity))
  private var vectors: Array[DeletionVectorDescriptor] = null
  private val rare = mutable.LongMap.empty[Rare]
  private var count = 0

  def length: Int = count
  def partitionDictionary: PartitionDictionary = dictionary

  private def grow(): Unit = if (count == sizes.length) {
    val n = count * 2
    sizes = java.util.Arrays.copyOf(sizes, n); times = java.util.Arrays.copyOf(times, n)
    records = java.util.Arrays.copyOf(records, n)
    partitions = java.util.Arrays.copyOf(partitions, n)
    if (vectors != null) vectors = java.util.Arrays.copyOf(vectors, n)
  }

  /** `numRecords`: the row's, or [[ParseRecords]] to parse it from the statistics just stored. */
  private def append(path: String, size: Long, time: Long, pv: Int, stat: String,
                     dv: Option[DeletionVectorDescriptor], r: Rare, numRecords: Long): Int = {
    grow()
    paths.add(path); stats.add(stat)
    sizes(count) = size; times(count) = time; partitions(count) = pv
    records(count) = if (numRecords != ParseRecords) numRecords
                      else stats.withBytes(count)(StatsParser.recordsOnly.parse).numRecords(0)
    dv.foreach { d =>
      if (vectors == null) vectors = new Array[DeletionVectorDescriptor](sizes.length)
      vectors(count) = d
    }
    if (r != null) rare.update(count.toLong, r)
    count += 1
    count - 1
  }

  def add(f: AddFile): Int =
    append(f.path, f.size, f.modificationTime, dictionary.code(f.partitionValues), f.stats.orNull, f.deletionVector,
      if (f.tags.isEmpty && f.extra.isEmpty) null else Rare(f.tags, f.extra, None), ParseRecords)

  def add(r: RemoveFile): Int =
    append(r.path, r.size.getOrElse(NoSize), r.deletionTimestamp.getOrElse(NoTime),
      r.partitionValues.fold(NoPartitionValues)(dictionary.code), r.stats.orNull, r.deletionVector,
      if (r.tags.isEmpty && r.extra.isEmpty && r.extendedFileMetadata.isEmpty) null
      else Rare(r.tags, r.extra, r.extendedFileMetadata), -1L)

  /** Copies row `i` of `other` (which shares this dictionary) here. */
  def copyRow(other: FileColumns, i: Int): Int = {
    require(other.partitionDictionary eq dictionary)
    append(other.paths(i), other.sizes(i), other.times(i), other.partitions(i), other.stats(i),
      Option(other.deletionVector(i)), other.rare.getOrElse(i.toLong, null), other.records(i))
  }

  def path(i: Int): String = paths(i)
  def size(i: Int): Long = sizes(i)
  def time(i: Int): Long = times(i)
  def statsJson(i: Int): Option[String] = Option(stats(i))
  /** Row i's statistics JSON, or null. */
  def statsString(i: Int): String = stats(i)
  /** Row i's `numRecords` as its statistics state it (parsed once, when the row was added), or -1. */
  def numRecords(i: Int): Long = records(i)
  /** Row i's statistics parsed from their UTF-8 bytes in place (no `String` decoded). */
  def parseStats(i: Int, parser: StatsParser.For): StatsParser.Parsed = stats.withBytes(i)(parser.parse)
  def partitionCode(i: Int): Int = partitions(i)
  def partitionValues(i: Int): Map[String, Option[String]] = dictionary.values(partitions(i))
  /** The row's deletion vector, or null. */
  def deletionVector(i: Int): DeletionVectorDescriptor = if (vectors == null) null else vectors(i)
  /** The id of row `i`'s deletion vector ("" without one): with its path, the row's key in log replay. */
  def dvId(i: Int): String = Option(deletionVector(i)).fold("")(_.uniqueId)

  def addFile(i: Int): AddFile = {
    val r = rare.getOrElse(i.toLong, null)
    AddFile(paths(i), partitionValues(i), sizes(i), times(i), dataChange = false, Option(stats(i)),
      if (r == null) Map.empty else r.tags, if (r == null) None else r.extra, Option(deletionVector(i)))
  }

  def removeFile(i: Int): RemoveFile = {
    val r = rare.getOrElse(i.toLong, null)
    RemoveFile(paths(i), Some(times(i)).filter(_ != NoTime), dataChange = false,
      if (r == null) None else r.extendedFileMetadata,
      Some(partitions(i)).filter(_ != NoPartitionValues).map(dictionary.values),
      Some(sizes(i)).filter(_ != NoSize), Option(stats(i)), if (r == null) Map.empty else r.tags,
      if (r == null) None else r.extra, Option(deletionVector(i)))
  }

  /** Heap bytes of the columns (arrays as allocated; rare fields and the shared dictionary not counted). */
  def heapBytes: Long = paths.heapBytes + stats.heapBytes + sizes.length * 28L +
    (if (vectors == null) 0L else vectors.length * 4L + (0 until count).count(vectors(_) != null) * 120L)
  /** Heap bytes of the columns without the statistics. */
  def heapBytesWithoutStats: Long = heapBytes - stats.heapBytes
}

private[log] object FileColumns {
  final case class Rare(tags: Map[String, String], extra: Option[ObjectNode], extendedFileMetadata: Option[Boolean])

  val NoSize: Long = -1L
  val NoTime: Long = Long.MinValue
  val NoPartitionValues: Int = -1
  /** `append`'s numRecords argument for an add: parse it from the statistics ([[StatsParser.recordsOnly]]). */
  private val ParseRecords: Long = Long.MinValue

  /**
   * The distinct partition-value maps of a table's files, each given an int code once. Shared by every snapshot
   * replayed from the same one (codes only grow), so a code means the same map in all of them.
   */
  final class PartitionDictionary {
    private val codes = new java.util.HashMap[Map[String, Option[String]], Integer]()
    @volatile private var maps = new Array[Map[String, Option[String]]](16)
    private var count = 0

    def code(pv: Map[String, Option[String]]): Int = synchronized {
      val known = codes.get(pv)
      if (known != null) known.intValue else {
        if (count == maps.length) maps = java.util.Arrays.copyOf(maps, count * 2)
        maps(count) = pv
        codes.put(pv, count)
        count += 1
        count - 1
      }
    }

    def values(code: Int): Map[String, Option[String]] = maps(code)
    def size: Int = synchronized(count)
  }
}
