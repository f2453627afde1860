package io.strata.procedures

import io.strata.log.{InvalidTableOperationException, TableLog, TableNotFoundException}
import io.strata.read.SnapshotRead
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.catalog.TableCatalog
import org.apache.spark.sql.strata.SparkInternals

/**
 * The table a procedure works on, from its `table` argument: a path (`/data/t`, `s3a://b/t`, `` `/data/t` ``), a
 * strata catalog name (`strata.db.t`, or `db.t` in the current catalog) or a session-catalog name of a table
 * declared `USING strata` or `USING delta` (`spark_catalog.db.t`).
 */
final case class ProcedureTable(name: String, log: TableLog)

object ProcedureTable {
  def resolve(spark: SparkSession, argument: String): ProcedureTable = {
    val text = argument.trim
    val unquoted = if (text.length > 2 && text.startsWith("`") && text.endsWith("`")) text.substring(1, text.length - 1) else text
    if (isPath(unquoted)) ofPath(spark, unquoted)
    else {
      val parts = CatalogLookup.nameParts(spark, text)
      if (parts.size >= 2 && isPath(parts.last) && parts.init.size == 1) ofPath(spark, parts.last) // strata.`/p`
      else ofName(spark, parts)
    }
  }

  private def isPath(s: String) = s.startsWith("/") || s.matches("^[A-Za-z][A-Za-z0-9+.-]*:/.*")

  private def ofPath(spark: SparkSession, path: String): ProcedureTable = {
    val log = TableLog.forPath(new Path(path), SparkInternals.hadoopConf(spark, Map.empty))
    if (!log.exists) throw TableNotFoundException(path)
    ProcedureTable(log.tablePath.toString, log)
  }

  private def ofName(spark: SparkSession, parts: Seq[String]): ProcedureTable = {
    val (catalog, table) = CatalogLookup.loadTable(spark, parts)
    val display = (if (parts.size > 1 && parts.head == catalog) parts else catalog +: parts).mkString(".")
    table match {
      // A Strata catalog table (whichever catalog loaded it) carries the snapshot it read, and with it the path.
      case t: SnapshotRead =>
        ProcedureTable(display, TableLog.forPath(t.readTablePath, SparkInternals.hadoopConf(spark, Map.empty)))
      case t =>
        val props = t.properties()
        val provider = Option(props.get(TableCatalog.PROP_PROVIDER)).map(_.toLowerCase)
        val location = Option(props.get(TableCatalog.PROP_LOCATION))
        if (!provider.exists(p => p == "strata" || p == "delta") || location.isEmpty) {
          throw InvalidTableOperationException("STRATA_NOT_A_DELTA_TABLE", Map("table" -> display,
            "provider" -> provider.getOrElse("unknown")))
        }
        ofPath(spark, location.get).copy(name = display)
    }
  }
}
