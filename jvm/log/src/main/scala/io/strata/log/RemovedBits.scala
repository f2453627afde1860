package io.strata.log

/**
 * A bit per row of a [[FileSet]] (set: a later action removed the row), in chunks of 65,536 bits shared between the
 * sets replayed from one another: a builder copies a chunk only when it first sets a bit in it, so a commit that
 * removes k files copies at most k chunks (8 KiB each), never the whole set of bits.
 */
private[log] final class RemovedBits private (private var chunks: Array[Array[Long]], private var owned: Array[Boolean]) {
  import RemovedBits._

  def this() = this(new Array[Array[Long]](0), new Array[Boolean](0))

  def get(i: Int): Boolean = {
    val c = i >>> ChunkShift
    c < chunks.length && chunks(c) != null && (chunks(c)((i & ChunkMask) >>> 6) & (1L << i)) != 0
  }

  def set(i: Int): Unit = {
    val c = i >>> ChunkShift
    if (c >= chunks.length) {
      val n = math.max(c + 1, chunks.length * 2)
      chunks = java.util.Arrays.copyOf(chunks, n); owned = java.util.Arrays.copyOf(owned, n)
    }
    if (!owned(c)) {
      chunks(c) = if (chunks(c) == null) new Array[Long](ChunkWords) else chunks(c).clone()
      owned(c) = true
    }
    chunks(c)((i & ChunkMask) >>> 6) |= 1L << i
  }

  /** The first row at or after `from` whose bit is clear. */
  def nextClearBit(from: Int): Int = {
    var i = from
    while (get(i)) i += 1
    i
  }

  /** Some row in `from` until `until` has its bit set (a word at a time; a chunk never set is skipped whole). */
  def anySet(from: Int, until: Int): Boolean = {
    var i = from
    while (i < until) {
      val c = i >>> ChunkShift
      if (c >= chunks.length) return false
      val chunkEnd = math.min(until, (c + 1) << ChunkShift)
      val words = chunks(c)
      if (words == null) i = chunkEnd
      else while (i < chunkEnd) {
        val base = i & ~63
        val wordEnd = math.min(chunkEnd, base + 64)
        val mask = (-1L << (i - base)) & (if (wordEnd - base == 64) -1L else (1L << (wordEnd - base)) - 1)
        if ((words((i & ChunkMask) >>> 6) & mask) != 0) return true
        i = wordEnd
      }
    }
    false
  }

  /** The same bits, sharing every chunk: setting a bit in either copies that chunk first. */
  def fork(): RemovedBits = {
    java.util.Arrays.fill(owned, false) // this side copies too from now on: the chunks are shared
    new RemovedBits(chunks.clone(), new Array[Boolean](chunks.length))
  }

  def heapBytes: Long = chunks.length * 8L + chunks.count(_ != null) * ChunkWords * 8L
}

private object RemovedBits {
  val ChunkShift = 16
  val ChunkMask: Int = (1 << ChunkShift) - 1
  val ChunkWords: Int = (1 << ChunkShift) / 64
}
