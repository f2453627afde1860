package io.strata.log

/**
 * The statistics and deletion vector of each file of a group of live files, read where they are held (no `AddFile`
 * is built): what skipping and aggregates answered from the log need, column-wise. The files lie in segments, each a
 * run's typed statistics ([[TypedStats]]: columns parsed once per run, kept there) and the files' positions in its
 * chunk order; a partition's files in a run without removed rows are one range of positions, so the chunks holding
 * them are named without visiting them. The segments are found when first read (`length` is known before).
 */
final class FileStatistics private[log] (val length: Int, segmentsOf: => IndexedSeq[FileStatistics.Segment]) {
  import FileStatistics.Segment

  private lazy val segments: IndexedSeq[Segment] = {
    val s = segmentsOf.filter(_.length > 0)
    val found = s.map(_.length).sum
    if (found != length) throw new IllegalStateException(s"A group of $length files holds $found.")
    s
  }
  /** Index of each segment's first file (and `length` last). */
  private lazy val starts: Array[Int] = segments.scanLeft(0)(_ + _.length).toArray

  /** The segment holding file `i` (a group has a segment per run holding its files: few). */
  private def segmentIndex(i: Int): Int = {
    if (i < 0 || i >= length) throw new IndexOutOfBoundsException(s"$i of $length")
    val s = starts
    if (s.length == 2) 0 else {
      val k = java.util.Arrays.binarySearch(s, 0, s.length - 1, i) // starts ascend strictly: no empty segment
      if (k >= 0) k else -k - 2
    }
  }
  private def located[A](i: Int)(f: (Segment, Int) => A): A = {
    val k = segmentIndex(i)
    val seg = segments(k)
    f(seg, seg.row(i - starts(k)))
  }

  /** The file's statistics JSON, or null when it has none. */
  def statsJson(i: Int): String = located(i)((s, row) => s.stats.rows.statsString(row))
  /** Rows the file's deletion vector marks deleted (0 without one). */
  def deletedRows(i: Int): Long = located(i) { (s, row) =>
    val dv = s.stats.rows.deletionVector(row)
    if (dv == null) 0L else dv.cardinality
  }

  /** The files at `indices` of this group, in that order. */
  def subset(indices: IndexedSeq[Int]): FileStatistics = new FileStatistics(indices.length, {
    // Consecutive files of one segment stay one segment (of their positions).
    val out = IndexedSeq.newBuilder[Segment]
    var current = -1
    val positions = Array.newBuilder[Int]
    def flush(): Unit = if (current >= 0) {
      val ps = positions.result()
      out += new Segment(segments(current).stats, ps.length, 0, ps)
      positions.clear()
    }
    indices.foreach { i =>
      val k = segmentIndex(i)
      if (k != current) { flush(); current = k }
      positions += segments(k).position(i - starts(k))
    }
    flush()
    out.result()
  })

  /** The chunks of typed statistics these files sit in (a chunk may come more than once). */
  private def chunks: Iterator[TypedStats#Chunk] = segments.iterator.flatMap(_.chunks)

  /** The statistics of `columns` for these files, from the typed columns (built now if no query built them yet). */
  def values(columns: IndexedSeq[StatsColumn]): StatsValues = new StatsValues {
    // File i's chunk and slot, looked up once for all the values read of it (readers go file by file, so the
    // segment and the chunk of the file before are tried first).
    // (numRecords needs no chunk: it was read as the file entered the state.)
    private var at = -1
    private var pos = 0
    private var segment: Segment = null
    private var segmentFrom, segmentUntil = 0
    private var chunk: TypedStats#Chunk = null
    private var cols: IndexedSeq[TypedStatsColumn] = null
    private def seek(i: Int): Unit = if (i != at) {
      if (i < segmentFrom || i >= segmentUntil) {
        val k = segmentIndex(i)
        segment = segments(k); segmentFrom = starts(k); segmentUntil = starts(k + 1)
      }
      pos = segment.position(i - segmentFrom); at = i
    }
    /** File i's slot in its chunk, the chunk's columns built. */
    private def slot(i: Int): Int = {
      seek(i)
      val c = segment.stats.chunk(pos / TypedStats.ChunkRows)
      if (c ne chunk) { cols = c.columnsOf(columns); chunk = c }
      pos % TypedStats.ChunkRows
    }
    def length: Int = FileStatistics.this.length
    def numRecords(i: Int): Long = { seek(i); segment.stats.rows.numRecords(segment.stats.rowAt(pos)) }
    def tightBounds(i: Int): Int = { val s = slot(i); chunk.tightBounds(s) }
    def nullCount(c: Int, i: Int): Long = { val s = slot(i); cols(c).nullCounts(s) }
    def min(c: Int, i: Int): AnyRef = { val s = slot(i); cols(c).mins(s) }
    def max(c: Int, i: Int): AnyRef = { val s = slot(i); cols(c).maxs(s) }
  }
}

object FileStatistics {
  /**
   * `length` files of the run whose typed statistics are `stats`, by position in its chunk order: `first` until
   * `first + length` when `positions` is null, else `positions` (ascending for a partition's files; any order in a
   * [[FileStatistics.subset]]).
   */
  private[log] final class Segment(val stats: TypedStats, val length: Int, first: Int, positions: Array[Int]) {
    def position(j: Int): Int = if (positions == null) first + j else positions(j)
    def row(j: Int): Int = stats.rowAt(position(j))

    /** The chunks holding these files: named from the range, or found from the positions (each run of one once). */
    def chunks: Iterator[TypedStats#Chunk] =
      if (length == 0) Iterator.empty
      else if (positions == null)
        (first / TypedStats.ChunkRows to (first + length - 1) / TypedStats.ChunkRows).iterator.map(stats.chunk)
      else {
        val ks = positions.iterator.map(_ / TypedStats.ChunkRows)
        var last = -1
        ks.filter { k => val fresh = k != last; last = k; fresh }.map(stats.chunk)
      }
  }

  /**
   * Builds the typed `columns` of every chunk holding a file of `groups`, chunks in parallel: a query over many files
   * (a whole table's count(*), skipping without a partition filter) parses on every core, where reading the groups
   * file by file would parse on one. The chunks are named from the groups' ranges of positions, without a pass over
   * the files. Each chunk still builds a column once (its own lock). Without columns (a count: numRecords only)
   * there is nothing to build.
   */
  def prepare(groups: Iterable[FileStatistics], columns: IndexedSeq[StatsColumn]): Unit = if (columns.nonEmpty) {
    val chunks = new java.util.LinkedHashSet[TypedStats#Chunk]()
    groups.foreach(_.chunks.foreach(chunks.add))
    if (chunks.size > 1) new java.util.ArrayList(chunks).parallelStream().forEach(c => c.columnsOf(columns))
  }

  /** The statistics of files already built as actions (an explicit file list, e.g. a streaming micro-batch). */
  def of(files: IndexedSeq[(Option[String], Option[DeletionVectorDescriptor])]): FileStatistics =
    new FileStatistics(files.length, IndexedSeq(new Segment(TypedStats.of(files), files.length, 0, null)))
}
