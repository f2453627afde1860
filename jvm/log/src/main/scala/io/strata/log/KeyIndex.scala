package io.strata.log

/**
 * Key → row, open addressing on the key's hash: 8 bytes a slot, two slots a row (a `HashMap[String, Int]` costs
 * about 80 bytes an entry). Keys are not stored: a candidate row is confirmed by recomputing its key (`matches`).
 * Only added to: a removed row stays, and `matches` passes over it.
 */
private[log] final class KeyIndex(expected: Int) {
  private var slots = new Array[Int](capacityFor(expected)) // row + 1; 0 = empty; -1 = deleted
  private var hashes = new Array[Int](slots.length)
  private var used = 0

  private def capacityFor(n: Int): Int = Integer.highestOneBit(math.max(8, n * 2 + 1)) * 2

  def heapBytes: Long = slots.length * 8L

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

  def put(k: String, row: Int): Unit = putHashed(mix(k.hashCode), row)

  /** Adds every entry of `other` with its row moved by `offset` (runs merged into one: no key is computed again). */
  def putAll(other: KeyIndex, offset: Int): Unit = {
    var j = 0
    while (j < other.slots.length) {
      if (other.slots(j) > 0) putHashed(other.hashes(j), other.slots(j) - 1 + offset)
      j += 1
    }
  }

  private def putHashed(h: Int, row: Int): Unit = {
    if ((used + 1) * 2 > slots.length) rehash(slots.length * 2)
    val mask = slots.length - 1
    var i = h & mask
    while (slots(i) > 0) i = (i + 1) & mask
    if (slots(i) == 0) used += 1
    slots(i) = row + 1; hashes(i) = h
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
