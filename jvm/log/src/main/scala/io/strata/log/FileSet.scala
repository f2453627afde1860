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
    baseIndex: KeyIndex,
    baseGroups: RowGroups,
    tail: FileColumns,
    tailIndex: KeyIndex,
    removed: java.util.BitSet,
    totals: LiveTotals) {
  private def b = base.length

  /** Entries in the set. */
  def size: Int = totals.count

  /** Positions of the live rows, in order (base rows first); built once, when read by index, 4 bytes a file. */
  private lazy val live: Array[Int] = {
    val out = new Array[Int](size)
    var i = removed.nextClearBit(0); var n = 0
    while (i < b + tail.length) { out(n) = i; n += 1; i = removed.nextClearBit(i + 1) }
    out
  }

  private def columns(pos: Int): FileColumns = if (pos < b) base else tail
  private def row(pos: Int): Int = if (pos < b) pos else pos - b

  def addFiles: IndexedSeq[AddFile] = new FileSet.View(size, i => { val p = live(i); columns(p).addFile(row(p)) })
  def removeFiles: IndexedSeq[RemoveFile] =
    new FileSet.View(size, i => { val p = live(i); columns(p).removeFile(row(p)) })

  /**
   * The live entries grouped by their partition values (one group per distinct map, in the order the table first
   * used them), each group's positions found and its actions built only when read: a plan that keeps 1 partition of
   * 1,000 builds 1/1,000 of the files. Listing the groups visits no file ([[LiveTotals]] counts them).
   */
  def byPartition: Seq[(Map[String, Option[String]], IndexedSeq[AddFile])] = {
    val dict = base.partitionDictionary
    (0 until totals.codeLimit).filter(totals.countOf(_) > 0).map { code =>
      lazy val ps = positionsOf(code)
      dict.values(code) -> (new FileSet.View(totals.countOf(code), i => { val p = ps(i); columns(p).addFile(row(p)) }))
    }
  }

  /** The tail's rows by partition code, for this set only (its tail is its own). */
  private lazy val tailGroups = new RowGroups(tail)

  /** Live positions of partition code `code`, in order. */
  private def positionsOf(code: Int): Array[Int] = {
    val out = new Array[Int](totals.countOf(code))
    var n = 0
    baseGroups.foreachRow(code)(r => if (!removed.get(r)) { out(n) = r; n += 1 })
    tailGroups.foreachRow(code)(r => if (!removed.get(b + r)) { out(n) = b + r; n += 1 })
    if (n != out.length) throw new IllegalStateException(s"Partition $code: counted ${out.length} files, found $n.")
    out
  }

  /** Rows in the tail (tests: a compaction empties it). */
  private[log] def tailLength: Int = tail.length

  def sizeInBytes: Long = totals.bytes
  def hasDeletionVectors: Boolean = totals.withDeletionVectors > 0

  /** Heap bytes of this set's columns and indexes (the base's are shared with other snapshots). */
  def heapBytes: Long = base.heapBytes + tail.heapBytes + baseIndex.heapBytes + tailIndex.heapBytes + removed.size / 8
  def heapBytesWithoutStats: Long =
    base.heapBytesWithoutStats + tail.heapBytesWithoutStats + baseIndex.heapBytes + tailIndex.heapBytes + removed.size / 8

  /** A builder that starts from this set and leaves it unchanged. */
  def update(): FileSet.Builder = {
    val newTail = new FileColumns(math.max(16, tail.length * 2), base.partitionDictionary)
    (0 until tail.length).foreach(i => newTail.copyRow(tail, i))
    new FileSet.Builder(tablePath, base, baseIndex, baseGroups, newTail, tailIndex.copy(),
      removed.clone().asInstanceOf[java.util.BitSet], totals.copy())
  }
}

private[log] object FileSet {
  def newBuilder(tablePath: Path, expected: Int = 16): Builder = {
    val dict = new FileColumns.PartitionDictionary
    val empty = new FileColumns(0, dict)
    new Builder(tablePath, empty, new KeyIndex(0), new RowGroups(empty), new FileColumns(expected, dict),
      new KeyIndex(expected), new java.util.BitSet(), new LiveTotals())
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
      baseGroups: RowGroups,
      tail: FileColumns,
      tailIndex: KeyIndex,
      removed: java.util.BitSet,
      totals: LiveTotals) {
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
        if (p >= b) { tailIndex.remove(k, r => keyOf(tail, r) == k); totals.removed(tail, p - b) }
        else totals.removed(base, p)
      }
    }

    /** Adds (or replaces) the entry with key `k`. */
    def put(f: AddFile, k: String): Unit = { remove(k); added(k, tail.add(f)) }
    def put(r: RemoveFile, k: String): Unit = { remove(k); added(k, tail.add(r)) }
    private def added(k: String, r: Int): Unit = { tailIndex.put(k, r); totals.added(tail, r) }

    def result(): FileSet = {
      val removedCount = b + tail.length - totals.count
      if (b == 0) new FileSet(tablePath, tail, tailIndex, new RowGroups(tail), new FileColumns(0, tail.partitionDictionary),
        new KeyIndex(0), removed, totals.copy()) // a first build: the tail becomes the base as it is (rows stay put)
      else if (tail.length > math.max(1024, b / 4) || removedCount > math.max(1024, b / 2)) compacted()
      else new FileSet(tablePath, base, baseIndex, baseGroups, tail, tailIndex, removed, totals.copy())
    }

    /** One new base of the live rows: removed rows and the tail's separate index are gone. */
    private def compacted(): FileSet = {
      val liveCount = totals.count
      val cols = new FileColumns(liveCount, base.partitionDictionary)
      val index = new KeyIndex(liveCount)
      var p = removed.nextClearBit(0)
      while (p < b + tail.length) {
        val r = if (p < b) cols.copyRow(base, p) else cols.copyRow(tail, p - b)
        index.put(keyOf(cols, r), r)
        p = removed.nextClearBit(p + 1)
      }
      new FileSet(tablePath, cols, index, new RowGroups(cols), new FileColumns(0, base.partitionDictionary),
        new KeyIndex(0), new java.util.BitSet(), totals.copy())
    }
  }
}
