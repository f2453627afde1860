package io.strata.write.v1

import io.strata.config.WriteConf
import io.strata.log.{AddFile, CheckConstraints, CommitResult, ErrorConditions, FilePredicate, PostCommitHook,
  StrataException, TableLog}
import io.strata.read.SnapshotReader
import io.strata.table.{ByNameConversion, PhysicalSchema, SqlPredicates}
import io.strata.write.{InputReads, JobFiles, ReplaceWhereFiles, StreamingBatch, TableWrite, WriteMode}
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{Column, DataFrame, SparkSession}
import org.apache.spark.sql.functions.{coalesce, col, concat, concat_ws, expr, lit, not, raise_error, when}
import org.apache.spark.sql.strata.SparkInternals
import org.apache.spark.sql.types.DataType

/**
 * The V1 (path) write: Spark's FileFormatWriter writes Parquet files through [[DirectCommitProtocol]], then one log
 * commit makes them part of the table. A failure before the commit leaves the table as it was and deletes the files.
 */
object V1TableWriter {
  /**
   * Writes `data` into the table, starting from `base` (the table as the caller loaded it, or only its head for a
   * blind append above the distributed-state threshold: [[io.strata.write.WriteBase]]; None: no table). None when
   * the write's application version (txnAppId / txnVersion) was already committed: nothing was written then.
   * `postCommit`: what runs once the commit landed (the caller's: auto-compaction).
   * `batch`: `data` is a streaming micro-batch (`conf` carries the batch's application transaction); its rows
   * are computed once, by the incremental plan Spark prepared for the batch.
   */
  def write(log: TableLog, data: DataFrame, mode: WriteMode, conf: WriteConf,
            base: Option[Either[io.strata.log.SnapshotHead, io.strata.log.Snapshot]], postCommit: PostCommitHook,
            batch: Option[StreamingBatch] = None): Option[CommitResult] = {
    val write = TableWrite.begin(log, data.schema, mode, conf, postCommit, Some(base))
    if (write.alreadyCommitted) return None
    batch.foreach(write.forStreamingBatch)
    write.readInput(InputReads.ofDataFrame(data, log.tablePath, write.schema))
    val newRows = aligned(write, if (batch.isDefined) MicroBatchRelation.rows(data) else data, log)
    val toWrite = mode match {
      case WriteMode.ReplaceWhere(predicate) => newRows.unionByName(replaceWhere(write, predicate, log))
      case _ => newRows
    }
    val root = log.tablePath.toString
    val jobFiles = batch.fold(new JobFiles(root))(_.jobFiles(root))
    // Column mapping: directories, partition values and statistics by physical name.
    val committer = new DirectCommitProtocol(jobFiles,
      PhysicalSchema.renamed(write.schema.schema, write.schema.partitionSchema), write.numIndexedColumns)
    val writerOptions = Map("compression" -> write.conf.compression) ++
      write.conf.maxRecordsPerFile.map(n => "maxRecordsPerFile" -> n.toString)
    val distributed = if (write.conf.optimizeWrite) OptimizedWrite(toWrite, write.schema.partitionColumns) else toWrite
    jobFiles.tagged(SparkFileWriter.write(distributed, root, write.schema.partitionColumns, committer, writerOptions,
      write.schema.schema))
    val files = committer.addedFiles
    val result = try write.commit(files) catch {
      // Any StrataException is raised before the commit file is created: the files will never be referenced.
      case e: StrataException =>
        DirectCommitProtocol.deleteFiles(root, files, log.conf)
        throw e
    }
    if (result.alreadyCommitted) { DirectCommitProtocol.deleteFiles(root, files, log.conf); None }
    else {
      // What dead attempts left behind: of this job's tasks, or of an earlier run of this micro-batch.
      if (batch.exists(_.sweepEarlierAttempts)) jobFiles.sweepEarlierAttempts(log.conf, files)
      else if (committer.hadRerunTasks) jobFiles.sweepAfterCommit(log.conf, files)
      Some(result)
    }
  }

  /**
   * The data in table column order and spelling, widened where needed, with per-row checks that fail the task:
   * NOT NULL columns and replaceWhere on the incoming columns, then the table's CHECK constraints on the aligned
   * ones (a row passes a constraint only when its predicate is TRUE; NULL fails, as in Delta).
   */
  private def aligned(write: TableWrite, data: DataFrame, log: TableLog): DataFrame = {
    val constraints = write.txn.metadata.toSeq.flatMap(CheckConstraints.of).map { c =>
      val values = SqlPredicates.referencedColumns(c.predicate).distinct.map { r =>
        concat(lit(s"$r = "), coalesce(col(r).cast("string"), lit("null")))
      }
      // raise_error raises Spark's USER_RAISED_EXCEPTION: the message opens with Strata's condition, as the V2
      // path's ConstraintViolationException's does, which is how clients tell the condition.
      val start = ErrorConditions.message("STRATA_CHECK_CONSTRAINT_VIOLATION", Map("constraint" -> c.toString,
        "values" -> ""))
      (not(coalesce(expr(c.predicate), lit(false))), concat(lit(start), concat_ws(", ", values: _*)))
    }
    withChecks(withChecks(data, columnChecks(write, log), write.feeds.map(f => (f.source, f.table.name, f.cast,
      f.table.dataType))), constraints, write.feeds.map(f => (Some(f.table.name), f.table.name, false,
      f.table.dataType)))
  }

  private def columnChecks(write: TableWrite, log: TableLog): Seq[(Column, Column)] =
    write.feeds.filterNot(_.table.nullable).flatMap(f => f.source.map(s => (f, s))).map { case (f, source) =>
      (col(s"`$source`").isNull, lit(ErrorConditions.message("STRATA_NOT_NULL_VIOLATION",
        Map("column" -> f.table.name, "table" -> log.tablePath.toString))))
    } ++ (write.mode match {
      case WriteMode.ReplaceWhere(p) =>
        Seq((not(coalesce(expr(p), lit(false))), lit(ErrorConditions.message("STRATA_REPLACE_WHERE_MISMATCH",
          Map("message" -> s"Written rows must match replaceWhere '$p'; a row does not.")))))
      case _ => Seq.empty[(Column, Column)]
    })

  /**
   * Selects `columns` (source, name, cast?, type; no source: nulls) with `checks` (condition, message) riding on the
   * first column.
   */
  private def withChecks(data: DataFrame, checks: Seq[(Column, Column)],
                         columns: Seq[(Option[String], String, Boolean, DataType)]): DataFrame = {
    if (checks.isEmpty && columns.map(c => (c._1, c._2, c._3)) == data.columns.toSeq.map(n => (Some(n), n, false))) {
      return data
    }
    val selected = columns.zipWithIndex.map { case ((from, name, cast, dataType), i) =>
      val c = from.fold(lit(null).cast(dataType))(s => col(s"`$s`"))
      // Nested fields by name and narrower leaves widened: the conversion the streaming path's rows take too.
      val typed = if (!cast) c else SparkInternals.column(ByNameConversion.matched(SparkInternals.expression(c),
        data.schema(from.get).dataType, dataType, name, SparkInternals.sessionTimeZone(data.sparkSession)))
      // Checks ride on the first column so Spark cannot prune them away; a violation fails the task.
      val checked = if (i == 0 && checks.nonEmpty) {
        checks.tail.foldLeft(when(checks.head._1, raise_error(checks.head._2))) {
          case (w, (cond, msg)) => w.when(cond, raise_error(msg))
        }.otherwise(typed)
      } else typed
      checked.as(name)
    }
    data.select(selected: _*)
  }

  /**
   * Chooses the files replaceWhere replaces. A predicate on partition columns only removes whole files; one on data
   * columns removes the files holding matching rows and rewrites their other rows (returned, to be written too).
   */
  private def replaceWhere(write: TableWrite, predicate: String, log: TableLog): DataFrame = {
    val spark = SparkSession.active
    val empty = spark.createDataFrame(spark.sparkContext.emptyRDD[org.apache.spark.sql.Row], write.schema.schema)
    write.txn.readSnapshot match {
      case None =>
        write.replaceFiles(Nil, FilePredicate.WholeTable)
        empty
      case Some(_) if ReplaceWhereFiles.onPartitionsOnly(predicate, write.schema.partitionColumns) =>
        ReplaceWhereFiles.choose(write, predicate)
        empty
      case Some(snapshot) =>
        val table = spark.baseRelationToDataFrame(SnapshotReader.relation(spark, snapshot))
        val touchedPaths = table.where(coalesce(expr(predicate), lit(false))).select(col("_metadata.file_path"))
          .distinct().collect().map(r => new Path(new java.net.URI(r.getString(0)))).toSet
        val touched: Seq[AddFile] = snapshot.files.filter(f => touchedPaths.contains(snapshot.absolutePath(f.path)))
        write.replaceFiles(touched, ReplaceWhereFiles.scope(write, predicate))
        if (touched.isEmpty) empty
        else spark.baseRelationToDataFrame(SnapshotReader.relation(spark, snapshot, Some(touched)))
          .where(not(coalesce(expr(predicate), lit(false))))
    }
  }
}
