package io.strata.catalog

import java.util

import io.strata.log.{InvalidTableOperationException, TableLog}
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.analysis.{NamespaceAlreadyExistsException, NoSuchNamespaceException,
  NoSuchTableException, TableAlreadyExistsException}
import org.apache.spark.sql.connector.catalog._
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.strata.SparkInternals
import org.apache.spark.sql.util.CaseInsensitiveStringMap

import scala.jdk.CollectionConverters._

/**
 * The `strata` catalog: tables live under a warehouse directory (`<warehouse>/<namespace>/<table>`), namespaces are
 * folders, and ``strata.`/abs/path` `` names a table by path. This is the wiring the V2 write path builds on;
 * for now it creates, lists, loads (reads, time travel) and drops tables.
 */
class StrataCatalog extends StagingTableCatalog with SupportsNamespaces with ProcedureCatalog {
  private var catalogName: String = _
  private var warehouse: Path = _

  override def initialize(name: String, options: CaseInsensitiveStringMap): Unit = {
    catalogName = name
    val dir = Option(options.get("warehouse")).getOrElse(
      SparkSession.active.conf.get("spark.sql.warehouse.dir") + "/strata")
    warehouse = new Path(dir)
  }

  override def name(): String = catalogName

  // Maintenance procedures: CALL <catalog>.system.<name>(table => ..., ...).
  override def loadProcedure(ident: Identifier): org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure = io.strata.procedures.Procedures.load(ident)
  override def listProcedures(namespace: Array[String]): Array[Identifier] =
    io.strata.procedures.Procedures.list(namespace)

  // CHECK constraints in CREATE / REPLACE / ALTER TABLE; Strata stores and enforces them itself.
  override def capabilities(): util.Set[TableCatalogCapability] =
    util.EnumSet.of(TableCatalogCapability.SUPPORT_TABLE_CONSTRAINT)

  private def spark = SparkSession.active
  private def hadoopConf = SparkInternals.hadoopConf(spark, Map.empty)
  private def fs = warehouse.getFileSystem(hadoopConf)

  private def isPathIdentifier(ident: Identifier): Boolean =
    ident.namespace().isEmpty && (ident.name().startsWith("/") || ident.name().contains(":/"))

  private[catalog] def location(ident: Identifier): Path =
    if (isPathIdentifier(ident)) new Path(ident.name())
    else new Path(namespacePath(ident.namespace()), ident.name())

  private def namespacePath(ns: Array[String]): Path = ns.foldLeft(warehouse)((p, n) => new Path(p, n))

  private def logOf(ident: Identifier): TableLog = TableLog.forPath(location(ident), hadoopConf)

  private def displayName(ident: Identifier): String =
    (Seq(catalogName) ++ ident.namespace() :+ ident.name()).mkString(".")

  override def loadTable(ident: Identifier): Table =
    StrataV2Table.latest(displayName(ident), logOf(ident)) match {
      case Some(t) => t
      case None => throw new NoSuchTableException(ident.namespace().toIndexedSeq :+ ident.name())
    }

  override def loadTable(ident: Identifier, version: String): Table = {
    val v = StrataCatalog.version(version)
    if (!tableExists(ident)) throw new NoSuchTableException(ident.namespace().toIndexedSeq :+ ident.name())
    StrataV2Table.at(displayName(ident), logOf(ident), v)
  }

  override def loadTable(ident: Identifier, timestampMicros: Long): Table = {
    if (!tableExists(ident)) throw new NoSuchTableException(ident.namespace().toIndexedSeq :+ ident.name())
    val log = logOf(ident)
    StrataV2Table.at(displayName(ident), log, log.versionAsOf(Math.floorDiv(timestampMicros, 1000L)))
  }

  override def tableExists(ident: Identifier): Boolean = logOf(ident).exists

  override def listTables(namespace: Array[String]): Array[Identifier] = {
    val dir = namespacePath(namespace)
    if (!fs.exists(dir)) throw new NoSuchNamespaceException(namespace)
    fs.listStatus(dir).filter(_.isDirectory).map(_.getPath.getName)
      .filter(n => fs.exists(new Path(new Path(dir, n), "_delta_log"))).sorted
      .map(n => Identifier.of(namespace, n))
  }

  override def createTable(ident: Identifier, columns: Array[Column], partitions: Array[Transform],
                           properties: util.Map[String, String]): Table = {
    val log = logOf(ident)
    if (log.exists) throw new TableAlreadyExistsException(ident.namespace().toIndexedSeq :+ ident.name())
    if (!isPathIdentifier(ident) && !namespaceExists(ident.namespace())) {
      throw new NoSuchNamespaceException(ident.namespace())
    }
    props(properties).get(TableCatalog.PROP_PROVIDER).filterNot(_.equalsIgnoreCase("strata")).foreach { p =>
      throw InvalidTableOperationException("STRATA_UNSUPPORTED_PROVIDER",
        Map("catalog" -> catalogName, "provider" -> p))
    }
    TableCreation.create(log, columns, partitions, props(properties))
    loadTable(ident)
  }

  private def props(p: util.Map[String, String]): Map[String, String] = p.asScala.toMap

  override def createTable(ident: Identifier, info: TableInfo): Table =
    createTable(ident, info.columns(), info.partitions(), TableCreation.propertiesOf(info, displayName(ident)))
  override def stageCreate(ident: Identifier, info: TableInfo): StagedTable =
    stageCreate(ident, info.columns(), info.partitions(), TableCreation.propertiesOf(info, displayName(ident)))
  override def stageReplace(ident: Identifier, info: TableInfo): StagedTable =
    stageReplace(ident, info.columns(), info.partitions(),
      TableCreation.replacePropertiesOf(info, ident, displayName(ident)))
  override def stageCreateOrReplace(ident: Identifier, info: TableInfo): StagedTable =
    stageCreateOrReplace(ident, info.columns(), info.partitions(),
      TableCreation.replacePropertiesOf(info, ident, displayName(ident)))

  // ---- staged CREATE / REPLACE: definition and data in one commit -----------------------------------------------

  override def stageCreate(ident: Identifier, columns: Array[Column], partitions: Array[Transform],
                           properties: util.Map[String, String]): StagedTable = {
    if (tableExists(ident)) throw new TableAlreadyExistsException(ident.namespace().toIndexedSeq :+ ident.name())
    staged(ident, columns, partitions, properties, TableCreation.CreateAsSelect)
  }

  override def stageReplace(ident: Identifier, columns: Array[Column], partitions: Array[Transform],
                            properties: util.Map[String, String]): StagedTable = {
    if (!tableExists(ident)) throw new NoSuchTableException(ident.namespace().toIndexedSeq :+ ident.name())
    staged(ident, columns, partitions, properties, "REPLACE TABLE AS SELECT")
  }

  override def stageCreateOrReplace(ident: Identifier, columns: Array[Column], partitions: Array[Transform],
                                    properties: util.Map[String, String]): StagedTable =
    staged(ident, columns, partitions, properties, "CREATE OR REPLACE TABLE AS SELECT")

  private def staged(ident: Identifier, columns: Array[Column], partitions: Array[Transform],
                     properties: util.Map[String, String], operation: String): StagedTable = {
    if (!isPathIdentifier(ident) && !namespaceExists(ident.namespace())) {
      throw new NoSuchNamespaceException(ident.namespace())
    }
    new StagedStrataTable(logOf(ident), displayName(ident),
      TableCreation.definition(columns, partitions, props(properties), displayName(ident)), operation)
  }

  override def purgeTable(ident: Identifier): Boolean = dropTable(ident)

  override def alterTable(ident: Identifier, changes: TableChange*): Table = {
    if (!tableExists(ident)) throw new NoSuchTableException(ident.namespace().toIndexedSeq :+ ident.name())
    TableAlteration(logOf(ident), changes)
    loadTable(ident)
  }

  override def dropTable(ident: Identifier): Boolean = {
    if (isPathIdentifier(ident) || !tableExists(ident)) false
    else fs.delete(location(ident), true)
  }

  override def renameTable(oldIdent: Identifier, newIdent: Identifier): Unit = {
    if (!tableExists(oldIdent)) throw new NoSuchTableException(oldIdent.namespace().toIndexedSeq :+ oldIdent.name())
    if (tableExists(newIdent)) throw new TableAlreadyExistsException(newIdent.namespace().toIndexedSeq :+ newIdent.name())
    fs.mkdirs(location(newIdent).getParent)
    if (!fs.rename(location(oldIdent), location(newIdent))) {
      throw new IllegalStateException(s"Could not rename ${displayName(oldIdent)} to ${displayName(newIdent)}.")
    }
  }

  // ---- namespaces: folders under the warehouse --------------------------------------------------------------------

  override def listNamespaces(): Array[Array[String]] = listNamespaces(Array.empty)

  override def listNamespaces(namespace: Array[String]): Array[Array[String]] = {
    val dir = namespacePath(namespace)
    if (!fs.exists(dir)) { if (namespace.isEmpty) Array.empty else throw new NoSuchNamespaceException(namespace) }
    else fs.listStatus(dir).filter(_.isDirectory)
      .filterNot(st => fs.exists(new Path(st.getPath, "_delta_log")))
      .map(st => namespace :+ st.getPath.getName).sortBy(_.mkString("."))
  }

  override def namespaceExists(namespace: Array[String]): Boolean =
    namespace.isEmpty || (fs.exists(namespacePath(namespace)) &&
      !fs.exists(new Path(namespacePath(namespace), "_delta_log")))

  override def loadNamespaceMetadata(namespace: Array[String]): util.Map[String, String] = {
    if (!namespaceExists(namespace)) throw new NoSuchNamespaceException(namespace)
    Map("location" -> namespacePath(namespace).toString).asJava
  }

  override def createNamespace(namespace: Array[String], metadata: util.Map[String, String]): Unit = {
    if (namespaceExists(namespace)) throw new NamespaceAlreadyExistsException(namespace)
    fs.mkdirs(namespacePath(namespace))
  }

  override def alterNamespace(namespace: Array[String], changes: NamespaceChange*): Unit =
    throw new UnsupportedOperationException("Namespaces are folders; they have no properties to alter.")

  override def dropNamespace(namespace: Array[String], cascade: Boolean): Boolean = {
    if (!namespaceExists(namespace)) throw new NoSuchNamespaceException(namespace)
    val dir = namespacePath(namespace)
    if (!cascade && fs.listStatus(dir).nonEmpty) {
      throw new IllegalStateException(s"Namespace ${namespace.mkString(".")} is not empty; use CASCADE.")
    }
    fs.delete(dir, true)
  }
}

object StrataCatalog {
  /** The version of `VERSION AS OF`: a whole number (Spark passes it as a string). */
  private[catalog] def version(version: String): Long = version.trim.toLongOption.getOrElse(
    throw InvalidTableOperationException("STRATA_INVALID_OPTION_VALUE", Map("setting" -> "VERSION AS OF",
      "value" -> version, "allowed" -> "a whole version number, such as VERSION AS OF 3")))
}
