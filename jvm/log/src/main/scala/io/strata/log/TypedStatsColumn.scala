package io.strata.log

/**
 * One column's statistics for the rows of a run, typed: null counts as longs (-1 unknown), bounds in primitive
 * arrays for numbers, dates and timestamps (a bit says which are present), strings as UTF-8 bytes in one array.
 * Filled once, row by row, in order; read-only afterwards.
 */
private[log] final class TypedStatsColumn(val column: StatsColumn, n: Int) {
  val nullCounts: Array[Long] = new Array[Long](n)
  val mins: TypedStatsColumn.Bounds = TypedStatsColumn.bounds(column.kind, n)
  val maxs: TypedStatsColumn.Bounds = TypedStatsColumn.bounds(column.kind, n)

  def heapBytes: Long = n * 8L + mins.heapBytes + maxs.heapBytes
}

private[log] object TypedStatsColumn {
  /** Bounds of one side (min or max), set in row order: `set(i, v)` with v as [[StatsParser]] yields it. */
  sealed trait Bounds {
    def set(i: Int, v: AnyRef): Unit
    def apply(i: Int): AnyRef
    def heapBytes: Long
  }

  def bounds(kind: StatsColumn.Kind, n: Int): Bounds = kind match {
    case StatsColumn.Floating(_) => new DoubleBounds(n)
    case StatsColumn.Str => new BytesBounds(n)
    case StatsColumn.Bool => new LongBounds(n, l => java.lang.Boolean.valueOf(l != 0), {
      case b: java.lang.Boolean => if (b) 1L else 0L
    })
    case StatsColumn.Decimal(p, s) if p <= 18 => new LongBounds(n, l => java.math.BigDecimal.valueOf(l, s), {
      case d: java.math.BigDecimal => d.unscaledValue.longValueExact
    })
    case StatsColumn.Decimal(_, _) => new ObjectBounds(n)
    case _ => new LongBounds(n, l => java.lang.Long.valueOf(l), { case l: java.lang.Long => l.longValue })
  }

  private final class LongBounds(n: Int, box: Long => AnyRef, unbox: PartialFunction[AnyRef, Long]) extends Bounds {
    private val values = new Array[Long](n)
    private val present = new java.util.BitSet(n)
    def set(i: Int, v: AnyRef): Unit = if (v != null) { values(i) = unbox(v); present.set(i) }
    def apply(i: Int): AnyRef = if (present.get(i)) box(values(i)) else null
    def heapBytes: Long = n * 8L + n / 8
  }

  private final class DoubleBounds(n: Int) extends Bounds {
    private val values = new Array[Double](n)
    private val present = new java.util.BitSet(n)
    def set(i: Int, v: AnyRef): Unit = v match {
      case d: java.lang.Double => values(i) = d; present.set(i)
      case _ =>
    }
    def apply(i: Int): AnyRef = if (present.get(i)) java.lang.Double.valueOf(values(i)) else null
    def heapBytes: Long = n * 8L + n / 8
  }

  /** Strings: bytes of all rows in one array with an end offset each (an absent bound is an empty slot + a bit). */
  private final class BytesBounds(n: Int) extends Bounds {
    private var bytes = new Array[Byte](math.max(16, n * 4))
    private val ends = new Array[Int](n)
    private val present = new java.util.BitSet(n)
    private var filled = 0 // rows set so far (rows are set in order)
    def set(i: Int, v: AnyRef): Unit = {
      val start = if (filled == 0) 0 else ends(filled - 1)
      while (filled < i) { ends(filled) = start; filled += 1 }
      v match {
        case b: Array[Byte] =>
          if (start + b.length > bytes.length) bytes = java.util.Arrays.copyOf(bytes, math.max(bytes.length * 2, start + b.length))
          System.arraycopy(b, 0, bytes, start, b.length)
          ends(i) = start + b.length
          present.set(i)
        case _ => ends(i) = start
      }
      filled = i + 1
    }
    def apply(i: Int): AnyRef = if (!present.get(i)) null else {
      val start = if (i == 0) 0 else ends(i - 1)
      java.util.Arrays.copyOfRange(bytes, start, ends(i))
    }
    def heapBytes: Long = bytes.length + n * 4L + n / 8
  }

  private final class ObjectBounds(n: Int) extends Bounds {
    private val values = new Array[AnyRef](n)
    def set(i: Int, v: AnyRef): Unit = values(i) = v
    def apply(i: Int): AnyRef = values(i)
    def heapBytes: Long = n * 4L + values.count(_ != null) * 64L
  }
}
