package io.strata.catalog

import io.strata.log.TableLog
import io.strata.shim.SparkInternals
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.catalog.{DelegatingCatalogExtension, Identifier, Table, TableCatalog}

/**
 * The `spark_catalog` delegate: session-catalog tables declared `USING strata` are served as Strata V2 tables, so
 * Spark never plans them as plain Parquet directories (which would bypass the log). Everything else is delegated.
 */
class StrataSessionCatalog extends DelegatingCatalogExtension {
  override def loadTable(ident: Identifier): Table = {
    val table = super.loadTable(ident)
    val props = table.properties()
    if ("strata".equalsIgnoreCase(props.get(TableCatalog.PROP_PROVIDER)) && props.containsKey(TableCatalog.PROP_LOCATION)) {
      val log = TableLog.forPath(new Path(props.get(TableCatalog.PROP_LOCATION)),
        SparkInternals.hadoopConf(SparkSession.active, Map.empty))
      log.snapshotOption().map(s => new StrataV2Table((ident.namespace() :+ ident.name()).mkString("."), s): Table)
        .getOrElse(table)
    } else table
  }
}
