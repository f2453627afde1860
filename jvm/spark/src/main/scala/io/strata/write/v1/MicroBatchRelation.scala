package io.strata.write.v1

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{DataFrame, Row, SQLContext}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.sources.{BaseRelation, TableScan}
import org.apache.spark.sql.types.StructType

/**
 * A micro-batch's rows as a relation: the RDD of its incremental plan, handed over in Spark's internal row format
 * (`needConversion = false`), as Spark's foreachBatch sink does with a private relation.
 */
final class MicroBatchRelation(context: SQLContext, rowSchema: StructType, rows: RDD[InternalRow])
    extends BaseRelation with TableScan {
  override def sqlContext: SQLContext = context
  override def schema: StructType = rowSchema
  override def needConversion: Boolean = false
  override def buildScan(): RDD[Row] = rows.asInstanceOf[RDD[Row]]
}

object MicroBatchRelation {
  /**
   * The rows of one streaming micro-batch as a plain batch DataFrame (what Spark's own foreachBatch sink does): the
   * batch's incremental plan, stateful operators included, runs once as the RDD under a non-streaming relation, so
   * the write may project, check and repartition it like any batch input.
   */
  def rows(data: DataFrame): DataFrame =
    data.sparkSession.baseRelationToDataFrame(new MicroBatchRelation(data.sparkSession.sqlContext, data.schema,
      data.queryExecution.toRdd))
}
