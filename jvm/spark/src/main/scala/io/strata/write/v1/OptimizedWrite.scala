package io.strata.write.v1

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions.col

/**
 * Optimized writes for path writes (`config.WriteSettings.OptimizeWrite`): rows are shuffled to their partition before
 * the writer, so each task holds whole partitions and an append makes about one file per partition instead of one
 * per input task and partition. A REBALANCE (not a plain repartition) lets adaptive execution split a large
 * partition into several tasks of the advisory size and merge small ones, so files stay within a sane size.
 * Unpartitioned tables get a rebalance into advisory-size tasks. Catalog writes get this from their required
 * distribution already.
 */
object OptimizedWrite {
  def apply(data: DataFrame, partitionColumns: Seq[String]): DataFrame =
    data.hint("rebalance", partitionColumns.map(c => col(s"`${c.replace("`", "``")}`")): _*)
}
