package io.strata.table

import io.strata.log.{StatsColumn, StatsParser, StatsValues}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.types._

import scala.util.Try

/**
 * File skipping from the log's per-file statistics (PROTOCOL.md, "Per-file Statistics"). Spark's data filters are
 * rewritten into a predicate over a file's statistics row `[numRecords, min_1, max_1, nullCount_1, min_2, ...]`
 * (the shape of Delta's data skipping): `a = v` becomes `min_a <= v AND max_a >= v`, `a < v` becomes `min_a < v`,
 * `a IS NULL` becomes `nullCount_a > 0`, and so on. Anything the rewrite does not understand becomes TRUE, and a
 * missing statistic is NULL, so a file is skipped only when the rewritten predicate is definitely FALSE: skipping can
 * never drop a file holding a matching row. Bounds are treated as loose (strings truncated, timestamps in
 * milliseconds), which keeps them valid for files written by Strata, delta-spark and delta-rs alike.
 */
final class StatsSkipping private (dataSchema: StructType, dataFilters: Seq[Expression], partitionSchema: StructType) {
  import StatsSkipping.Indexed

  private var columns = Vector.empty[Indexed]
  private def column(a: AttributeReference): Option[Indexed] = {
    val data = dataSchema.fields.find(_.name.equalsIgnoreCase(a.name))
    val partition = if (data.isDefined) -1 else partitionSchema.fields.indexWhere(_.name.equalsIgnoreCase(a.name))
    data.orElse(if (partition >= 0) Some(partitionSchema(partition)) else None)
      .filter(f => StatsSkipping.supported(f.dataType)).map { f =>
        columns.find(c => c.field.name == f.name && (c.partition >= 0) == (partition >= 0)).getOrElse {
          val c = Indexed(f, 1 + 3 * columns.size, partition, if (partition >= 0) -1 else columns.count(_.partition < 0))
          columns :+= c
          c
        }
      }
  }

  private val numRecords = BoundReference(0, LongType, nullable = true)
  private def min(c: Indexed) = BoundReference(c.ordinal, c.field.dataType, nullable = true)
  private def max(c: Indexed) = BoundReference(c.ordinal + 1, c.field.dataType, nullable = true)
  private def nulls(c: Indexed) = BoundReference(c.ordinal + 2, LongType, nullable = true)
  /** The file has a non-null value of `c` (a comparison can only be true for one). */
  private def hasValues(c: Indexed) = LessThan(nulls(c), numRecords)

  private object Col {
    def unapply(e: Expression): Option[Indexed] = e match {
      case a: AttributeReference => column(a)
      case _ => None
    }
  }
  private object Lit {
    def unapply(e: Expression): Option[Literal] = e match {
      case l: Literal if l.value != null => Some(l)
      case _ => None
    }
  }

  private val True = Literal.TrueLiteral

  private def compare(c: Indexed, v: Literal, op: String): Expression = {
    val bound = op match {
      case "=" => And(LessThanOrEqual(min(c), v), GreaterThanOrEqual(max(c), v))
      case "<" => LessThan(min(c), v)
      case "<=" => LessThanOrEqual(min(c), v)
      case ">" => GreaterThan(max(c), v)
      case ">=" => GreaterThanOrEqual(max(c), v)
    }
    And(bound, hasValues(c))
  }

  private def flip(op: String) = op match { case "<" => ">"; case "<=" => ">="; case ">" => "<"; case ">=" => "<="; case o => o }

  private def rewrite(e: Expression): Expression = e match {
    case And(l, r) => And(rewrite(l), rewrite(r))
    case Or(l, r) => Or(rewrite(l), rewrite(r))
    case Not(IsNull(Col(c))) => hasValues(c)
    case Not(IsNotNull(Col(c))) => GreaterThan(nulls(c), Literal(0L))
    case IsNull(Col(c)) => GreaterThan(nulls(c), Literal(0L))
    case IsNotNull(Col(c)) => hasValues(c)
    case EqualTo(Col(c), Lit(v)) => compare(c, v, "=")
    case EqualTo(Lit(v), Col(c)) => compare(c, v, "=")
    case EqualNullSafe(Col(c), Lit(v)) => compare(c, v, "=")
    case EqualNullSafe(Lit(v), Col(c)) => compare(c, v, "=")
    case LessThan(Col(c), Lit(v)) => compare(c, v, "<")
    case LessThan(Lit(v), Col(c)) => compare(c, v, flip("<"))
    case LessThanOrEqual(Col(c), Lit(v)) => compare(c, v, "<=")
    case LessThanOrEqual(Lit(v), Col(c)) => compare(c, v, flip("<="))
    case GreaterThan(Col(c), Lit(v)) => compare(c, v, ">")
    case GreaterThan(Lit(v), Col(c)) => compare(c, v, flip(">"))
    case GreaterThanOrEqual(Col(c), Lit(v)) => compare(c, v, ">=")
    case GreaterThanOrEqual(Lit(v), Col(c)) => compare(c, v, flip(">="))
    case In(Col(c), values) if values.nonEmpty && values.size <= 200 && values.forall(_.isInstanceOf[Literal]) =>
      values.collect { case Lit(v) => compare(c, v, "="): Expression }.reduceOption(Or).getOrElse(Literal.FalseLiteral)
    case InSet(Col(c), set) if set.nonEmpty && set.size <= 200 =>
      set.toSeq.filter(_ != null).map(v => compare(c, Literal(v, c.field.dataType), "="): Expression)
        .reduceOption(Or).getOrElse(Literal.FalseLiteral)
    case _ => True
  }

  /**
   * A predicate over the statistics row that is TRUE only when every row of the file matches (the converse of
   * [[rewrite]]): `a < v` needs `max_a < v` and no NULL `a`. Bounds stay safe here: a widened maximum or a truncated
   * minimum only makes the test stricter. Equality needs exact bounds, so it is used for integral, date and decimal
   * columns only. Anything else is FALSE.
   */
  private def rewriteAll(e: Expression): Expression = {
    def noNulls(c: Indexed) = EqualTo(nulls(c), Literal(0L))
    def exact(c: Indexed) = c.field.dataType match {
      case ByteType | ShortType | IntegerType | LongType | DateType | _: DecimalType => true
      case _ => false
    }
    def all(c: Indexed, v: Literal, op: String): Expression = And(noNulls(c), op match {
      case "=" if exact(c) => And(EqualTo(min(c), v), EqualTo(max(c), v))
      case "<" => LessThan(max(c), v)
      case "<=" => LessThanOrEqual(max(c), v)
      case ">" => GreaterThan(min(c), v)
      case ">=" => GreaterThanOrEqual(min(c), v)
      case _ => Literal.FalseLiteral
    })
    e match {
      case And(l, r) => And(rewriteAll(l), rewriteAll(r))
      case Or(l, r) => Or(rewriteAll(l), rewriteAll(r))
      case IsNull(Col(c)) => EqualTo(nulls(c), numRecords)
      case IsNotNull(Col(c)) => noNulls(c)
      case EqualTo(Col(c), Lit(v)) => all(c, v, "=")
      case EqualTo(Lit(v), Col(c)) => all(c, v, "=")
      case LessThan(Col(c), Lit(v)) => all(c, v, "<")
      case LessThan(Lit(v), Col(c)) => all(c, v, flip("<"))
      case LessThanOrEqual(Col(c), Lit(v)) => all(c, v, "<=")
      case LessThanOrEqual(Lit(v), Col(c)) => all(c, v, flip("<="))
      case GreaterThan(Col(c), Lit(v)) => all(c, v, ">")
      case GreaterThan(Lit(v), Col(c)) => all(c, v, flip(">"))
      case GreaterThanOrEqual(Col(c), Lit(v)) => all(c, v, ">=")
      case GreaterThanOrEqual(Lit(v), Col(c)) => all(c, v, flip(">="))
      case _ => Literal.FalseLiteral
    }
  }

  private val predicate: Expression = dataFilters.map(rewrite).reduceOption(And).getOrElse(True)
  private val allPredicate: Expression = dataFilters.map(rewriteAll).reduceOption(And).getOrElse(True)
  private val referenced = columns
  private val onData = referenced.filter(_.partition < 0)

  /** The statistics columns the filters need (data columns only), in the order [[mayMatch]] reads them. */
  val statsColumns: IndexedSeq[StatsColumn] = onData.map(c => StatsTypes.column(c.field).get)
  private val parser = StatsParser.forColumns(statsColumns)

  def isEmpty: Boolean = referenced.isEmpty

  /**
   * False only when file `i`'s statistics (`values`, read for [[statsColumns]]) and its partition values
   * (`partitionValues`, typed as the partition schema; null when unknown) prove that no row of it matches.
   */
  def mayMatch(values: StatsValues, i: Int, partitionValues: InternalRow): Boolean =
    referenced.isEmpty || predicate.eval(statsRow(values, i, partitionValues)) != false

  /** False only when the file's statistics JSON proves that no row of it matches the filters. */
  def mayMatch(stats: Option[String]): Boolean =
    referenced.isEmpty || stats.isEmpty || mayMatch(parser.parse(stats.get), 0, null)

  /** As [[mayMatch]] on a file's statistics JSON and its typed partition values (exact bounds of their columns). */
  def mayMatch(stats: Option[String], partitionValues: InternalRow): Boolean =
    referenced.isEmpty || mayMatch(parser.parse(stats.getOrElse("{}")), 0, partitionValues)

  /** True only when the file's statistics prove that every row of it matches the filters. */
  def mustMatchAll(stats: Option[String]): Boolean = dataFilters.isEmpty || (stats match {
    case None => false
    case Some(json) => Try(allPredicate.eval(statsRow(parser.parse(json), 0, null)) == true).getOrElse(false)
  })

  /**
   * The statistics row of file `i`. A partition column's value is its exact minimum and maximum (null count 0, or
   * all rows when the value is null); a data column's bounds come from the parsed statistics, a timestamp maximum
   * widened to the end of its millisecond (writers keep milliseconds, some truncating the maximum).
   */
  private def statsRow(values: StatsValues, i: Int, partitionValues: InternalRow): InternalRow = {
    val row = new Array[Any](1 + 3 * referenced.size)
    val n = values.numRecords(i)
    row(0) = if (n < 0) null else n
    referenced.foreach { c =>
      val dt = c.field.dataType
      if (c.partition >= 0) {
        if (partitionValues != null) {
          val v = partitionValues.get(c.partition, dt)
          row(c.ordinal) = v; row(c.ordinal + 1) = v
          row(c.ordinal + 2) = if (v != null) 0L else if (n < 0) null else n
        }
      } else {
        val s = c.statsIndex
        row(c.ordinal) = StatsTypes.catalyst(values.min(s, i), dt)
        row(c.ordinal + 1) = (StatsTypes.catalyst(values.max(s, i), dt), dt) match {
          case (m: Long, TimestampType | TimestampNTZType) => m + StatsSkipping.MilliInMicros - 1
          case (m, _) => m
        }
        val nulls = values.nullCount(s, i)
        row(c.ordinal + 2) = if (nulls < 0) null else nulls
      }
    }
    new GenericInternalRow(row)
  }
}

object StatsSkipping {
  /**
   * A column with statistics: `ordinal` is where its minimum sits in the stats row (maximum +1, null count +2);
   * `partition`: its position in the partition values (a partition column), else -1 and `statsIndex` is its place
   * among the statistics columns read.
   */
  private final case class Indexed(field: StructField, ordinal: Int, partition: Int, statsIndex: Int)

  /**
   * Skipping by `dataFilters` over the columns of `dataSchema` (statistics) and of `partitionSchema` (each file's
   * partition values, exact bounds: a disjunction across partition and data columns skips files too).
   */
  def apply(dataSchema: StructType, dataFilters: Seq[Expression],
            partitionSchema: StructType = new StructType()): StatsSkipping =
    new StatsSkipping(dataSchema, dataFilters, partitionSchema)

  /** Types with min/max statistics ([[StatsTypes.kind]]: UTF-8 byte ordered strings only), booleans aside. */
  private def supported(dt: DataType): Boolean = StatsTypes.kind(dt).exists(_ != StatsColumn.Bool)

  private val MilliInMicros = 1000L
}
