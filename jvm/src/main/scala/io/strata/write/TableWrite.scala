package io.strata.write

import java.util.UUID

import io.strata.config.WriteOptions
import io.strata.log._
import io.strata.table.TableSchema
import org.apache.spark.sql.types.StructType

/** How a write changes the table; both write paths speak this. */
sealed abstract class WriteMode(val name: String)
object WriteMode {
  case object Append extends WriteMode("Append")
  case object Overwrite extends WriteMode("Overwrite")
}

/**
 * One write of new data files into a table, shared by the V1 and V2 paths: it checks the data against the table
 * (or defines a new table), then turns the written files into one log commit. Everything that can be rejected is
 * rejected in [[TableWrite.begin]], before any file is written.
 */
final class TableWrite private (
    val log: TableLog,
    val txn: Transaction,
    val schema: TableSchema,
    /** For each table column, in table order, the name of the data column that feeds it. */
    val columnMapping: Seq[(String, String)],
    val mode: WriteMode,
    val options: WriteOptions) {

  val isNewTable: Boolean = txn.readSnapshot.isEmpty

  /** True when this application already committed this version (idempotent writes): nothing to write. */
  val alreadyCommitted: Boolean = options.appTransaction.exists { case (app, version) =>
    txn.applicationVersion(app).exists(_ >= version)
  }

  /** Stats columns to index (delta.dataSkippingNumIndexedCols). */
  def numIndexedColumns: Int = txn.metadata.flatMap(_.configuration.get("delta.dataSkippingNumIndexedCols"))
    .flatMap(_.toIntOption).map(n => if (n < 0) Int.MaxValue else n).getOrElse(DataFileStats.DefaultIndexedColumns)

  /** Commits the written files. Fails (typed) on a logical conflict; the caller deletes the files then. */
  def commit(added: Seq[AddFile]): CommitResult = {
    val now = System.currentTimeMillis()
    val removed = mode match {
      case WriteMode.Append => Nil
      case WriteMode.Overwrite =>
        val current = txn.readSnapshot.map(_.files).getOrElse(Nil)
        txn.readWhere(ReadPredicate.WholeTable)
        txn.readFiles(current)
        current.map(_.remove(now))
    }
    val appTxn = options.appTransaction.map { case (app, v) => SetTransaction(app, v, Some(now)) }
    val metrics = Map(
      "numFiles" -> added.size.toLong,
      "numOutputRows" -> added.map(TableWrite.numRecords).sum,
      "numOutputBytes" -> added.map(_.size).sum,
      "numParts" -> added.map(_.partitionValues).distinct.size.toLong) ++
      (if (mode == WriteMode.Overwrite) Map("numRemovedFiles" -> removed.size.toLong,
        "numRemovedBytes" -> removed.flatMap(_.size).sum) else Map.empty)
    val params = Map(
      "mode" -> mode.name,
      "partitionBy" -> ActionCodec.mapper.writeValueAsString(schema.partitionColumns.toArray))
    txn.commit(removed ++ added ++ appTxn, Operation("WRITE", params, metrics, options.userMetadata))
  }
}

object TableWrite {
  /** Starts a write of data with schema `dataSchema` into the table at `log`. */
  def begin(log: TableLog, dataSchema: StructType, mode: WriteMode, options: WriteOptions): TableWrite = {
    val txn = log.startTransaction()
    val name = log.tablePath.toString
    txn.readSnapshot match {
      case None =>
        val partCols = TableSchema.resolvePartitionColumns(dataSchema, options.partitionColumns.getOrElse(Nil))
        val schema = TableSchema.asNullable(dataSchema).asInstanceOf[StructType]
        txn.updateMetadata(Metadata(id = UUID.randomUUID().toString, schemaString = schema.json,
          partitionColumns = partCols, createdTime = Some(System.currentTimeMillis())))
        new TableWrite(log, txn, TableSchema(schema, partCols), schema.fieldNames.toSeq.map(n => n -> n), mode, options)
      case Some(snapshot) =>
        ProtocolSupport.checkWritable(snapshot.protocol, snapshot.metadata, name)
        val table = TableSchema.of(snapshot.metadata)
        options.partitionColumns.foreach { cols =>
          if (cols.map(_.toLowerCase) != table.partitionColumns.map(_.toLowerCase)) {
            throw new InvalidTableOperationException(s"Table $name is partitioned by " +
              s"${table.partitionColumns.mkString("[", ", ", "]")}, but the write asks for ${cols.mkString("[", ", ", "]")}. " +
              "Leave partitionBy out, or give the table's partition columns.")
          }
        }
        val mapping = TableSchema.matchColumns(table.schema, dataSchema, name)
        new TableWrite(log, txn, table, mapping, mode, options)
    }
  }

  /** The row count recorded in an add action's stats. */
  def numRecords(f: AddFile): Long =
    f.stats.flatMap(s => Option(ActionCodec.mapper.readTree(s).get("numRecords"))).map(_.asLong).getOrElse(0L)
}
