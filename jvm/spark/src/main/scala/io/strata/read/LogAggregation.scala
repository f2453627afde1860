package io.strata.read

import io.strata.log.FileStatistics
import io.strata.table.ExactStats
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.util.TypeUtils
import org.apache.spark.sql.types._

import scala.collection.mutable

/** An aggregate the log may answer: `count(*)`, or count / min / max of a top-level column. */
sealed trait LogAggregate {
  def column: Option[String]
  def describe: String
}

object LogAggregate {
  case object CountRows extends LogAggregate {
    def column: Option[String] = None
    def describe: String = "count(*)"
  }
  final case class Count(name: String) extends LogAggregate {
    def column: Option[String] = Some(name)
    def describe: String = s"count($name)"
  }
  final case class Min(name: String) extends LogAggregate {
    def column: Option[String] = Some(name)
    def describe: String = s"min($name)"
  }
  final case class Max(name: String) extends LogAggregate {
    def column: Option[String] = Some(name)
    def describe: String = s"max($name)"
  }
}

/**
 * Aggregates answered from a snapshot's log instead of its data: per file, `numRecords` minus the rows its deletion
 * vector deletes, null counts and min/max statistics; per partition, its values. Only when every file the query
 * reads (after partition pruning) has exact facts for what is asked; otherwise [[answer]] is None and the data is read:
 *  - min/max of a data column: only types with exact statistics ([[ExactStats]]); a file with a deletion vector only
 *    with `tightBounds: true` and no nulls (its bounds may be those of deleted rows);
 *  - count of a data column: the null count, exact without a deletion vector; with one only when it is 0 or all rows;
 *  - partition columns (values from the log, as scans see them): any type but floating point, binary and collated
 *    strings (whose grouping and ordering are not plain value equality), nulls counted as nulls.
 * A group is returned only when it has live rows, as Spark's GROUP BY; without grouping, one row (count 0 and null
 * bounds for an empty table).
 */
object LogAggregation {
  /** The answer: rows of the grouping values then the aggregates (`schema`), and what produced them. */
  final case class Answer(schema: StructType, rows: IndexedSeq[InternalRow], description: String)

  private def plainType(dt: DataType): Boolean = dt match {
    case ByteType | ShortType | IntegerType | LongType | BooleanType | DateType | TimestampType |
         TimestampNTZType | _: DecimalType => true
    case s: StringType => s == StringType
    case _ => false
  }

  def answer(index: LogFileIndex, partitionFilters: Seq[Expression], groupBy: Seq[String],
             aggregates: Seq[LogAggregate]): Option[Answer] = {
    val partSchema = index.partitionSchema
    def field(name: String): Option[StructField] = index.tableSchema.fields.find(_.name.equalsIgnoreCase(name))
    def partOrdinal(name: String): Int = partSchema.fields.indexWhere(_.name.equalsIgnoreCase(name))
    val groupOrdinals = groupBy.map(partOrdinal)
    val dataColumns = aggregates.flatMap(_.column).distinct.filter(partOrdinal(_) < 0).flatMap(field).toIndexedSeq
    val answerable = aggregates.nonEmpty &&
      groupOrdinals.forall(o => o >= 0 && plainType(partSchema(o).dataType)) &&
      aggregates.flatMap(_.column).forall(c => field(c).isDefined) &&
      partitionFilters.forall(f => f.deterministic && f.references.forall(a => partOrdinal(a.name) >= 0)) &&
      aggregates.forall {
        case LogAggregate.Min(c) => minMaxable(c, partOrdinal(c), field(c).get, partSchema)
        case LogAggregate.Max(c) => minMaxable(c, partOrdinal(c), field(c).get, partSchema)
        case _ => true
      }
    if (!answerable) None else compute(index, partitionFilters, groupOrdinals, aggregates, dataColumns, partOrdinal)
  }

  private def minMaxable(c: String, partOrdinal: Int, f: StructField, partSchema: StructType): Boolean =
    if (partOrdinal >= 0) plainType(partSchema(partOrdinal).dataType) else ExactStats.exactBounds(f.dataType)

  /** Running values of one group: live rows, and per aggregate a count (Long) or a bound (null = none yet). */
  private final class Group(n: Int) {
    var rows = 0L
    val values = new Array[Any](n)
  }

  private def compute(index: LogFileIndex, partitionFilters: Seq[Expression], groupOrdinals: Seq[Int],
                      aggregates: Seq[LogAggregate], dataColumns: IndexedSeq[StructField],
                      partOrdinal: String => Int): Option[Answer] = {
    val partSchema = index.partitionSchema
    val parser = new ExactStats(dataColumns)
    def dataOrdinal(c: String) = dataColumns.indexWhere(_.name.equalsIgnoreCase(c))
    val types = aggregates.map(a => a.column.map(c => index.tableSchema.fields.find(_.name.equalsIgnoreCase(c)).get
      .dataType).orNull)
    val orderings = types.map(t => if (t == null) null else TypeUtils.getInterpretedOrdering(t))
    val groups = mutable.LinkedHashMap.empty[Seq[Any], Group]
    var files = 0L
    val partitions = index.prunedPartitions(partitionFilters)
    FileStatistics.prepare(partitions.map(_.stats), parser.statsColumns)
    // Per file: its live rows, and the data columns' facts (only when some aggregate reads one). count(*) and the
    // aggregates of partition columns depend on the partition's live rows only: added up, then applied once.
    val dataAggregates = aggregates.indices.filter(a => aggregates(a).column.exists(partOrdinal(_) < 0)).toArray
    val it = partitions.iterator
    while (it.hasNext) {
      val p = it.next()
      val key = groupOrdinals.map(o => p.values.get(o, partSchema(o).dataType))
      val g = groups.getOrElseUpdate(key, new Group(aggregates.length))
      val stats = p.stats
      val values = stats.values(parser.statsColumns)
      var partitionRows = 0L
      var i = 0
      while (i < stats.length) {
        val records = values.numRecords(i)
        if (records < 0) return None
        val deleted = stats.deletedRows(i)
        val live = records - deleted
        if (live < 0) return None
        partitionRows += live
        if (live > 0 && dataAggregates.nonEmpty) {
          val facts = parser.facts(values, i).getOrElse(return None)
          var d = 0
          while (d < dataAggregates.length) {
            val a = dataAggregates(d)
            val update = dataFact(aggregates(a), dataOrdinal(aggregates(a).column.get), facts, deleted, live)
              .getOrElse(return None)
            g.values(a) = merge(aggregates(a), orderings(a), g.values(a), update)
            d += 1
          }
        }
        i += 1
      }
      files += stats.length
      if (partitionRows > 0) {
        g.rows += partitionRows
        var a = 0
        while (a < aggregates.length) {
          val update: Any = aggregates(a) match {
            case LogAggregate.CountRows => partitionRows
            case agg if partOrdinal(agg.column.get) >= 0 =>
              val po = partOrdinal(agg.column.get)
              val v = p.values.get(po, partSchema(po).dataType)
              agg match {
                case _: LogAggregate.Count => if (v == null) 0L else partitionRows
                case _ => v
              }
            case _ => null // a data column's: per file, above
          }
          if (update != null) g.values(a) = merge(aggregates(a), orderings(a), g.values(a), update)
          a += 1
        }
      }
    }
    val kept = groups.iterator.filter { case (_, g) => g.rows > 0 || groupOrdinals.isEmpty }
    val rows = (if (groups.isEmpty && groupOrdinals.isEmpty) Iterator(Seq.empty[Any] -> new Group(aggregates.length))
                else kept).map { case (key, g) =>
      InternalRow.fromSeq(key ++ aggregates.indices.map { a =>
        if (aggregates(a).isInstanceOf[LogAggregate.Min] || aggregates(a).isInstanceOf[LogAggregate.Max]) g.values(a)
        else if (g.values(a) == null) 0L else g.values(a)
      })
    }.toIndexedSeq
    val schema = StructType(groupOrdinals.map(partSchema(_)) ++ aggregates.zip(types).map {
      case (a @ (LogAggregate.CountRows | _: LogAggregate.Count), _) => StructField(a.describe, LongType, nullable = false)
      case (a, t) => StructField(a.describe, t)
    })
    val grouping = if (groupOrdinals.isEmpty) "" else groupOrdinals.map(partSchema(_).name).mkString(" group by [", ", ", "]")
    Some(Answer(schema, rows, s"StrataLogAggregate [${aggregates.map(_.describe).mkString(", ")}]$grouping from the " +
      s"log of version ${index.readVersion} ($files files in ${partitions.size} partitions)"))
  }

  /** A group's running value of `agg` with one file's: counts add up, bounds keep the least / greatest non-null. */
  private def merge(agg: LogAggregate, ordering: Ordering[Any], old: Any, update: Any): Any = (agg, old, update) match {
    case (LogAggregate.CountRows | _: LogAggregate.Count, _, n: Long) => (if (old == null) 0L else old.asInstanceOf[Long]) + n
    case (_, _, null) => old
    case (_, null, _) => update
    case (_: LogAggregate.Min, _, _) => if (ordering.lt(update, old)) update else old
    case _ => if (ordering.gt(update, old)) update else old
  }

  /**
   * What one file says exactly for an aggregate of a data column: a count (Long), a bound (null when the file has no
   * non-null value), or None when its statistics cannot say.
   */
  private def dataFact(agg: LogAggregate, c: Int, facts: ExactStats.Facts, deleted: Long, live: Long): Option[Any] = {
    val nulls = facts.nullCounts(c)
    if (nulls < 0 || nulls > facts.numRecords) return None
    // Without a deletion vector (and with bounds not declared wide) the null count is exact; otherwise only its two
    // special values are (PROTOCOL.md): 0 = no live row is null, numRecords = every live row is.
    val exact = deleted == 0 && !facts.tightBounds.contains(false)
    val allNull = nulls == facts.numRecords
    agg match {
      case _: LogAggregate.Count =>
        if (exact) Some(facts.numRecords - nulls)
        else if (nulls == 0) Some(live) else if (allNull) Some(0L) else None
      case _ =>
        if (allNull) Some(null)
        else if (!exact && !(facts.tightBounds.contains(true) && nulls == 0)) None
        else {
          val bound = agg match { case _: LogAggregate.Min => facts.mins(c); case _ => facts.maxs(c) }
          Option(bound)
        }
    }
  }
}
