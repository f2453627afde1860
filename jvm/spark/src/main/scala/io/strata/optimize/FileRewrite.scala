package io.strata.optimize

import scala.util.control.NonFatal

import io.strata.config.WriteConf
import io.strata.log.{AddFile, Operation, Snapshot, StrataException, TableLog, TableOperation}
import org.apache.spark.sql.SparkSession

/**
 * Rewrites chosen files of a snapshot as they read now (the table's schema and types, deletion vectors applied), one
 * group per partition, in one commit of [[TableOperation.RewriteFiles]] (dataChange = false): what DROP FEATURE needs
 * when files still hold a feature's traces (values of a type from before a widening, deletion vectors). A concurrent
 * commit that removed one of the files fails it with the typed conflict and leaves no file behind.
 */
object FileRewrite {
  /** The version committed, or None when there was nothing to rewrite. */
  def run(spark: SparkSession, log: TableLog, snapshot: Snapshot, files: Seq[AddFile], operation: Operation)
      : Option[Long] = if (files.isEmpty) None else {
    val conf = WriteConf.internal(spark.conf.getOption, snapshot.metadata.configuration)
    val groups = files.groupBy(_.partitionValues).toSeq.zipWithIndex.map { case ((values, fs), i) =>
      OptimizeGroup(i, values, fs.sortBy(_.path))
    }
    val rewritten = scala.collection.mutable.ArrayBuffer.empty[RewrittenGroup]
    def discard(): Unit = rewritten.foreach(g => scala.util.Try(g.discard(log.conf)))
    try groups.foreach(g => rewritten += GroupRewrite.run(spark, snapshot, g, Long.MaxValue, Nil,
      conf.numIndexedColumns))
    catch { case NonFatal(e) => discard(); throw e }
    val txn = log.startTransaction(Some(snapshot))
    // A typed failure is raised before the version file exists: the files are unreferenced (as in Optimizer).
    val result = try txn.commit(TableOperation.RewriteFiles(files, rewritten.flatMap(_.added).toSeq), Nil, operation)
      catch { case e: StrataException => discard(); throw e }
    rewritten.foreach(_.afterCommit(log.conf))
    Some(result.version)
  }
}
