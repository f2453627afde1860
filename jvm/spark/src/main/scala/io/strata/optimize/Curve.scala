package io.strata.optimize

/**
 * A space-filling curve through the grid of the layout columns' range ids ([[ZOrder]]): rows are range-partitioned
 * and sorted by their position on it. delta-spark lays liquid clustering out by the Hilbert curve when there are two
 * or more columns and by Z-order for one (both are then the range id itself); OPTIMIZE ZORDER BY uses Z-order.
 */
sealed trait Curve extends Serializable {
  /** Its name in a ZCube's `ZCUBE_ZORDER_CURVE` tag. */
  def name: String
  /** The position of the point `ids` (each below `2^bits`; `ids.length * bits` at most 63) along the curve. */
  def index(ids: Array[Int], bits: Int): Long
}

object Curve {
  /** Bits interleaved round-robin, most significant first: cheap, but with long jumps between quadrants. */
  case object ZOrder extends Curve {
    val name = "zorder"
    def index(ids: Array[Int], bits: Int): Long = interleave(ids, bits)
  }

  /**
   * The Hilbert curve: consecutive positions are neighbouring cells (one coordinate differs by one), so a file's
   * run of positions is a compact region, with narrower min/max ranges in every column than a Z-order run. Computed
   * by Skilling's transform ("Programming the Hilbert curve", AIP Conf. Proc. 707, 2004): the coordinates are
   * rotated and reflected level by level into the curve's "transposed" form, whose bits interleaved are the index.
   */
  case object Hilbert extends Curve {
    val name = "hilbert"
    def index(ids: Array[Int], bits: Int): Long = {
      val x = ids.clone()
      val n = x.length
      if (n > 1 && bits > 0) {
        var q = 1 << (bits - 1)
        while (q > 1) { // from the top level down: undo each sub-cube's rotation / reflection
          val p = q - 1
          var i = 0
          while (i < n) {
            if ((x(i) & q) != 0) x(0) ^= p
            else { val t = (x(0) ^ x(i)) & p; x(0) ^= t; x(i) ^= t }
            i += 1
          }
          q >>>= 1
        }
        var i = 1
        while (i < n) { x(i) ^= x(i - 1); i += 1 } // Gray code
        var t = 0
        q = 1 << (bits - 1)
        while (q > 1) { if ((x(n - 1) & q) != 0) t ^= q - 1; q >>>= 1 }
        i = 0
        while (i < n) { x(i) ^= t; i += 1 }
      }
      interleave(x, bits)
    }
  }

  /** The curve of a liquid clustering by `columns` columns (delta-spark's choice). */
  def forClustering(columns: Int): Curve = if (columns > 1) Hilbert else ZOrder

  /** `ids`' bits (`bits` each, most significant first) interleaved round-robin. */
  def interleave(ids: Array[Int], bits: Int): Long = {
    var z = 0L
    var bit = bits - 1
    while (bit >= 0) {
      var i = 0
      while (i < ids.length) { z = (z << 1) | ((ids(i) >>> bit) & 1); i += 1 }
      bit -= 1
    }
    z
  }
}
