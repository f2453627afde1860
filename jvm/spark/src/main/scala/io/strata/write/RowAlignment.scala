package io.strata.write

import io.strata.log.ConstraintViolationException
import io.strata.table.ByNameConversion
import io.strata.table.TableSchema.ColumnFeed
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, Expression, Literal, UnsafeProjection}
import org.apache.spark.sql.types.StructType

/**
 * Rows of a streaming query, in the query's column order and types, turned into the table's layout on the
 * executors. Spark aligns a batch write's rows to a DataSource V2 table by name before the write, but hands a
 * streaming write the query's rows as they are; this does for them what the V1 path does with a projection: each
 * table column is fed by the data column of the same name (case-insensitively), widened by a cast where the table's
 * type is wider, and a null arriving for a NOT NULL column fails the task with the V1 path's message.
 */
final class RowAlignment private (columns: Seq[Expression], notNull: Array[(Int, String)], tableName: String)
  extends Serializable {
  @transient private lazy val projection = UnsafeProjection.create(columns)

  def apply(row: InternalRow): InternalRow = {
    var i = 0
    while (i < notNull.length) {
      if (row.isNullAt(notNull(i)._1)) throw ConstraintViolationException("STRATA_NOT_NULL_VIOLATION",
        Map("column" -> notNull(i)._2, "table" -> tableName))
      i += 1
    }
    projection(row)
  }
}

object RowAlignment {
  /**
   * The alignment of rows of `data` to the table columns `feeds` (in table order); None when the rows already have
   * the table's layout and need no check.
   */
  def compile(data: StructType, feeds: Seq[ColumnFeed], tableName: String, timeZone: String): Option[RowAlignment] = {
    val ordinals = feeds.map(_.source.map(data.fieldIndex))
    val notNull = feeds.zip(ordinals).collect { case (f, Some(i)) if !f.table.nullable && data(i).nullable =>
      (i, f.table.name)
    }
    val identity = ordinals == data.indices.map(Some(_)) && feeds.forall(!_.cast)
    if (identity && notNull.isEmpty) None else {
      val columns = feeds.zip(ordinals).map {
        case (f, None) => Literal(null, f.table.dataType)
        case (f, Some(i)) =>
          val ref = BoundReference(i, data(i).dataType, data(i).nullable)
          if (!f.cast) ref
          else ByNameConversion.matched(ref, data(i).dataType, f.table.dataType, f.table.name, timeZone)
      }
      Some(new RowAlignment(columns, notNull.toArray, tableName))
    }
  }
}
