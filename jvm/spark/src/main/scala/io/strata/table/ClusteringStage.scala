package io.strata.table

import io.strata.log.{Clustering, Metadata, Transaction}

/** Staging the clustering of a table being (re)defined or altered into its transaction. */
object ClusteringStage {
  val StatsColumnsKey = "delta.dataSkippingStatsColumns"

  /**
   * Stages `clusterBy` (logical paths; Some(Nil): CLUSTER BY NONE) for a table whose new metadata is `meta`: the
   * `delta.clustering` domain with physical names and, for columns, the protocol with the `clustering` feature. None:
   * a table that was clustered (a REPLACE without CLUSTER BY) is unclustered, any other is left alone.
   */
  def apply(txn: Transaction, meta: Metadata, clusterBy: Option[Seq[Seq[String]]], numIndexed: Int,
            table: String): Unit = {
    val wasClustered = txn.readSnapshot.exists(s => Clustering.columns(s.domains).exists(_.nonEmpty))
    clusterBy.orElse(if (wasClustered) Some(Nil) else None).foreach { names =>
      val physical = ClusteringColumns.resolve(TableSchema.of(meta).schema, meta.partitionColumns, names, numIndexed,
        meta.configuration.get(StatsColumnsKey), table)
      if (physical.nonEmpty) txn.requireProtocol(Clustering.protocol)
      if (physical.nonEmpty || txn.readSnapshot.exists(s => Clustering.columns(s.domains).isDefined))
        txn.writeDomain(Clustering.domain(physical))
    }
  }

  /**
   * After a metadata change of a clustered table (ALTER TABLE: columns dropped, statistics settings changed): its
   * clustering columns must still exist and keep statistics, as delta-spark requires; fails naming the column.
   */
  def check(physical: Seq[Seq[String]], meta: Metadata, numIndexed: Int, table: String): Unit =
    if (physical.nonEmpty) {
      val schema = TableSchema.of(meta).schema
      ClusteringColumns.resolve(schema, meta.partitionColumns, ClusteringColumns.logical(schema, physical, table),
        numIndexed, meta.configuration.get(StatsColumnsKey), table)
    }
}
