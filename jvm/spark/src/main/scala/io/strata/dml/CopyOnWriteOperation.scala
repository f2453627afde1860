package io.strata.dml

import io.strata.config.{WriteConf, WriteEntry}
import io.strata.read.FileColumn
import io.strata.write.{TableWrite, WriteMode}
import io.strata.write.v2.StrataWrite
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.expressions.{Expressions, NamedReference}
import org.apache.spark.sql.connector.read.ScanBuilder
import org.apache.spark.sql.connector.write.{LogicalWriteInfo, RowLevelOperation, RowLevelOperationBuilder, Write,
  WriteBuilder}
import org.apache.spark.sql.util.CaseInsensitiveStringMap

import scala.jdk.CollectionConverters._

/**
 * DELETE, UPDATE or MERGE as copy-on-write (Spark's group-based ReplaceData): Spark reads whole files through
 * [[CopyOnWriteScan]], computes the new content of each, and the write replaces exactly the files read by the rows
 * written, in one commit validated from the snapshot the statement read (the conflict rules of an overwrite whose
 * filter is the operation's condition).
 *
 * The file column is declared as a required metadata attribute: Spark then writes through its projecting writer
 * task; without one, Spark 4.1.1 hands the writer an extra leading operation column (SPARK-56510).
 */
final class CopyOnWriteOperation(table: RowLevelTarget, cmd: RowLevelOperation.Command)
    extends RowLevelOperation {
  import CopyOnWriteOperation.commitParameters
  @volatile private var scan: Option[CopyOnWriteScan] = None

  override def command(): RowLevelOperation.Command = cmd
  override def description(): String = s"Strata copy-on-write $cmd"
  override def requiredMetadataAttributes(): Array[NamedReference] = Array(Expressions.column(FileColumn.Name))

  override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder =
    new CopyOnWriteScanBuilder(table.snapshot, s => scan = Some(s))

  override def newWriteBuilder(info: LogicalWriteInfo): WriteBuilder = new WriteBuilder {
    override def build(): Write = {
      val read = scan.getOrElse(throw new IllegalStateException(s"$cmd on ${table.name}: the write was planned " +
        "before the operation's scan"))
      val conf = WriteConf.forWrite(info.options().asCaseSensitiveMap().asScala.toMap, WriteEntry.CatalogWrite,
        SparkSession.active.conf.getOption)
      val write = TableWrite.begin(table.log, info.schema(), WriteMode.RewriteRows(cmd.name()), conf,
        table.postCommit, Some(Some(Right(table.snapshot))))
      write.rewriteRowsOf(read)
      new StrataWrite(table.log, info, write, () => (), commitParameters(cmd))
    }
  }
}

object CopyOnWriteOperation {
  /** What the commit records besides the condition: MERGE's clauses, read from the running statement's plan. */
  private def commitParameters(cmd: RowLevelOperation.Command): () => Map[String, String] =
    if (cmd == RowLevelOperation.Command.MERGE) () => MergeClauses.current() else () => Map.empty
}

final class CopyOnWriteOperationBuilder(table: RowLevelTarget, cmd: RowLevelOperation.Command)
    extends RowLevelOperationBuilder {
  override def build(): RowLevelOperation = new CopyOnWriteOperation(table, cmd)
}
