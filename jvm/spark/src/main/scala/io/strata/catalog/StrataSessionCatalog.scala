package io.strata.catalog

import java.util

import io.strata.log.{TableLog, TableProperties}
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.catalog.{Column, DelegatingCatalogExtension, Identifier, Table, TableCatalog,
  TableCatalogCapability, TableChange, TableInfo}
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.strata.SparkInternals

import scala.jdk.CollectionConverters._

/**
 * The `spark_catalog` delegate: session-catalog tables declared `USING strata` are created as Strata tables and
 * served as Strata V2 tables, so Spark never plans them as plain Parquet directories (which would write behind the
 * log). Everything else is delegated to the built-in session catalog.
 */
class StrataSessionCatalog extends DelegatingCatalogExtension {
  private def isStrata(props: util.Map[String, String]): Boolean =
    "strata".equalsIgnoreCase(props.get(TableCatalog.PROP_PROVIDER))

  private def hadoopConf = SparkInternals.hadoopConf(SparkSession.active, Map.empty)

  /** The log of a session-catalog table declared `USING strata`, None for any other table. */
  private def strataLog(table: Table): Option[TableLog] = {
    val props = table.properties()
    if (isStrata(props) && props.containsKey(TableCatalog.PROP_LOCATION)) {
      Some(TableLog.forPath(new Path(props.get(TableCatalog.PROP_LOCATION)), hadoopConf))
    } else None
  }

  private def displayName(ident: Identifier) = (ident.namespace() :+ ident.name()).mkString(".")

  override def loadTable(ident: Identifier): Table = {
    val table = super.loadTable(ident)
    strataLog(table).flatMap(StrataV2Table.latest(displayName(ident), _)).map(t => t: Table)
      .getOrElse(table)
  }

  // Time travel (VERSION / TIMESTAMP AS OF): the same rules as the strata catalog, through the table's log.
  override def loadTable(ident: Identifier, version: String): Table = {
    val table = super.loadTable(ident)
    strataLog(table).map(log => StrataV2Table.at(displayName(ident), log, StrataCatalog.version(version)))
      .getOrElse(super.loadTable(ident, version))
  }

  override def loadTable(ident: Identifier, timestampMicros: Long): Table = {
    val table = super.loadTable(ident)
    strataLog(table).map(log => StrataV2Table.at(displayName(ident), log,
      log.versionAsOf(Math.floorDiv(timestampMicros, 1000L)))).getOrElse(super.loadTable(ident, timestampMicros))
  }

  // CHECK constraints in DDL: Strata tables store and enforce them; other tables get what the built-in catalog does.
  override def capabilities(): util.Set[TableCatalogCapability] = {
    val caps = util.EnumSet.noneOf(classOf[TableCatalogCapability])
    caps.addAll(super.capabilities())
    caps.add(TableCatalogCapability.SUPPORT_TABLE_CONSTRAINT)
    caps
  }

  override def createTable(ident: Identifier, info: TableInfo): Table =
    if (!isStrata(info.properties())) super.createTable(ident, info)
    else createTable(ident, info.columns(), info.partitions(), TableCreation.propertiesOf(info, ident.toString))

  /** `CREATE TABLE ... USING strata`: the log's version 0 at the table location, then the catalog entry. */
  override def createTable(ident: Identifier, columns: Array[Column], partitions: Array[Transform],
                           properties: util.Map[String, String]): Table = {
    if (!isStrata(properties)) return super.createTable(ident, columns, partitions, properties)
    val explicit = Option(properties.get(TableCatalog.PROP_LOCATION)).map(new Path(_))
    val location = explicit.getOrElse(
      new Path(SparkInternals.defaultTablePath(SparkSession.active, ident.namespace().lastOption, ident.name())))
    val log = TableLog.forPath(location, hadoopConf)
    // LOCATION over an existing table adopts it; a managed table never takes over data it did not create.
    if (!log.exists) TableCreation.create(log, columns, partitions, properties.asScala.toMap)
    else if (explicit.isEmpty) throw new IllegalStateException(s"Cannot create table $ident: its default location " +
      s"${log.tablePath} already holds a Strata table. Remove it, or give it as LOCATION to adopt it.")
    val withLocation = new util.HashMap[String, String](properties)
    // Protocol properties went into the log's protocol action; like the log's metadata, the entry does not keep them.
    properties.keySet().asScala.filter(TableProperties.isProtocolProperty).foreach(withLocation.remove)
    withLocation.put(TableCatalog.PROP_LOCATION, log.tablePath.toString)
    if (explicit.isEmpty) withLocation.put(ManagedKey, "true")
    super.createTable(ident, columns, ClusteringChanges.split(partitions)._1, withLocation) // clustering: the log's
    loadTable(ident)
  }

  /** ALTER TABLE of a Strata table commits to its log (the source of truth), then updates the catalog entry. */
  override def alterTable(ident: Identifier, changes: TableChange*): Table = {
    val table = super.loadTable(ident)
    if (isStrata(table.properties()) && table.properties().containsKey(TableCatalog.PROP_LOCATION)) {
      TableAlteration(TableLog.forPath(new Path(table.properties().get(TableCatalog.PROP_LOCATION)), hadoopConf), changes)
      // Constraints and clustering live in the log only; the catalog entry keeps columns, properties and comments in step.
      val forCatalog = changes.filter {
        case _: TableChange.AddConstraint | _: TableChange.DropConstraint | _: TableChange.ClusterBy => false
        case c: TableChange.SetProperty => !TableProperties.isProtocolProperty(c.property)
        case _ => true
      }
      if (forCatalog.nonEmpty) super.alterTable(ident, forCatalog: _*)
      loadTable(ident)
    } else super.alterTable(ident, changes: _*)
  }

  /** DROP TABLE of a managed Strata table deletes its data too, as for any managed table. */
  override def dropTable(ident: Identifier): Boolean = {
    val managedLocation = scala.util.Try(super.loadTable(ident)).toOption
      .filter(t => isStrata(t.properties()) && "true" == t.properties().get(ManagedKey))
      .map(t => new Path(t.properties().get(TableCatalog.PROP_LOCATION)))
    val dropped = super.dropTable(ident)
    if (dropped) managedLocation.foreach(p => p.getFileSystem(hadoopConf).delete(p, true))
    dropped
  }

  private val ManagedKey = "strata.managed"
}
