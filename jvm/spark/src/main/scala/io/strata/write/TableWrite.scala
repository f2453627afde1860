package io.strata.write

import java.util.UUID

import io.strata.config.WriteConf
import io.strata.log._
import io.strata.table.{PartitionSetPredicate, PhysicalSchema, TableSchema, TypeWideningChanges}
import io.strata.table.TableSchema.ColumnFeed
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.strata.SparkInternals
import org.apache.spark.sql.types.StructType

/** How a write changes the table; both write paths speak this. */
sealed abstract class WriteMode(val name: String)
object WriteMode {
  /** Add the data to the table. */
  case object Append extends WriteMode("Append")
  /** Replace the whole table. */
  case object Overwrite extends WriteMode("Overwrite")
  /** Replace the rows matching `predicate` (a SQL condition); every written row must match it. */
  final case class ReplaceWhere(predicate: String) extends WriteMode("Overwrite")
  /** Replace the partitions the data writes into, keep the others. */
  case object DynamicOverwrite extends WriteMode("Overwrite")
  /** Replace the files a row-level operation read (DELETE, UPDATE, MERGE) by the rows written from them. */
  final case class RewriteRows(command: String) extends WriteMode(command)
}

/** What a copy-on-write operation read: its files (final once its scan ran), its condition as SQL and as read set. */
trait RowLevelRead {
  def files: Seq[AddFile]
  def condition: FilePredicate
  def conditionSql: Seq[String]
}

/**
 * One write of new data files into a table, shared by the V1 and V2 paths: it checks the data against the table
 * (or defines a new table, or evolves its schema), then turns the written files into one log commit. Everything that
 * can be rejected is rejected in [[TableWrite.begin]], before any file is written.
 */
final class TableWrite private (
    val log: TableLog,
    val txn: Transaction,
    val schema: TableSchema,
    /** For each table column, in table order, the data column that feeds it. */
    val feeds: Seq[ColumnFeed],
    val mode: WriteMode,
    writeConf: WriteConf,
    /** What runs once the commit landed (auto-compaction), chosen by the entry point that started the write. */
    postCommit: PostCommitHook,
    operationName: String = "WRITE",
    /** Some(createOnly) when this write (re)defines the table: CTAS (true), RTAS, a new path table, overwriteSchema. */
    definition: Option[Boolean] = None) {

  /** This write's settings ([[WriteConf]]), with the table's properties as its commit will hold them. */
  val conf: WriteConf = writeConf.forTable(txn.metadata.map(_.configuration).getOrElse(Map.empty))

  // Runs after the log core's own hooks (checkpoint, log cleanup), once the commit has landed; never fails it. A
  // transaction without the file state (a blind append above the distributed-state threshold) has its checkpoint
  // written by a Spark job.
  if (!txn.hasFileState) txn.registerPostCommitHook(io.strata.state.DistributedCheckpoint.Hook)
  txn.registerPostCommitHook(postCommit)

  private var replaced: Option[(Seq[AddFile], FilePredicate)] = None
  private var rowLevelRead: Option[RowLevelRead] = None
  private var streamingBatch: Option[StreamingBatch] = None

  /** This write is one micro-batch of a streaming query: commitInfo says so (delta-spark's STREAMING UPDATE). */
  def forStreamingBatch(batch: StreamingBatch): Unit = streamingBatch = Some(batch)

  val isNewTable: Boolean = txn.readHead.isEmpty

  /**
   * True when this application already committed this version (idempotent writes): nothing to write. The commit
   * checks again against every commit that lands meanwhile.
   */
  val alreadyCommitted: Boolean = conf.appTransaction.exists { case (app, version) =>
    txn.applicationVersion(app).exists(_ >= version)
  }

  /** The files of the table as this write read it (a typed error for a write without the file state). */
  def currentFiles: Seq[AddFile] = txn.readSnapshot.map(_.files).getOrElse(Nil)

  /** Stats columns to index (delta.dataSkippingNumIndexedCols). */
  def numIndexedColumns: Int = conf.numIndexedColumns

  /** For [[WriteMode.ReplaceWhere]]: the files the predicate replaces, and the scope a concurrent add conflicts in. */
  def replaceFiles(files: Seq[AddFile], scope: FilePredicate): Unit = replaced = Some((files, scope))

  /** For [[WriteMode.RewriteRows]]: the operation's scan, whose files the commit replaces. */
  def rewriteRowsOf(read: RowLevelRead): Unit = rowLevelRead = Some(read)

  /**
   * Read-then-write: the write's input read this table (at `reads`' versions, selecting their rows). The commit then
   * depends on those rows too, validated from the oldest version read.
   */
  def readInput(reads: Seq[InputRead]): Unit = if (!isNewTable) reads.foreach { r =>
    txn.readWhere(r.predicate)
    txn.readInputAt(r.version)
  }

  /**
   * Commits the written files: the files this write replaces are removed and declared read, and the rows it
   * replaces are its read set. Fails (typed) on a logical conflict; the caller deletes the files then, and also
   * when the result says the application's version was already committed.
   */
  def commit(added: Seq[AddFile], rowCounts: Map[String, Long] = Map.empty,
             rowLevelParams: Map[String, String] = Map.empty): CommitResult = {
    val now = System.currentTimeMillis()
    val op = operation(added)
    val replacedFiles = op match {
      case o: TableOperation.OverwriteByFilter => o.replaced
      case r: TableOperation.ReplaceTable => r.replaced
      case _ => Nil
    }
    val appTxn = appTransaction(now)
    mode match {
      case WriteMode.RewriteRows(command) =>
        val read = rowLevelRead.get
        val params = Map("predicate" -> ActionCodec.mapper.writeValueAsString(read.conditionSql.toArray)) ++
          rowLevelParams
        return txn.commit(op, appTxn.toSeq, Operation(command, params,
          RowLevelMetrics(command, read.files, added, rowCounts), conf.userMetadata))
      case _ =>
    }
    val metrics = Map(
      "numFiles" -> added.size.toLong,
      "numOutputRows" -> added.map(TableWrite.numRecords).sum,
      "numOutputBytes" -> added.map(_.size).sum,
      "numParts" -> added.map(_.partitionValues).distinct.size.toLong) ++
      (if (mode != WriteMode.Append) Map("numRemovedFiles" -> replacedFiles.size.toLong,
        "numRemovedBytes" -> replacedFiles.map(_.size).sum) else Map.empty)
    val params = Map(
      "mode" -> mode.name,
      "partitionBy" -> ActionCodec.mapper.writeValueAsString(schema.partitionColumns.toArray)) ++
      (mode match {
        case WriteMode.ReplaceWhere(p) => Map("predicate" -> ActionCodec.mapper.writeValueAsString(Array(p)))
        case WriteMode.DynamicOverwrite => Map("partitionOverwriteMode" -> "DYNAMIC")
        case _ => Map.empty[String, String]
      })
    streamingBatch match {
      case Some(b) => txn.commit(op, appTxn.toSeq, Operation("STREAMING UPDATE", b.operationParameters, metrics,
        conf.userMetadata))
      case None => txn.commit(op, appTxn.toSeq, Operation(operationName, params, metrics, conf.userMetadata))
    }
  }

  /** Commits an operation the caller built (merge-on-read row changes), with this write's application version. */
  def commitOperation(op: TableOperation, operation: Operation): CommitResult = {
    txn.commit(op, appTransaction(System.currentTimeMillis()).toSeq, operation)
  }

  /** The `txn` action of an idempotent write ([[WriteConf.appTransaction]]). */
  private def appTransaction(now: Long): Option[SetTransaction] =
    conf.appTransaction.map { case (app, v) => SetTransaction(app, v, Some(now)) }

  /** The log operation this write is, given the files it wrote. */
  private def operation(added: Seq[AddFile]): TableOperation = (definition, mode) match {
    case (Some(createOnly), _) =>
      TableOperation.ReplaceTable(txn.metadata.get, currentFiles, added, createOnly)
    case (None, WriteMode.Append) => TableOperation.Append(added)
    case (None, WriteMode.Overwrite) => TableOperation.OverwriteByFilter(FilePredicate.WholeTable, currentFiles, added)
    case (None, WriteMode.DynamicOverwrite) =>
      val written = new PartitionSetPredicate(schema.partitionSchema, added.map(_.partitionValues),
        SparkInternals.sessionZone(SparkSession.active))
      TableOperation.OverwriteByFilter(written, currentFiles.filter(f => written.contains(f.partitionValues)), added)
    case (None, WriteMode.ReplaceWhere(p)) =>
      val (files, scope) = replaced.getOrElse(throw new IllegalStateException(s"replaceWhere '$p': files not chosen"))
      TableOperation.OverwriteByFilter(scope, files, added)
    case (None, WriteMode.RewriteRows(command)) =>
      val read = rowLevelRead.getOrElse(throw new IllegalStateException(s"$command: the operation's scan is unknown"))
      TableOperation.OverwriteByFilter(read.condition, read.files, added)
  }
}

/** A table as CREATE / REPLACE TABLE declares it (catalog writes that define the table in the same commit). */
final case class TableDefinition(schema: StructType, partitionColumns: Seq[String], properties: Map[String, String],
                                 description: Option[String], clusterBy: Option[Seq[Seq[String]]] = None)

object TableWrite {
  /**
   * Starts a write that also (re)defines the table: CTAS, RTAS, CREATE OR REPLACE. The table's metadata and the
   * data land in one commit; replacing drops every current file in that same commit. `createOnly` (CTAS): the
   * commit fails unless no version of the table exists, even one created while the query ran.
   */
  def define(log: TableLog, dataSchema: StructType, definition: TableDefinition, operationName: String,
             conf: WriteConf, createOnly: Boolean, postCommit: PostCommitHook): TableWrite = {
    val txn = log.startTransaction()
    if (createOnly) txn.requireNoTable()
    txn.readSnapshot.foreach(s => ProtocolSupport.checkWritable(s.protocol, s.metadata, log.tablePath.toString))
    val base = txn.readSnapshot.map(_.metadata).getOrElse(Metadata(id = UUID.randomUUID().toString, schemaString = "",
      createdTime = Some(System.currentTimeMillis())))
    // A replaced table's columns are new ones: with column mapping, fresh ids and physical names.
    val defined = PhysicalSchema.withSchema(base.copy(partitionColumns = definition.partitionColumns,
      configuration = TableProperties.applyTo(txn,
        io.strata.config.TableDefaults.forNewTable(definition.properties, txn.readSnapshot.isEmpty), log.tablePath.toString),
      description = definition.description), PhysicalSchema.strip(definition.schema))
    txn.updateMetadata(defined)
    io.strata.table.ClusteringStage(txn, defined, definition.clusterBy, conf.forTable(defined.configuration)
      .numIndexedColumns, log.tablePath.toString)
    val matched = TableSchema.matchColumns(definition.schema, dataSchema, log.tablePath.toString)
    val mode = if (txn.readSnapshot.isDefined) WriteMode.Overwrite else WriteMode.Append
    new TableWrite(log, txn, TableSchema.of(defined), matched.feeds, mode,
      conf, postCommit, operationName, Some(createOnly))
  }

  /**
   * Starts a write of data with schema `dataSchema` into the table at `log`, from `base` when the caller already
   * loaded the table (Some(None): it found no table; a [[SnapshotHead]] for a blind append without the file state,
   * [[WriteBase]]), else from the latest snapshot.
   */
  def begin(log: TableLog, dataSchema: StructType, mode: WriteMode, conf: WriteConf, postCommit: PostCommitHook,
            base: Option[Option[Either[SnapshotHead, Snapshot]]] = None): TableWrite = {
    val txn = base match {
      case Some(Some(Left(head))) =>
        if (mode != WriteMode.Append || conf.overwriteSchema) throw new IllegalArgumentException(
          s"A write without the file state of ${log.tablePath} can only append (mode ${mode.name}).")
        log.startTransaction(head)
      case Some(b) => log.startTransaction(b.map(_.toOption.get))
      case None => log.startTransaction()
    }
    val name = log.tablePath.toString
    if (conf.overwriteSchema && mode != WriteMode.Overwrite) throw InvalidTableOperationException(
      "STRATA_CONFLICTING_OPTIONS",
      "Option overwriteSchema replaces the whole table: use it with mode 'overwrite' and without replaceWhere or " +
        "dynamic partition overwrite.")
    txn.readHead match {
      case Some(snapshot) if !conf.overwriteSchema =>
        ProtocolSupport.checkWritable(snapshot.protocol, snapshot.metadata, name)
        val table = TableSchema.of(snapshot.metadata)
        conf.partitionColumns.foreach { cols =>
          if (cols.map(_.toLowerCase) != table.partitionColumns.map(_.toLowerCase)) {
            throw InvalidTableOperationException("STRATA_PARTITIONING_MISMATCH", Map("table" -> name,
              "tableColumns" -> table.partitionColumns.mkString("[", ", ", "]"),
              "writeColumns" -> cols.mkString("[", ", ", "]")))
          }
        }
        // mergeSchema on a table with type widening enabled: data columns of a wider type widen the table's first.
        val widened = if (conf.mergeSchema) TypeWideningChanges.evolve(table.schema, dataSchema, snapshot.metadata,
          snapshot.protocol, snapshot.version + 1, name, conf.automaticWidening) else table.schema
        val matched = TableSchema.matchColumns(widened, dataSchema, name, merge = conf.mergeSchema)
        // New columns of a table with column mapping get ids and physical names (PhysicalSchema.withSchema).
        val evolved = matched.newSchema.orElse(Some(widened).filter(_ != table.schema))
          .map(s => PhysicalSchema.withSchema(snapshot.metadata, s))
        evolved.foreach(txn.updateMetadata)
        new TableWrite(log, txn, TableSchema(evolved.fold(table.schema)(TableSchema.of(_).schema),
          table.partitionColumns), matched.feeds, mode, conf, postCommit)
      case existing =>
        // A new table, or a whole-table replacement with overwriteSchema: the data defines schema and partitioning.
        existing.foreach(s => ProtocolSupport.checkWritable(s.protocol, s.metadata, name))
        val schema = TableSchema.asNullable(dataSchema).asInstanceOf[StructType]
        val keep = existing.map(_.partitionColumns).filter(_.forall(c => schema.fieldNames.contains(c)))
        val partCols = TableSchema.resolvePartitionColumns(schema,
          conf.partitionColumns.orElse(keep).getOrElse(Nil))
        val base = existing.map(_.metadata).getOrElse(Metadata(id = UUID.randomUUID().toString, schemaString = "",
          createdTime = Some(System.currentTimeMillis())))
        val configuration = if (existing.isDefined) base.configuration else
          TableProperties.applyTo(txn, io.strata.config.TableDefaults.forNewTable(Map.empty, isNew = true), name)
        val defined = PhysicalSchema.withSchema(base.copy(partitionColumns = partCols, configuration = configuration),
          PhysicalSchema.strip(schema))
        txn.updateMetadata(defined)
        new TableWrite(log, txn, TableSchema.of(defined),
          schema.fields.toSeq.map(f => ColumnFeed(f, Some(f.name), cast = false)), mode, conf, postCommit,
          definition = Some(false))
    }
  }

  /** The row count recorded in an add action's stats. */
  def numRecords(f: AddFile): Long = recordCount(f).getOrElse(0L)

  /** The rows a reader sees in the file (its stats' count minus its deletion vector's), if its stats count them. */
  def recordCount(f: AddFile): Option[Long] = f.logicalRows
}
