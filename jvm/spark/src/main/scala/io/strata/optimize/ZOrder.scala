package io.strata.optimize

import org.apache.spark.sql.{Column, DataFrame}
import org.apache.spark.sql.catalyst.{CatalystTypeConverters, InternalRow}
import org.apache.spark.sql.catalyst.expressions.{Expression, UnaryExpression}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.catalyst.util.TypeUtils
import org.apache.spark.sql.strata.SparkInternals
import org.apache.spark.sql.types._

/**
 * Clustering of a DataFrame's rows along a space-filling [[Curve]] (OPTIMIZE ZORDER BY: Z-order; liquid clustering:
 * delta-spark's choice, Hilbert for two or more columns). Each column's values are cut into
 * `2^bits` ranges of about equal row counts (bounds: quantiles of a row sample), a row's range ids give its
 * position on the curve (its z-value; Z-order: the ids' bits interleaved), and the rows are range-partitioned by
 * z-value into the requested number of files, sorted by z-value within each. Rows close in every column then share files, so the
 * files' min/max statistics stay narrow in all the columns at once and a filter on any of them skips most files.
 */
object ZOrder {
  private val ZColumn = "__strata_z_value"
  /** Sampled rows per range of a column: enough for even ranges, few enough to collect on the driver. */
  private val RowsPerRange = 20L
  private val MaxSample = 200000L
  private val MinSample = 10000L

  /** Bits of each column's range id: 10 (1,024 ranges) for up to 6 columns, fewer for more (62 bits in all). */
  def bitsPerColumn(columns: Int): Int = math.max(1, math.min(10, 62 / math.max(1, columns)))

  /** Types whose values can be range-partitioned (atomic and ordered). */
  def orderable(dt: DataType): Boolean = dt match {
    case _: NumericType | _: StringType | BinaryType | BooleanType | DateType | TimestampType | TimestampNTZType => true
    case _ => false
  }

  /**
   * `df`'s rows clustered by the Z-order of `columns` (paths: a top-level column, or a nested field) into `numFiles` partitions (one file each when written).
   * `rows`: how many rows `df` has, if known (the sample's fraction); otherwise they are counted.
   */
  def cluster(df: DataFrame, columns: Seq[Seq[String]], numFiles: Int, rows: Option[Long],
              curve: Curve = Curve.ZOrder): DataFrame = {
    val bits = bitsPerColumn(columns.size)
    val ranges = 1 << bits
    val types = columns.map(c => c.tail.foldLeft(df.schema(c.head).dataType)((t, p) =>
      t.asInstanceOf[org.apache.spark.sql.types.StructType](p).dataType))
    val total = rows.getOrElse(df.count())
    val wanted = math.min(MaxSample, math.max(MinSample, math.max(ranges * RowsPerRange, numFiles * 200L)))
    val fraction = if (total <= wanted) 1.0 else wanted.toDouble / total
    val projected = df.select(columns.map(c => df.col(quote(c))): _*)
    val sampled = (if (fraction >= 1.0) projected else projected.sample(withReplacement = false, fraction, 17L)).collect()
    val values: IndexedSeq[Array[Any]] = sampled.toIndexedSeq.map(r =>
      columns.indices.map(i => CatalystTypeConverters.convertToCatalyst(r.get(i))).toArray)
    val bounds = columns.indices.map(i => quantiles(values.map(_(i)).filter(_ != null), types(i), ranges))
    val searches = columns.indices.map(i => RangeIndex.search(bounds(i), types(i)))
    val zSample = values.map(v => curve.index(columns.indices.map(i =>
      if (v(i) == null) 0 else searches(i)(v(i))).toArray, bits))
    val cuts = quantiles(zSample, LongType, numFiles)
    val z = ZValue(columns.indices.map(i => RangeIndex(expression(df.col(quote(columns(i)))), bounds(i), types(i))),
      bits, curve)
    val withZ = df.withColumn(ZColumn, column(z))
    val fileId = RangeIndex(expression(withZ.col(ZColumn)), cuts, LongType)
    withZ.repartitionById(numFiles, column(fileId)).sortWithinPartitions(withZ.col(ZColumn)).drop(ZColumn)
  }

  private def expression(c: Column): Expression = SparkInternals.expression(c)
  private def column(e: Expression): Column = SparkInternals.column(e)

  private def quote(path: Seq[String]): String = path.map(p => "`" + p.replace("`", "``") + "`").mkString(".")

  /**
   * At most `ranges - 1` distinct bounds cutting the (Catalyst) values into `ranges` parts of about equal size:
   * a value's range is the number of bounds below it ([[RangeIndex]]).
   */
  def quantiles(values: IndexedSeq[Any], dataType: DataType, ranges: Int): IndexedSeq[Any] = {
    if (values.isEmpty || ranges <= 1) return IndexedSeq.empty
    val ord = TypeUtils.getInterpretedOrdering(dataType)
    val sorted = values.sorted(ord)
    val picked = (1 until ranges).map(i => sorted(((i.toLong * sorted.size) / ranges).toInt))
    picked.foldLeft(Vector.empty[Any]) { (acc, b) => if (acc.nonEmpty && ord.equiv(acc.last, b)) acc else acc :+ b }
  }
}

/**
 * The range a value falls in among sorted `bounds`: the number of bounds strictly below it (0 to bounds.size);
 * NULL is range 0. Integral, date and timestamp values are searched as longs, others with Spark's ordering.
 */
final case class RangeIndex(child: Expression, bounds: IndexedSeq[Any], valueType: DataType)
    extends UnaryExpression with CodegenFallback {
  override def dataType: DataType = IntegerType
  override def nullable: Boolean = false
  @transient private lazy val find: Any => Int = RangeIndex.search(bounds, valueType)

  override def eval(input: InternalRow): Any = {
    val v = child.eval(input)
    if (v == null) 0 else find(v)
  }

  override protected def withNewChildInternal(newChild: Expression): RangeIndex = copy(child = newChild)
  override def toString: String = s"range_index($child, ${bounds.size} bounds)"
}

object RangeIndex {
  def search(bounds: IndexedSeq[Any], dataType: DataType): Any => Int = dataType match {
    case ByteType | ShortType | IntegerType | DateType | LongType | TimestampType | TimestampNTZType =>
      val b = bounds.map(v => v.asInstanceOf[Number].longValue).toArray
      v => {
        val x = v.asInstanceOf[Number].longValue
        var lo = 0; var hi = b.length
        while (lo < hi) { val mid = (lo + hi) >>> 1; if (b(mid) < x) lo = mid + 1 else hi = mid }
        lo
      }
    case _ =>
      val ord = TypeUtils.getInterpretedOrdering(dataType)
      val b = bounds.toArray
      v => {
        var lo = 0; var hi = b.length
        while (lo < hi) { val mid = (lo + hi) >>> 1; if (ord.lt(b(mid), v)) lo = mid + 1 else hi = mid }
        lo
      }
  }
}

/** The z-value of a row: its columns' range ids (`bits` bits each) as a position on `curve`. */
final case class ZValue(children: Seq[Expression], bits: Int, curve: Curve) extends Expression with CodegenFallback {
  override def dataType: DataType = LongType
  override def nullable: Boolean = false

  override def eval(input: InternalRow): Any = {
    val ids = new Array[Int](children.size)
    var i = 0
    while (i < ids.length) { ids(i) = children(i).eval(input).asInstanceOf[Int]; i += 1 }
    curve.index(ids, bits)
  }

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): ZValue =
    copy(children = newChildren)
}
