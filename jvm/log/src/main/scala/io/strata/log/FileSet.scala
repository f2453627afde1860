package io.strata.log


import org.apache.hadoop.fs.Path

/**
 * The file actions of one snapshot (its live files, or its tombstones), keyed as log replay keys them (path and
 * deletion vector id, PROTOCOL.md "Action Reconciliation"). Held as a large `base` shared by every snapshot replayed
 * from it, a small `tail` of entries added since, and a bit per row of either that a later action removed. Replaying
 * one more commit therefore copies the tail and the bits (an eighth of a byte per file), never the base; when the
 * tail outgrows a quarter of the base, the two are compacted into a new base.
 */
private[log] final class FileSet private (
    val tablePath: Path,
    base: FileColumns,
    baseIndex: FileSet.KeyIndex,
    tail: FileColumns,
    tailIndex: FileSet.KeyIndex,
    removed: java.util.BitSet) {
  private def b = base.length

  /** Entries in the set. */
  val size: Int = b + tail.length - removed.cardinality()

  /** Positions of the live rows, in order (base rows first); built once, 4 bytes a file. */
  private lazy val live: Array[Int] = {
    val out = new Array[Int](size)
    var i = removed.nextClearBit(0); var n = 0
    while (i < b + tail.length) { out(n) = i; n += 1; i = removed.nextClearBit(i + 1) }
    out
  }

  private def columns(pos: Int): FileColumns = if (pos < b) base else tail
  private def row(pos: Int): Int = if (pos < b) pos else pos - b

  def addFiles: IndexedSeq[AddFile] = new FileSet.View(live.length, i => { val p = live(i); columns(p).addFile(row(p)) })
  def removeFiles: IndexedSeq[RemoveFile] =
    new FileSet.View(live.length, i => { val p = live(i); columns(p).removeFile(row(p)) })

  /**
   * The live entries grouped by their partition values (one group per distinct map, in order of first use), each
   * group's actions built only when read: a plan that keeps 1 partition of 1,000 builds 1/1,000 of the files.
   */
  def byPartition: Seq[(Map[String, Option[String]], IndexedSeq[AddFile])] = {
    val dict = base.partitionDictionary
    groups.map { case (code, ps) => dict.values(code) -> new FileSet.View(ps.length, i => { val p = ps(i); columns(p).addFile(row(p)) }) }
  }

  /**
   * As [[byPartition]], but each group's statistics and deletion vectors only, read in place from the columns: an
   * aggregate answered from the log touches no `AddFile` (a million-file count builds none).
   */
  def statsByPartition: Seq[(Map[String, Option[String]], FileStatistics)] = {
    val dict = base.partitionDictionary
    groups.map { case (code, ps) =>
      dict.values(code) -> new FileStatistics(ps.length, i => { val p = ps(i); columns(p).statsJson(row(p)).orNull },
        i => { val p = ps(i); columns(p).deletionVector(row(p)) })
    }
  }

  /** Live positions by partition code (4 bytes a file), built once. */
  private lazy val groups: Seq[(Int, Array[Int])] = {
    val counts = new java.util.HashMap[Integer, Integer]()
    val order = scala.collection.mutable.ArrayBuffer.empty[Int]
    live.foreach { p =>
      val c = columns(p).partitionCode(row(p))
      val n = counts.get(c)
      if (n == null) { counts.put(c, 1); order += c } else counts.put(c, n + 1)
    }
    val byCode = order.map(c => c -> new Array[Int](counts.get(c))).toMap
    val filled = new java.util.HashMap[Integer, Integer]()
    live.foreach { p =>
      val c = columns(p).partitionCode(row(p))
      val i = Option(filled.get(c)).fold(0)(_.intValue)
      byCode(c)(i) = p
      filled.put(c, i + 1)
    }
    order.toSeq.map(c => c -> byCode(c))
  }

  lazy val sizeInBytes: Long = live.iterator.map(p => columns(p).size(row(p))).sum
  lazy val hasDeletionVectors: Boolean = live.exists(p => columns(p).deletionVector(row(p)) != null)

  /** Heap bytes of this set's columns and indexes (the base's are shared with other snapshots). */
  def heapBytes: Long = base.heapBytes + tail.heapBytes + baseIndex.heapBytes + tailIndex.heapBytes + removed.size / 8
  def heapBytesWithoutStats: Long =
    base.heapBytesWithoutStats + tail.heapBytesWithoutStats + baseIndex.heapBytes + tailIndex.heapBytes + removed.size / 8

  /** A builder that starts from this set and leaves it unchanged. */
  def update(): FileSet.Builder = {
    val newTail = new FileColumns(math.max(16, tail.length * 2), base.partitionDictionary)
    (0 until tail.length).foreach(i => newTail.copyRow(tail, i))
    new FileSet.Builder(tablePath, base, baseIndex, newTail, tailIndex.copy(), removed.clone().asInstanceOf[java.util.BitSet])
  }
}

private[log] object FileSet {
  def newBuilder(tablePath: Path, expected: Int = 16): Builder = {
    val dict = new FileColumns.PartitionDictionary
    new Builder(tablePath, new FileColumns(0, dict), new KeyIndex(0), new FileColumns(expected, dict),
      new KeyIndex(expected), new java.util.BitSet())
  }

  private final class View[A](n: Int, at: Int => A) extends IndexedSeq[A] {
    def length: Int = n
    def apply(i: Int): A = { if (i < 0 || i >= n) throw new IndexOutOfBoundsException(s"$i of $n"); at(i) }
  }

  /**
   * The replay key of a file action's path: the path relative to the table, URI-decoded, when it lies under the table
   * (as nearly every path does: then no `Path` is built for it), else the absolute path. Relative and absolute
   * spellings of one file get one key, as in delta-spark.
   */
  def key(tablePath: Path, path: String, dvId: String): String = {
    val simple = path.nonEmpty && path.charAt(0) != '/' && path.indexOf('%') < 0 && path.indexOf(':') < 0
    val relative = if (simple) path else {
      val absPath = Snapshot.absolutePath(tablePath, path)
      val (abs, root) = (absPath.toUri, tablePath.toUri)
      val rootPath = if (root.getPath.endsWith("/")) root.getPath else root.getPath + "/"
      if (abs.getScheme == root.getScheme && abs.getAuthority == root.getAuthority && abs.getPath.startsWith(rootPath))
        abs.getPath.substring(rootPath.length)
      else "\u0000" + absPath.toString // Path's form: "file:///x" and "file:/x" are one file
    }
    if (dvId.isEmpty) relative else relative + "\u0000" + dvId
  }

  /** Builds a [[FileSet]]: puts and removes by key, in log order. */
  final class Builder private[FileSet] (
      tablePath: Path,
      base: FileColumns,
      baseIndex: KeyIndex,
      tail: FileColumns,
      tailIndex: KeyIndex,
      removed: java.util.BitSet) {
    private def b = base.length
    private def keyOf(cols: FileColumns, r: Int) = key(tablePath, cols.path(r), cols.dvId(r))

    private def find(k: String): Int = {
      val t = tailIndex.find(k, r => keyOf(tail, r) == k)
      if (t >= 0) b + t else baseIndex.find(k, r => keyOf(base, r) == k)
    }

    /** The replay key of a file action of this table. */
    def keyOf(path: String, dvId: String): String = key(tablePath, path, dvId)

    /** Removes the entry with key `k`, if there is one. */
    def remove(k: String): Unit = if (b + tail.length > 0) {
      val p = find(k)
      if (p >= 0 && !removed.get(p)) {
        removed.set(p)
        if (p >= b) tailIndex.remove(k, r => keyOf(tail, r) == k)
      }
    }

    /** Adds (or replaces) the entry with key `k`. */
    def put(f: AddFile, k: String): Unit = { remove(k); tailIndex.put(k, tail.add(f)) }
    def put(r: RemoveFile, k: String): Unit = { remove(k); tailIndex.put(k, tail.add(r)) }

    def result(): FileSet = {
      val removedCount = removed.cardinality()
      if (b == 0) new FileSet(tablePath, tail, tailIndex, new FileColumns(0, tail.partitionDictionary), new KeyIndex(0),
        removed) // a first build: the tail becomes the base as it is (row positions do not move)
      else if (tail.length > math.max(1024, b / 4) || removedCount > math.max(1024, b / 2)) compacted()
      else new FileSet(tablePath, base, baseIndex, tail, tailIndex, removed)
    }

    /** One new base of the live rows: removed rows and the tail's separate index are gone. */
    private def compacted(): FileSet = {
      val liveCount = b + tail.length - removed.cardinality()
      val cols = new FileColumns(liveCount, base.partitionDictionary)
      val index = new KeyIndex(liveCount)
      var p = removed.nextClearBit(0)
      while (p < b + tail.length) {
        val r = if (p < b) cols.copyRow(base, p) else cols.copyRow(tail, p - b)
        index.put(keyOf(cols, r), r)
        p = removed.nextClearBit(p + 1)
      }
      new FileSet(tablePath, cols, index, new FileColumns(0, base.partitionDictionary), new KeyIndex(0),
        new java.util.BitSet())
    }
  }

  /**
   * Key → row, open addressing on the key's hash: 8 bytes a slot, two slots a row (a `HashMap[String, Int]` costs
   * about 80 bytes an entry). Keys are not stored: a candidate row is confirmed by recomputing its key (`matches`).
   */
  private[log] final class KeyIndex(expected: Int) {
    private var slots = new Array[Int](capacityFor(expected)) // row + 1; 0 = empty; -1 = deleted
    private var hashes = new Array[Int](slots.length)
    private var used = 0

    private def capacityFor(n: Int): Int = Integer.highestOneBit(math.max(8, n * 2 + 1)) * 2

    def heapBytes: Long = slots.length * 8L

    def copy(): KeyIndex = {
      val c = new KeyIndex(0)
      c.slots = slots.clone(); c.hashes = hashes.clone(); c.used = used
      c
    }

    private def mix(h: Int): Int = { val x = h * 0x9E3779B9; x ^ (x >>> 16) }

    def find(k: String, matches: Int => Boolean): Int = {
      val h = mix(k.hashCode); val mask = slots.length - 1
      var i = h & mask
      while (slots(i) != 0) {
        if (slots(i) > 0 && hashes(i) == h && matches(slots(i) - 1)) return slots(i) - 1
        i = (i + 1) & mask
      }
      -1
    }

    def put(k: String, row: Int): Unit = {
      if ((used + 1) * 2 > slots.length) rehash(slots.length * 2)
      val h = mix(k.hashCode); val mask = slots.length - 1
      var i = h & mask
      while (slots(i) > 0) i = (i + 1) & mask
      if (slots(i) == 0) used += 1
      slots(i) = row + 1; hashes(i) = h
    }

    def remove(k: String, matches: Int => Boolean): Unit = {
      val h = mix(k.hashCode); val mask = slots.length - 1
      var i = h & mask
      while (slots(i) != 0) {
        if (slots(i) > 0 && hashes(i) == h && matches(slots(i) - 1)) { slots(i) = -1; return }
        i = (i + 1) & mask
      }
    }

    private def rehash(n: Int): Unit = {
      val (oldSlots, oldHashes) = (slots, hashes)
      slots = new Array[Int](n); hashes = new Array[Int](n); used = 0
      val mask = n - 1
      var j = 0
      while (j < oldSlots.length) {
        if (oldSlots(j) > 0) {
          var i = oldHashes(j) & mask
          while (slots(i) != 0) i = (i + 1) & mask
          slots(i) = oldSlots(j); hashes(i) = oldHashes(j); used += 1
        }
        j += 1
      }
    }
  }
}
