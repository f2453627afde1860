package io.strata.catalog

import java.util

import io.strata.config.{WriteConf, WriteEntry}
import io.strata.log.TableLog
import io.strata.optimize.AutoCompaction
import io.strata.table.ColumnNames
import io.strata.write.{TableDefinition, TableWrite}
import io.strata.write.v2.StrataWrite
import org.apache.spark.sql.connector.catalog.{StagedTable, SupportsWrite, TableCapability, TableCatalog}
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.connector.write.{LogicalWriteInfo, SupportsTruncate, Write, WriteBuilder}
import org.apache.spark.sql.types.StructType

import scala.jdk.CollectionConverters._

/**
 * A table being created or replaced (CTAS, RTAS, CREATE OR REPLACE): nothing is visible until one commit holds the
 * new definition together with the data written into it. Without a write, [[commitStagedChanges]] commits the
 * definition alone.
 */
final class StagedStrataTable(log: TableLog, tableName: String, definition: TableDefinition, operation: String)
    extends StagedTable with SupportsWrite {
  @volatile private var written = false
  /** CREATE TABLE AS SELECT (not a replace): the commit must find no table, even one created while the query ran. */
  private val createOnly = operation == TableCreation.CreateAsSelect

  override def name(): String = tableName
  override def schema(): StructType = definition.schema
  override def partitioning(): Array[Transform] =
    definition.partitionColumns.map(ColumnNames.identity).toArray
  override def properties(): util.Map[String, String] =
    (definition.properties + (TableCatalog.PROP_PROVIDER -> "strata")).asJava
  override def capabilities(): util.Set[TableCapability] =
    util.EnumSet.of(TableCapability.BATCH_WRITE, TableCapability.TRUNCATE)

  override def newWriteBuilder(info: LogicalWriteInfo): WriteBuilder = new WriteBuilder with SupportsTruncate {
    override def truncate(): WriteBuilder = this // the staged table is new or fully replaced anyway
    override def build(): Write = {
      val conf = WriteConf.forWrite(info.options().asCaseSensitiveMap().asScala.toMap, WriteEntry.CatalogWrite,
        org.apache.spark.sql.SparkSession.active.conf.getOption)
      val write = TableWrite.define(log, info.schema(), definition, operation, conf, createOnly,
        AutoCompaction.Hook)
      new StrataWrite(log, info, write, () => written = true)
    }
  }

  override def commitStagedChanges(): Unit =
    if (!written) TableCreation.commitDefinition(log, definition, operation, createOnly)

  override def abortStagedChanges(): Unit = () // nothing was committed; written files were deleted by the write
}
