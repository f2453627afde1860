package io.strata.catalog

import io.strata.config.WriteConf
import io.strata.log.{ActionCodec, Clustering, InvalidTableOperationException, Operation, TableLog,
  TableNotFoundException}
import io.strata.table.{ClusteringColumns, ClusteringStage, TableSchema}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.catalog.TableChange
import org.apache.spark.sql.connector.expressions.{ClusterByTransform, Expressions, Transform}

/**
 * Liquid clustering DDL for both catalogs: `CREATE TABLE ... CLUSTER BY (cols)` and `writeTo(...).clusterBy(...)`
 * (a `cluster_by` transform among the partitioning), `ALTER TABLE ... CLUSTER BY (cols)` / `CLUSTER BY NONE`
 * (`TableChange.ClusterBy`). The columns live in the `delta.clustering` domain ([[Clustering]]), as delta-spark keeps
 * them; changing them is a commit of that domain alone (no metadata change, so concurrent appends go on), and two
 * transactions writing it conflict (`ConcurrentDomainMetadataException`).
 */
object ClusteringChanges {
  val TransformName = "cluster_by"

  /** A CREATE / REPLACE statement's partition transforms without its `cluster_by`, and the clustering columns. */
  def split(partitions: Array[Transform]): (Array[Transform], Option[Seq[Seq[String]]]) = {
    val (cluster, rest) = partitions.partition(_.name() == TransformName)
    (rest, if (cluster.isEmpty) None else Some(cluster.toSeq.flatMap(_.references().map(_.fieldNames().toSeq))))
  }

  /** How a table shows its clustering to Spark (DESCRIBE's "# Clustering Information"), by logical names. */
  def transform(logical: Seq[Seq[String]]): Option[Transform] =
    if (logical.isEmpty) None
    else Some(ClusterByTransform(logical.map(p => Expressions.column(ClusteringColumns.fieldName(p))).toSeq))

  def isClusterBy(changes: Seq[TableChange]): Boolean =
    changes.nonEmpty && changes.forall(_.isInstanceOf[TableChange.ClusterBy])

  def numIndexed(configuration: Map[String, String]): Int =
    WriteConf.internal(SparkSession.active.conf.getOption, configuration).numIndexedColumns

  /** ALTER TABLE ... CLUSTER BY: one commit of the clustering domain (and the protocol, the first time). */
  def alter(log: TableLog, changes: Seq[TableChange]): Unit = {
    val txn = log.startTransaction()
    val snapshot = txn.readSnapshot.getOrElse(throw TableNotFoundException(log.tablePath.toString))
    val table = log.tablePath.toString
    val columns = changes.last.asInstanceOf[TableChange.ClusterBy].clusteringColumns().toSeq.map(_.fieldNames().toSeq)
    if (columns.isEmpty && !Clustering.supported(snapshot.protocol)) throw InvalidTableOperationException(
      "STRATA_INVALID_CLUSTERING", s"Cannot set CLUSTER BY NONE on $table: it is not a clustered table; nothing " +
        "was changed.")
    val meta = snapshot.metadata
    io.strata.log.ProtocolSupport.checkWritable(snapshot.protocol, meta, table)
    val schema = TableSchema.of(meta).schema
    val old = Clustering.columns(snapshot.domains).map(ClusteringColumns.logical(schema, _, table)).getOrElse(Nil)
    ClusteringStage(txn, meta, Some(columns), numIndexed(meta.configuration), table)
    def names(cs: Seq[Seq[String]]) = ActionCodec.mapper.writeValueAsString(cs.map(ClusteringColumns.sql).toArray)
    txn.commit(Nil, Operation("CLUSTER BY", Map("oldClusteringColumns" -> names(old),
      "newClusteringColumns" -> names(columns))))
  }
}
