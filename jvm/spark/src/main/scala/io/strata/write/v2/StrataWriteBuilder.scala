package io.strata.write.v2

import io.strata.config.{WriteConf, WriteEntry}
import io.strata.log.{PostCommitHook, Snapshot, SnapshotHead, TableLog}
import io.strata.table.V2PredicateSql
import io.strata.write.{ReplaceWhereFiles, TableWrite, WriteMode}
import org.apache.spark.sql.connector.expressions.filter.Predicate
import org.apache.spark.sql.connector.write._

import scala.jdk.CollectionConverters._

/**
 * DataSource V2 write builder of a Strata table: append by default; `truncate` (INSERT OVERWRITE / overwrite all),
 * `overwrite(predicates)` (static partition overwrite, overwrite by filter) and `overwriteDynamicPartitions`.
 * `base`: the version the statement was analyzed against; when it is only a head (a table above the
 * distributed-state threshold), a blind append commits over it and every other mode builds `snapshot()`.
 */
final class StrataWriteBuilder(log: TableLog, info: LogicalWriteInfo, base: Either[SnapshotHead, Snapshot],
                               snapshot: () => Snapshot, postCommit: PostCommitHook)
    extends WriteBuilder
    with SupportsOverwriteV2 with SupportsDynamicOverwrite {
  private var mode: WriteMode = WriteMode.Append
  // Spark's stream writer options reach here only from a continuous query, refused by StrataWrite.toStreaming.
  private val conf = WriteConf.forWrite(info.options().asCaseSensitiveMap().asScala.toMap, WriteEntry.CatalogWrite,
    org.apache.spark.sql.SparkSession.active.conf.getOption)

  /**
   * Overwrite by filter replaces whole files, so the filter may refer to partition columns only; and it must render
   * as SQL (see [[V2PredicateSql]]). Otherwise Spark refuses the overwrite, naming the filter.
   */
  override def canOverwrite(predicates: Array[Predicate]): Boolean = {
    val partitionColumns = base.fold(_.partitionColumns, _.partitionColumns)
    predicates.forall(p => p.name() == "ALWAYS_TRUE" ||
      V2PredicateSql(p).exists(ReplaceWhereFiles.onPartitionsOnly(_, partitionColumns)))
  }

  override def overwrite(predicates: Array[Predicate]): WriteBuilder = {
    val real = predicates.filterNot(_.name() == "ALWAYS_TRUE")
    mode = if (real.isEmpty) WriteMode.Overwrite else WriteMode.ReplaceWhere(real.map(p => s"(${sql(p)})").mkString(" AND "))
    this
  }

  override def truncate(): WriteBuilder = { mode = WriteMode.Overwrite; this }

  override def overwriteDynamicPartitions(): WriteBuilder = { mode = WriteMode.DynamicOverwrite; this }

  override def build(): Write = {
    val start = base match {
      case Left(head) if mode == WriteMode.Append && !conf.overwriteSchema => Left(head)
      case _ => Right(snapshot())
    }
    new StrataWrite(log, info, TableWrite.begin(log, info.schema(), mode, conf, postCommit, Some(Some(start))),
      () => ())
  }

  /** A V2 predicate as SQL with exact literals ([[canOverwrite]] accepted only predicates that render). */
  private def sql(p: Predicate): String = V2PredicateSql(p).getOrElse(
    throw new IllegalStateException(s"Overwrite filter $p cannot be rendered as SQL"))
}
