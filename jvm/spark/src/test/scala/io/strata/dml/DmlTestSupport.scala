package io.strata.dml

import java.nio.file.{Files, Paths}

import io.strata.SparkTestSession
import io.strata.log._
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{DataFrame, Row}
import org.scalatest.Suite

/** Helpers shared by the DML suites: the log of a catalog table, its rows, and a rival commit placed before ours. */
trait DmlTestSupport extends SparkTestSession { self: Suite =>
  def rows(df: DataFrame): Seq[Row] = df.collect().toSeq.sortBy(_.toString)
  def rowsOf(table: String, cols: String = "*"): Seq[Row] = rows(spark.sql(s"SELECT $cols FROM $table"))
  def log(table: String): TableLog = TableLog.forPath(new Path(location(table)), new Configuration())
  def localDir(table: String): java.nio.file.Path = {
    val l = location(table)
    if (l.contains(":")) Paths.get(new java.net.URI(l).getPath) else Paths.get(l)
  }
  def version(table: String): Long = log(table).snapshot().version
  def lastCommit(table: String): CommitInfo = log(table).history().head.commitInfo.get
  def metric(table: String, name: String): Long =
    Option(lastCommit(table).json.get("operationMetrics")).flatMap(m => Option(m.get(name)))
      .map(_.asText.toLong).getOrElse(fail(s"no metric $name in ${lastCommit(table).json}"))

  /** The add and remove actions of one commit, as (added paths, removed paths). */
  def changes(table: String, v: Long): (Seq[AddFile], Seq[RemoveFile]) = {
    val actions = log(table).readCommit(v)
    (actions.collect { case a: AddFile => a }, actions.collect { case r: RemoveFile => r })
  }

  def causes(e: Throwable): Seq[Throwable] = Iterator.iterate(e)(_.getCause).takeWhile(_ != null).toSeq

  /** The typed cause `T` of `e` (Spark may wrap the connector's exception). */
  def causeOf[T <: Throwable](e: Throwable)(implicit ct: scala.reflect.ClassTag[T]): T =
    causes(e).collectFirst { case t: T => t }.getOrElse(fail(s"no ${ct.runtimeClass.getSimpleName} in the causes of $e", e))


  /** Like [[withRivalBeforeCommit]], and asserts that the rival did run. */
  def raced[T](rival: => Unit)(body: => T): T = {
    var ran = false
    val r = withRivalBeforeCommit { rival; ran = true }(body)
    assert(ran, "the rival never ran: the statement did not reach its commit")
    r
  }

  /** Another writer's compaction: each of `files` rewritten under a new name with the same rows, dataChange = false. */
  def compact(table: String, files: AddFile => Boolean): Unit = {
    val l = log(table)
    val txn = l.startTransaction()
    val snap = txn.readSnapshot.get
    val old = snap.files.filter(files)
    assert(old.nonEmpty, "nothing to compact")
    val renamed = old.map { f =>
      val src = Paths.get(new java.net.URI(snap.absolutePath(f.path).toUri.toString).getPath)
      val name = "compacted-" + src.getFileName
      Files.copy(src, src.resolveSibling(name))
      f.copy(path = f.path.substring(0, f.path.length - src.getFileName.toString.length) + name)
    }
    txn.commit(TableOperation.RewriteFiles(old, renamed), Nil, Operation("OPTIMIZE"))
  }
}
