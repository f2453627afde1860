package io.strata.table

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Cast, EvalMode, Literal}
import org.apache.spark.sql.types.{DataType, StructType, TimestampType}

/** The log's strings (partition values, option values) as Catalyst values, cast the way Spark casts them. */
object CatalystValues {
  /**
   * A file's log partition values as Catalyst values, in `partitionSchema` order. `zone`: the reading session's time
   * zone, in which zone-less timestamp values are local times (as delta-spark reads them; see
   * [[PartitionValues.parseTimestamp]]). Timestamps go through that one parser, so a scan, a filter on the
   * partition column and a write's partition matching all agree on what a value means.
   */
  def partitionRow(partitionSchema: StructType, values: Map[String, Option[String]], zone: java.time.ZoneId)
      : InternalRow =
    InternalRow.fromSeq(partitionSchema.fields.toSeq.map { f =>
      values.getOrElse(PhysicalSchema.physicalName(f), None).map { v =>
        if (f.dataType == TimestampType) PartitionValues.parseTimestamp(v, zone): Any
        else cast(v, f.dataType, zone.getId)
      }.orNull
    })

  /** Catalyst's value for a partition value string (the same cast Spark applies to directory values). */
  def cast(value: String, dataType: DataType, timeZone: String): Any =
    Cast(Literal(value), dataType, Some(timeZone)).eval()

  /** Like [[cast]], but null instead of an error for a value that does not parse. */
  def tryCast(value: String, dataType: DataType, timeZone: String): Any =
    Cast(Literal(value), dataType, Some(timeZone), EvalMode.TRY).eval()
}
