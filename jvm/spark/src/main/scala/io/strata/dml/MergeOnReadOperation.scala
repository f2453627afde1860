package io.strata.dml

import io.strata.config.{WriteConf, WriteEntry}
import io.strata.log.FilePredicate
import io.strata.read.{FileColumn, RowIndexColumn, StrataScanBuilder}
import io.strata.table.{FilePredicates, TableSchema}
import io.strata.write.{TableWrite, WriteMode}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.expressions.{Expressions, NamedReference}
import org.apache.spark.sql.connector.read.ScanBuilder
import org.apache.spark.sql.connector.write.{DeltaWrite, DeltaWriteBuilder, LogicalWriteInfo, RowLevelOperation,
  RowLevelOperationBuilder, SupportsDelta}
import org.apache.spark.sql.strata.SparkInternals
import org.apache.spark.sql.util.CaseInsensitiveStringMap

import scala.jdk.CollectionConverters._

/**
 * DELETE, UPDATE or MERGE as merge-on-read on a table with `delta.enableDeletionVectors` (Spark's WriteDelta): the
 * scan returns only the rows the condition may select, each with its row id (data file, row index); the write marks
 * the changed rows deleted in the files' deletion vectors and writes new and changed rows to new files
 * ([[MergeOnReadWrite]]). Nothing is copied. Validated from the snapshot the statement read.
 */
final class MergeOnReadOperation(table: RowLevelTarget, cmd: RowLevelOperation.Command)
    extends RowLevelOperation with SupportsDelta {
  @volatile private var scanned: Option[StrataScanBuilder] = None

  override def command(): RowLevelOperation.Command = cmd
  override def description(): String = s"Strata merge-on-read $cmd"
  override def rowId(): Array[NamedReference] =
    Array(Expressions.column(FileColumn.Name), Expressions.column(RowIndexColumn.Name))
  override def representUpdateAsDeleteAndInsert(): Boolean = true

  override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder = {
    val builder = table.scanBuilder(options)
    scanned = Some(builder)
    builder
  }

  /** The rows the scan selected (the conditions Spark pushed to it), as the commit's read set. */
  private def condition(): FilePredicate = {
    val schema = TableSchema.of(table.snapshot.metadata)
    val pushed = scanned.map(_.pushedConditions).getOrElse(Nil)
    FilePredicates.fromCondition(s"the rows matching ${pushed.map(_.sql).mkString(" AND ")}", pushed, schema.schema,
      schema.partitionColumns, SparkInternals.sessionZone(SparkSession.active))
  }

  override def newWriteBuilder(info: LogicalWriteInfo): DeltaWriteBuilder = new DeltaWriteBuilder {
    override def build(): DeltaWrite = {
      val conf = WriteConf.forWrite(info.options().asCaseSensitiveMap().asScala.toMap, WriteEntry.CatalogWrite,
        SparkSession.active.conf.getOption)
      // A DELETE writes no rows (Spark gives it an empty row schema): it is checked as a write of the table's columns.
      val rows = if (info.schema().isEmpty) TableSchema.of(table.snapshot.metadata).schema else info.schema()
      val write = TableWrite.begin(table.log, rows, WriteMode.RewriteRows(cmd.name()), conf,
        table.postCommit, Some(Some(Right(table.snapshot))))
      new MergeOnReadWrite(write, table.snapshot, cmd.name(), () => condition())
    }
  }
}

final class MergeOnReadOperationBuilder(table: RowLevelTarget, cmd: RowLevelOperation.Command)
    extends RowLevelOperationBuilder {
  override def build(): RowLevelOperation = new MergeOnReadOperation(table, cmd)
}
