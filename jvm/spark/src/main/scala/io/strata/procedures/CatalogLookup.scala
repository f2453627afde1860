package io.strata.procedures

import io.strata.log.InvalidTableOperationException
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.catalog.{Identifier, Table, TableCatalog}
import org.apache.spark.sql.strata.SparkInternals

/** Resolving a user's multi-part table name to a catalog table, the way SQL does (current catalog and namespace). */
object CatalogLookup {
  /** The name's parts as SQL parses them (backquotes, dots); a clear error when it is not a name. */
  def nameParts(spark: SparkSession, name: String): Seq[String] =
    try SparkInternals.parseMultipartIdentifier(spark, name)
    catch {
      case e: Exception => throw InvalidTableOperationException("STRATA_INVALID_TABLE_NAME", Map("name" -> name,
        "reason" -> e.getMessage.linesIterator.next()))
    }

  /** Loads `parts` (catalog.namespace.table, namespace.table or table) the way the analyzer would. */
  def loadTable(spark: SparkSession, parts: Seq[String]): (String, Table) = {
    val manager = SparkInternals.catalogManager(spark)
    val (catalogName, rest) =
      if (parts.size > 1 && manager.isCatalogRegistered(parts.head)) (parts.head, parts.tail)
      else if (parts.size > 1 && parts.head.equalsIgnoreCase("spark_catalog")) ("spark_catalog", parts.tail)
      else (manager.currentCatalog.name(), parts)
    val catalog = manager.catalog(catalogName) match {
      case t: TableCatalog => t
      case other => throw InvalidTableOperationException("STRATA_INVALID_TABLE_NAME", Map("name" -> parts.mkString("."),
        "reason" -> s"catalog $catalogName (${other.getClass.getName}) has no tables"))
    }
    val namespace = if (rest.size > 1) rest.init.toArray else manager.currentNamespace
    (catalogName, catalog.loadTable(Identifier.of(namespace, rest.last)))
  }
}
