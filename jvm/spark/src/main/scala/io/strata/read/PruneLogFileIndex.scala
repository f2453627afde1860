package io.strata.read

import org.apache.spark.sql.catalyst.expressions.{AttributeSet, Expression, PredicateHelper, SubqueryExpression}
import org.apache.spark.sql.catalyst.planning.ScanOperation
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.datasources.{DataSourceStrategy, HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.strata.SparkInternals

/**
 * Plans a path read (`format("strata").load(path)`, Spark's V1 file relation over a [[LogFileIndex]], or a
 * [[DistributedFileIndex]] above the distributed-state threshold, which selects the files with a Spark job) from the log
 * before Spark plans the scan, as delta-spark's PrepareDeltaScan does: under the filters right above it, the relation's
 * index is replaced by one holding only the files those filters may match (partitions by their log values, files by
 * their statistics; the other partitions' files are never built). `inputFiles()`, EXPLAIN, the relation's size (join
 * planning: a broadcast when the selected files are small) and the scan then all see the selected files.
 *
 * Exact by construction: each relation node is pruned by the filters that apply to every row it returns (the
 * deterministic filters Spark's file source strategy pushes to its scan, without subqueries), so a self-join's two
 * sides get their own indexes; the pruned index answers a scan from its files only when the scan's filters include
 * those it was pruned by, and from the whole snapshot otherwise. Streaming relations, relations without filters and
 * filters that leave out no file are left as they are; so is deletion-vector handling (a snapshot fact the relation's
 * file format already carries). Cached data is matched on analyzed plans, before this rule runs.
 */
object PruneLogFileIndex extends Rule[LogicalPlan] with PredicateHelper {
  override def apply(plan: LogicalPlan): LogicalPlan = plan.transformDownWithSubqueries {
    case scan @ ScanOperation(_, _, filters, relation: LogicalRelation) if filters.nonEmpty && prunable(relation) =>
      val fs = relation.relation.asInstanceOf[HadoopFsRelation]
      val (partitionFilters, dataFilters, mixedFilters) = split(relation, fs, filters)
      val pruned = fs.location match {
        case index: LogFileIndex => index.pruned(partitionFilters, dataFilters, mixedFilters)
        // One job; only the selected files reach the driver.
        case index: DistributedFileIndex => index.pruned(partitionFilters, dataFilters, mixedFilters)
      }
      pruned.fold(scan) { pruned =>
        val replaced = relation.copy(relation = fs.copy(location = pruned)(fs.sparkSession))
        scan.transformDown { case r if r eq relation => replaced }
      }
  }

  private def prunable(relation: LogicalRelation): Boolean = !relation.isStreaming && (relation.relation match {
    case fs: HadoopFsRelation => fs.location match {
      case index: LogFileIndex => index.pruning.isEmpty
      case _: DistributedFileIndex => true
      case _ => false
    }
    case _ => false
  })

  /**
   * The partition filters and data filters Spark's file source strategy hands the scan of `relation` under `filters`
   * (its own helpers, same order), less any with a subquery (unknown until the query runs); then the filters over
   * both partition and data columns that neither list holds whole (`p = 0 OR v = 'x'`): files are skipped by them
   * too, each file's partition values serving as exact bounds.
   */
  private def split(relation: LogicalRelation, fs: HadoopFsRelation, filters: Seq[Expression])
      : (Seq[Expression], Seq[Expression], Seq[Expression]) = {
    val usable = filters.filter(f => f.deterministic && !SubqueryExpression.hasSubquery(f))
    val normalized = SparkInternals.normalizeExprs(usable, relation.output)
    val resolver = SQLConf.get.resolver
    val partitionColumns = relation.output.filter(a => fs.partitionSchema.fieldNames.exists(resolver(_, a.name)))
    val partitionSet = AttributeSet(partitionColumns)
    val dataColumns = AttributeSet(relation.output.filterNot(partitionSet.contains))
    val partitionFilters = DataSourceStrategy.getPushedDownFilters(partitionColumns, normalized).toSeq
    val dataFilters = normalized.flatMap { f =>
      if (f.references.intersect(partitionSet).nonEmpty) extractPredicatesWithinOutputSet(f, dataColumns) else Some(f)
    }
    val mixed = normalized.filter(f => f.references.intersect(partitionSet).nonEmpty &&
      f.references.intersect(dataColumns).nonEmpty)
    (partitionFilters, dataFilters, mixed)
  }
}
