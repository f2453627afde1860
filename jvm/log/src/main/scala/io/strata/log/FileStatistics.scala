package io.strata.log

/**
 * The statistics and deletion vector of each file of a group of live files, read where they are held (no `AddFile`
 * is built): what skipping and aggregates answered from the log need, column-wise. File `i` sits at row `rowOf(i)`
 * of the run whose typed statistics are `tableOf(i)` ([[TypedStats]]: columns parsed once per run, kept there).
 */
final class FileStatistics private[log] (val length: Int, stats: Int => String,
                                         vectors: Int => DeletionVectorDescriptor,
                                         tableOf: Int => TypedStats, rowOf: Int => Int) {
  /** The file's statistics JSON, or null when it has none. */
  def statsJson(i: Int): String = stats(i)
  /** Rows the file's deletion vector marks deleted (0 without one). */
  def deletedRows(i: Int): Long = { val dv = vectors(i); if (dv == null) 0L else dv.cardinality }

  /** The files at `indices` of this group, in that order. */
  def subset(indices: IndexedSeq[Int]): FileStatistics =
    new FileStatistics(indices.length, i => stats(indices(i)), i => vectors(indices(i)), i => tableOf(indices(i)),
      i => rowOf(indices(i)))

  /** The chunks of typed statistics these files sit in, each once (files of a chunk are adjacent: compare to the last). */
  private def chunksInto(out: java.util.Set[TypedStats#Chunk]): Unit = {
    var last: AnyRef = null
    var i = 0
    while (i < length) {
      val t = tableOf(i)
      val c = t.chunk(t.position(rowOf(i)) / TypedStats.ChunkRows)
      if (c ne last) { out.add(c); last = c }
      i += 1
    }
  }

  /** The statistics of `columns` for these files, from the typed columns (built now if no query built them yet). */
  def values(columns: IndexedSeq[StatsColumn]): StatsValues = new StatsValues {
    // File i's chunk and slot, looked up once for all the values read of it (readers go file by file).
    private var at = -1
    private var slot = 0
    private var chunk: TypedStats#Chunk = null
    private var cols: IndexedSeq[TypedStatsColumn] = null
    private def seek(i: Int): Unit = if (i != at) {
      val t = tableOf(i)
      val pos = t.position(rowOf(i))
      val c = t.chunk(pos / TypedStats.ChunkRows)
      if (c ne chunk) { cols = c.columnsOf(columns); chunk = c }
      slot = pos % TypedStats.ChunkRows; at = i
    }
    def length: Int = FileStatistics.this.length
    def numRecords(i: Int): Long = { seek(i); chunk.numRecords(slot) }
    def tightBounds(i: Int): Int = { seek(i); chunk.tightBounds(slot) }
    def nullCount(c: Int, i: Int): Long = { seek(i); cols(c).nullCounts(slot) }
    def min(c: Int, i: Int): AnyRef = { seek(i); cols(c).mins(slot) }
    def max(c: Int, i: Int): AnyRef = { seek(i); cols(c).maxs(slot) }
  }
}

object FileStatistics {
  /**
   * Builds the typed `columns` of every chunk holding a file of `groups`, chunks in parallel: a query over many files
   * (a whole table's count(*), skipping without a partition filter) parses on every core, where reading the groups
   * file by file would parse on one. Each chunk still builds a column once (its own lock).
   */
  def prepare(groups: Iterable[FileStatistics], columns: IndexedSeq[StatsColumn]): Unit = {
    val chunks = new java.util.LinkedHashSet[TypedStats#Chunk]()
    groups.foreach(_.chunksInto(chunks))
    if (chunks.size > 1) new java.util.ArrayList(chunks).parallelStream().forEach(c => c.columnsOf(columns))
  }

  /** The statistics of files already built as actions (an explicit file list, e.g. a streaming micro-batch). */
  def of(files: IndexedSeq[(Option[String], Option[DeletionVectorDescriptor])]): FileStatistics = {
    lazy val table = TypedStats.of(files.map(_._1.orNull))
    new FileStatistics(files.length, i => files(i)._1.orNull, i => files(i)._2.orNull, _ => table, i => i)
  }
}
