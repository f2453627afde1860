package io.strata.table

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{And, AttributeReference, BoundReference, Expression, Predicate}
import org.apache.spark.sql.types.StructType

/**
 * Spark's partition filters evaluated over a row of typed partition values (ordered as `partitionSchema`): the one
 * evaluation behind the driver's partition pruning and the distributed state's. Serializable: a task builds the
 * interpreted predicate where it runs.
 */
final case class PartitionPredicate(partitionSchema: StructType, filters: Seq[Expression]) {
  @transient private lazy val predicate: Option[InternalRow => Boolean] =
    if (filters.isEmpty || partitionSchema.isEmpty) None else {
      val bound = filters.reduce(And).transform {
        case a: AttributeReference =>
          val i = partitionSchema.fields.indexWhere(_.name.equalsIgnoreCase(a.name))
          BoundReference(i, partitionSchema(i).dataType, nullable = true)
      }
      val p = Predicate.createInterpreted(bound)
      p.initialize(0)
      Some(p.eval _)
    }

  /** Whether the partition with these values may hold rows the filters keep. */
  def keeps(values: InternalRow): Boolean = predicate.forall(_(values))
}
