package io.strata.log


import org.apache.hadoop.fs.Path

/**
 * The file actions of one snapshot (its live files, or its tombstones), keyed as log replay keys them (path and
 * deletion vector id, PROTOCOL.md "Action Reconciliation"). Held as runs of rows that never change once built,
 * shared by every snapshot replayed from the one that built them: a large base, then smaller runs of the entries
 * added since, each commit's in a run of its own, and a bit per row that a later action removed ([[RemovedBits]]).
 * What the set knows without visiting its files (count, bytes, files per partition) is kept as entries come and go
 * ([[LiveTotals]]). Replaying one more commit therefore costs what the commit holds: it copies no file of the base
 * or of the runs. Runs merge when the newest grows to half the one before it (each row is copied a logarithmic
 * number of times); when removed rows outnumber half the live ones, everything is compacted into one new base.
 */
private[log] final class FileSet private (
    val tablePath: Path,
    runs: Vector[FileSet.Run],
    removed: RemovedBits,
    totals: LiveTotals) {
  private val rows = runs.last.end
  private val starts = runs.map(_.start).toArray

  /** Entries in the set. */
  def size: Int = totals.count

  /** Positions of the live rows, in order; built once, when first read by index, 4 bytes a file. */
  private lazy val live: Array[Int] = {
    val out = new Array[Int](size)
    var i = removed.nextClearBit(0); var n = 0
    while (i < rows) { out(n) = i; n += 1; i = removed.nextClearBit(i + 1) }
    out
  }

  private def run(pos: Int): FileSet.Run = runs(FileSet.runOf(starts, pos))
  private def add(pos: Int): AddFile = { val r = run(pos); r.cols.addFile(pos - r.start) }
  private def rm(pos: Int): RemoveFile = { val r = run(pos); r.cols.removeFile(pos - r.start) }

  def addFiles: IndexedSeq[AddFile] = new FileSet.View(size, i => add(live(i)))
  def removeFiles: IndexedSeq[RemoveFile] = new FileSet.View(size, i => rm(live(i)))

  /**
   * The live entries grouped by their partition values (one group per distinct map, in the order the table first
   * used them), each group's rows found and its actions built only when read: a plan that keeps 1 partition of 1,000
   * builds 1/1,000 of the files. Listing the groups visits no file ([[LiveTotals]] counts them).
   */
  def byPartition: Seq[(Map[String, Option[String]], IndexedSeq[AddFile])] = {
    val dict = runs.head.cols.partitionDictionary
    (0 until totals.codeLimit).filter(totals.countOf(_) > 0).map { code =>
      lazy val ps = positionsOf(code)
      dict.values(code) -> (new FileSet.View(totals.countOf(code), i => add(ps(i))))
    }
  }

  /** Live positions of partition code `code`, in order. */
  private def positionsOf(code: Int): Array[Int] = {
    val out = new Array[Int](totals.countOf(code))
    var n = 0
    runs.foreach(r => r.groups.foreachRow(code) { row =>
      if (!removed.get(r.start + row)) { out(n) = r.start + row; n += 1 }
    })
    if (n != out.length) throw new IllegalStateException(s"Partition $code: counted ${out.length} files, found $n.")
    out
  }

  /**
   * As [[byPartition]] (same groups, same order), but each group's statistics and deletion vectors only, read in
   * place from the columns: an aggregate answered from the log touches no `AddFile` (a million-file count builds none).
   */
  def statsByPartition: Seq[(Map[String, Option[String]], FileStatistics)] = {
    val dict = runs.head.cols.partitionDictionary
    lazy val whole = runs.map(r => !removed.anySet(r.start, r.end)) // runs without a removed row: once, not per group
    (0 until totals.codeLimit).filter(totals.countOf(_) > 0).map { code =>
      dict.values(code) -> new FileStatistics(totals.countOf(code), segmentsOf(code, whole))
    }
  }

  /**
   * The live files of partition code `code` as one segment per run holding some: the code's range of positions in
   * the run's chunk order ([[RowGroups.range]]), whole when no row of the run is removed (nothing visited), else the
   * positions of its live rows.
   */
  private def segmentsOf(code: Int, whole: IndexedSeq[Boolean]): IndexedSeq[FileStatistics.Segment] =
    runs.indices.flatMap { k =>
      val r = runs(k)
      val (from, until) = r.groups.range(code)
      if (from == until) None
      else if (whole(k)) Some(new FileStatistics.Segment(r.stats, until - from, from, null))
      else {
        val live = Array.newBuilder[Int]
        (from until until).foreach(p => if (!removed.get(r.start + r.stats.rowAt(p))) live += p)
        val ps = live.result()
        if (ps.isEmpty) None else Some(new FileStatistics.Segment(r.stats, ps.length, 0, ps))
      }
    }

  def sizeInBytes: Long = totals.bytes
  def hasDeletionVectors: Boolean = totals.withDeletionVectors > 0

  /** Rows in the runs after the base (tests: a compaction or a merge into the base empties them). */
  private[log] def tailLength: Int = rows - runs.head.end
  /** Rows removed but still held (tests: a compaction drops them). */
  private[log] def removedRows: Int = rows - size

  /** Heap bytes of this set's columns and indexes (most are shared with other snapshots). */
  def heapBytes: Long = runs.map(r => r.cols.heapBytes + r.index.heapBytes).sum + removed.heapBytes
  /** Heap bytes of the typed statistics columns built so far ([[TypedStats]]). */
  def typedStatsHeapBytes: Long = runs.map(r => r.stats.heapBytes).sum
  /** Statistics columns built from JSON by this set's runs (tests: each column once per run). */
  private[log] def statsColumnsBuilt: Long = runs.map(_.stats.columnsBuilt).sum
  /** Row parses by this set's runs' typed statistics (tests: a pruned query parses the chunks it reads only). */
  private[log] def statsRowsParsed: Long = runs.map(_.stats.rowsParsedCount).sum
  def heapBytesWithoutStats: Long = runs.map(r => r.cols.heapBytesWithoutStats + r.index.heapBytes).sum +
    removed.heapBytes

  /** A builder that starts from this set and leaves it unchanged. */
  def update(): FileSet.Builder = new FileSet.Builder(tablePath, runs, removed.fork(), totals.copy())
}

private[log] object FileSet {
  /** Rows `start` until `end` of a set's positions: columns and key index never changed once the run is built. */
  private[log] final class Run(val cols: FileColumns, val index: KeyIndex, val start: Int) {
    def end: Int = start + cols.length
    lazy val groups: RowGroups = new RowGroups(cols)
    /** The run's statistics as typed columns, each parsed when a query first needs it ([[TypedStats]]). */
    lazy val stats: TypedStats = new TypedStats(cols.length, cols, () => groups.order)
  }

  /** The run holding position `pos` (binary search over the runs' starts; a set has a few dozen runs at most). */
  private def runOf(starts: Array[Int], pos: Int): Int = {
    val i = java.util.Arrays.binarySearch(starts, pos)
    if (i >= 0) {
      var j = i // empty runs share a start: take the last of them
      while (j + 1 < starts.length && starts(j + 1) == pos) j += 1
      j
    } else -i - 2
  }

  def newBuilder(tablePath: Path, expected: Int = 16): Builder = {
    val empty = new Run(new FileColumns(0, new FileColumns.PartitionDictionary), new KeyIndex(0), 0)
    new Builder(tablePath, Vector(empty), new RemovedBits(), new LiveTotals(), expected)
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

  /** Builds a [[FileSet]]: puts and removes by key, in log order. New entries go to a run of their own. */
  final class Builder private[FileSet] (
      tablePath: Path,
      runs: Vector[Run],
      removed: RemovedBits,
      totals: LiveTotals,
      expected: Int = 16) {
    private val dict = runs.head.cols.partitionDictionary
    private val fresh = new Run(new FileColumns(expected, dict), new KeyIndex(expected), runs.last.end)
    private val starts = runs.map(_.start).toArray
    private def keyOf(cols: FileColumns, r: Int) = key(tablePath, cols.path(r), cols.dvId(r))

    /** The live position of key `k`, or -1: the newest run first (a removed row may still be in an index). */
    private def find(k: String): Int = {
      def in(r: Run): Int = {
        val row = r.index.find(k, i => !removed.get(r.start + i) && keyOf(r.cols, i) == k)
        if (row >= 0) r.start + row else -1
      }
      var p = in(fresh)
      var i = runs.size - 1
      while (p < 0 && i >= 0) { p = in(runs(i)); i -= 1 }
      p
    }

    /** The replay key of a file action of this table. */
    def keyOf(path: String, dvId: String): String = key(tablePath, path, dvId)

    /** Removes the entry with key `k`, if there is one. */
    def remove(k: String): Unit = if (totals.count > 0) {
      val p = find(k)
      if (p >= 0) {
        removed.set(p)
        val r = if (p >= fresh.start) fresh else runs(runOf(starts, p))
        totals.removed(r.cols, p - r.start)
      }
    }

    /** Adds (or replaces) the entry with key `k`. */
    def put(f: AddFile, k: String): Unit = { remove(k); added(k, fresh.cols.add(f)) }
    def put(r: RemoveFile, k: String): Unit = { remove(k); added(k, fresh.cols.add(r)) }
    private def added(k: String, row: Int): Unit = { fresh.index.put(k, row); totals.added(fresh.cols, row) }

    def result(): FileSet = {
      val all = (runs :+ fresh).filter(_.cols.length > 0)
      val rows = fresh.end
      if (all.isEmpty) new FileSet(tablePath, Vector(runs.head), removed.fork(), totals.copy())
      else if (rows - totals.count > math.max(1024, totals.count / 2)) compacted(all)
      else new FileSet(tablePath, merged(all), removed.fork(), totals.copy())
    }

    /** `all` with its newest runs merged while the newest is at least half the size of the one before it. */
    private def merged(all: Vector[Run]): Vector[Run] = {
      var rs = all
      while (rs.size >= 2 && rs(rs.size - 2).cols.length < 2 * rs.last.cols.length) {
        val (a, b) = (rs(rs.size - 2), rs.last)
        val cols = new FileColumns(a.cols.length + b.cols.length, dict)
        (0 until a.cols.length).foreach(cols.copyRow(a.cols, _))
        (0 until b.cols.length).foreach(cols.copyRow(b.cols, _))
        val index = new KeyIndex(cols.length)
        index.putAll(a.index, 0); index.putAll(b.index, a.cols.length)
        rs = rs.dropRight(2) :+ new Run(cols, index, a.start) // positions do not move: the removed bits hold
      }
      rs
    }

    /** One new base of the live rows: removed rows and the runs' separate indexes are gone. */
    private def compacted(all: Vector[Run]): FileSet = {
      val cols = new FileColumns(totals.count, dict)
      val index = new KeyIndex(totals.count)
      all.foreach { r =>
        (0 until r.cols.length).foreach { i =>
          if (!removed.get(r.start + i)) { val row = cols.copyRow(r.cols, i); index.put(keyOf(cols, row), row) }
        }
      }
      new FileSet(tablePath, Vector(new Run(cols, index, 0)), new RemovedBits(), totals.copy())
    }
  }
}
