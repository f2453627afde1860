package io.strata.optimize

import java.util.concurrent.{Callable, ExecutionException, Executors, Future, ThreadFactory, TimeUnit}
import java.util.concurrent.atomic.AtomicInteger

import io.strata.config.{WriteConf, WriteSettings}
import io.strata.log._
import io.strata.table.SqlPredicates
import org.apache.spark.sql.SparkSession

import scala.collection.mutable
import scala.util.control.NonFatal

/**
 * What to optimize. `where`: SQL over partition columns choosing the partitions (None: all); `zOrderBy`: data
 * columns to cluster by (empty: bin-packing); `targetFileSize`: None for the table's `delta.targetFileSize`, else
 * 128 MiB; `minInputFiles`: bins with fewer files are left alone (unless a file has a deletion vector);
 * `partitions`: only these partitions (auto-compaction: the ones a commit touched), on top of `where`;
 * `smallFileSize`: bin-packing candidates are the files below it (default: the target); `maxCommits`: overrides
 * `spark.strata.optimize.maxCommits`; `full`: OPTIMIZE FULL of a clustered table (also reclusters the cubes of other
 * clustering columns or providers, [[ZCubes]]).
 */
final case class OptimizeRequest(
    where: Option[String] = None,
    zOrderBy: Seq[String] = Nil,
    targetFileSize: Option[Long] = None,
    minInputFiles: Int = 2,
    auto: Boolean = false,
    partitions: Option[Seq[Map[String, Option[String]]]] = None,
    smallFileSize: Option[Long] = None,
    maxCommits: Option[Int] = None,
    full: Boolean = false)

/** What an optimize did. `conflicts`: each group lost to a concurrent change, with the typed conflict. */
final case class OptimizeResult(
    filesRemoved: Long, filesAdded: Long, bytesRemoved: Long, bytesAdded: Long, partitionsOptimized: Long,
    groupsCommitted: Int, groupsConflicted: Int, versions: Seq[Long],
    conflicts: Seq[(OptimizeGroup, ConcurrentModificationException)])

object OptimizeResult {
  val empty: OptimizeResult = OptimizeResult(0, 0, 0, 0, 0, 0, 0, Nil, Nil)
}

/**
 * OPTIMIZE: rewrites small files (bin-packing) or every file of the chosen partitions (Z-order) into files of about
 * the target size, without changing any row. Everything is planned from one snapshot; each group of files is
 * rewritten by its own Spark job (up to `spark.strata.optimize.maxThreads` at once) and the groups commit in
 * batches, one per partition (consecutive partitions share a commit when there are more than
 * `spark.strata.optimize.maxCommits`; none larger than `spark.strata.optimize.batchSize`), each as
 * [[TableOperation.RewriteFiles]]: removes and adds with
 * `dataChange=false`, so concurrent appends never conflict. A batch that loses to a concurrent commit which removed
 * one of its files (a DELETE, UPDATE, overwrite, another compaction) gives up exactly the groups whose files were
 * removed, with the typed conflict, and commits the others; a metadata or protocol change loses the whole batch.
 */
object Optimizer {
  private val logger = org.slf4j.LoggerFactory.getLogger(getClass)

  def run(spark: SparkSession, log: TableLog, request: OptimizeRequest): OptimizeResult = {
    val snapshot = log.snapshot()
    val name = log.tablePath.toString
    ProtocolSupport.checkWritable(snapshot.protocol, snapshot.metadata, name)
    val conf = WriteConf.internal(spark.conf.getOption, snapshot.metadata.configuration)
    val settings = OptimizeSettings.resolve(spark, snapshot, request, conf)
    val partitions = request.partitions.map(ps =>
      io.strata.table.PartitionValues.keySet(ps, io.strata.table.TableSchema.of(snapshot.metadata).partitionSchema,
        None))
    // A clustered table clusters incrementally by ZCubes; auto-compaction of one bin-packs only its unclustered
    // files (clustered ones keep their layout).
    val plan = if (settings.clustering.nonEmpty) OptimizeClustering.plan(snapshot, settings,
      conf(WriteSettings.ClusteringMinCubeSize), conf(WriteSettings.ClusteringTargetCubeSize),
      conf(WriteSettings.OptimizeBatchSize), request.full)
    else {
      val clustering = Clustering.columns(snapshot)
      OptimizePlanner.plan(snapshot, v => settings.selects(v) && partitions.forall(_.contains(v)),
        settings.targetFileSize, request.minInputFiles, settings.zOrderBy.nonEmpty,
        request.maxCommits.getOrElse(conf(WriteSettings.OptimizeMaxCommits)),
        request.smallFileSize.getOrElse(settings.targetFileSize),
        f => clustering.isEmpty || Clustering.provider(f).isEmpty, conf(WriteSettings.OptimizeBatchSize))
    }
    if (plan.isEmpty) return OptimizeResult.empty
    new Run(spark, log, snapshot, plan, settings, conf, request.auto, request.full).execute()
  }

  private final class Run(spark: SparkSession, log: TableLog, snapshot: Snapshot, plan: OptimizePlan,
                          settings: OptimizeSettings, conf: WriteConf, auto: Boolean, full: Boolean) {
    private val hadoopConf = log.conf
    private val partitionColumns = io.strata.table.PhysicalSchema.physicalColumns(
      io.strata.table.TableSchema.of(snapshot.metadata).schema, snapshot.metadata.partitionColumns) // the log's keys
    private val committed = mutable.ArrayBuffer.empty[RewrittenGroup]
    private val conflicts = mutable.ArrayBuffer.empty[(OptimizeGroup, ConcurrentModificationException)]
    private val versions = mutable.ArrayBuffer.empty[Long]
    private val settled = mutable.Set.empty[Int] // groups committed or discarded
    /** A clustered table's groups: each one new ZCube (delta-spark's cube id: a random UUID). */
    private val cubeIds = plan.groups.map(g => g.index -> java.util.UUID.randomUUID.toString).toMap

    def execute(): OptimizeResult = {
      val threads = math.min(conf(WriteSettings.OptimizeMaxThreads), plan.groups.size)
      val pool = Executors.newFixedThreadPool(threads, Run.daemonThreads)
      val numIndexedCols = conf.numIndexedColumns
      val jobs: Map[Int, Future[RewrittenGroup]] = plan.groups.map { g =>
        g.index -> pool.submit(new Callable[RewrittenGroup] {
          override def call(): RewrittenGroup = {
            SparkSession.setActiveSession(spark)
            GroupRewrite.run(spark, snapshot, g, settings.targetFileSize, settings.layout, numIndexedCols,
              settings.curve)
          }
        })
      }.toMap
      try {
        plan.batches.foreach(batch => commit(batch.map(g => await(jobs(g.index)))))
      } catch {
        case NonFatal(e) =>
          jobs.values.foreach(_.cancel(false))
          pool.shutdown()
          pool.awaitTermination(10, TimeUnit.MINUTES)
          // Files of groups that were written but never committed are garbage.
          jobs.foreach { case (i, f) =>
            if (!settled(i) && f.isDone && !f.isCancelled) scala.util.Try(f.get()).foreach(_.discard(hadoopConf))
          }
          throw e
      } finally pool.shutdown()
      val files = committed.map(_.group.files)
      OptimizeResult(files.map(_.size.toLong).sum, committed.map(_.added.size.toLong).sum,
        files.flatten.map(_.size).sum, committed.map(_.bytesAdded).sum,
        committed.map(g => io.strata.table.PartitionValues.typedKey(g.group.partitionValues,
          io.strata.table.TableSchema.of(snapshot.metadata).partitionSchema, None)).distinct.size.toLong,
        committed.size, conflicts.size, versions.sorted.toSeq, conflicts.toSeq)
    }

    private def await(f: Future[RewrittenGroup]): RewrittenGroup =
      try f.get() catch { case e: ExecutionException if e.getCause != null => throw e.getCause }

    /** Commits one batch; on a conflict, retries without the groups whose files a winner removed. */
    private def commit(batch: Seq[RewrittenGroup]): Unit = {
      var pending = batch
      // A clustered table's later batch commits on the latest snapshot (our own commits wrote the domain).
      val base = if (settings.clustering.isEmpty || versions.isEmpty) snapshot else {
        val latest = log.snapshot()
        val (ok, lost) = LaterBatch.rebase(snapshot, latest, pending.map(_.group))
        lost.foreach { case (group, e) => pending.find(_.group == group).foreach(lose(_, e)) }
        pending = pending.filter(g => ok.contains(g.group))
        latest
      }
      while (pending.nonEmpty) {
        val txn = log.startTransaction(Some(base))
        // A clustered table's rewrite restates its clustering domain: a concurrent CLUSTER BY change (a write of the
        // same domain) then conflicts, rather than files clustered by old columns being marked as the new ones'.
        if (settings.clustering.nonEmpty) txn.writeDomain(Clustering.domain(settings.clustering))
        val added = pending.flatMap(g => g.added.map(f =>
          if (settings.clustering.isEmpty) f
          else Clustering.clustered(f, cubeIds(g.group.index), settings.zOrderBy, settings.curve.name)))
        val op = TableOperation.RewriteFiles(pending.flatMap(_.group.files), added)
        try {
          val result = txn.commit(op, Nil, operation(pending))
          versions += result.version
          committed ++= pending
          pending.foreach { g => settled += g.group.index; g.afterCommit(hadoopConf) }
          pending = Nil
        } catch {
          case e: ConcurrentModificationException =>
            val removed = removedSince(base.version)
            val (lost, rest) = pending.partition(_.group.files.exists(f => removed(abs(f.path))))
            val gone = if (lost.isEmpty) pending else lost
            gone.foreach(lose(_, e))
            pending = if (lost.isEmpty) Nil else rest
          case e: StrataException => // raised before the version file was created: the files are unreferenced
            pending.foreach { g => g.discard(hadoopConf); settled += g.group.index }
            throw e
        }
      }
    }

    private def lose(g: RewrittenGroup, e: ConcurrentModificationException): Unit = {
      logger.warn(s"OPTIMIZE of ${log.tablePath}: ${g.group.describe(partitionColumns)} not committed: " + e.getMessage)
      g.discard(hadoopConf)
      settled += g.group.index
      conflicts += (g.group -> e)
    }

    private def abs(path: String): String = Snapshot.absolutePath(log.tablePath, path).toString

    /** Files removed by the commits after the planned snapshot (ours remove none of a pending group's files). */
    private def removedSince(version: Long): Set[String] = {
      val latest = log.snapshot().version
      (version + 1 to latest).iterator.flatMap(v => log.readCommit(v)).collect { case r: RemoveFile => abs(r.path) }
        .toSet
    }

    private def operation(groups: Seq[RewrittenGroup]): Operation = {
      val sizes = groups.flatMap(_.added).map(_.size).sorted
      def pct(q: Double): Long = if (sizes.isEmpty) 0L else sizes(math.min(sizes.size - 1, (q * sizes.size).toInt))
      val removed = groups.flatMap(_.group.files)
      val metrics = Map(
        "numRemovedFiles" -> removed.size.toLong,
        "numAddedFiles" -> sizes.size.toLong,
        "numRemovedBytes" -> removed.map(_.size).sum,
        "numAddedBytes" -> sizes.sum,
        "minFileSize" -> sizes.headOption.getOrElse(0L),
        "p25FileSize" -> pct(0.25),
        "p50FileSize" -> pct(0.5),
        "p75FileSize" -> pct(0.75),
        "maxFileSize" -> sizes.lastOption.getOrElse(0L),
        "numDeletionVectorsRemoved" -> removed.count(_.deletionVector.isDefined).toLong)
      val json = ActionCodec.mapper
      Operation("OPTIMIZE", Map(
        "predicate" -> json.writeValueAsString(settings.predicateSql.toArray),
        "zOrderBy" -> json.writeValueAsString((if (settings.clustering.isEmpty) settings.zOrderBy else Nil).toArray),
        "clusterBy" -> json.writeValueAsString((if (settings.clustering.isEmpty) Nil else settings.zOrderBy).toArray)),
        metrics, flags = Map("auto" -> auto) ++ // delta-spark records isFull for clustered tables only
          (if (settings.clustering.isEmpty) Nil else Seq("isFull" -> full)))
    }
  }

  private object Run {
    private val count = new AtomicInteger()
    val daemonThreads: ThreadFactory = (r: Runnable) => {
      val t = new Thread(r, s"strata-optimize-${count.incrementAndGet()}")
      t.setDaemon(true)
      t
    }
  }
}

/**
 * An optimize's checked settings: the partitions it selects, Z-order columns as the table spells them (a clustered
 * table: its clustering columns' names, `s.a` for a nested field), target; `clustering`: a clustered table's columns
 * (physical paths) and `clusteringPaths` the same as logical paths.
 */
final case class OptimizeSettings(selects: Map[String, Option[String]] => Boolean, predicateSql: Seq[String],
                                  zOrderBy: Seq[String], targetFileSize: Long, clustering: Seq[Seq[String]] = Nil,
                                  clusteringPaths: Seq[Seq[String]] = Nil) {
  /** The column paths the rows are laid out by (none: bin-packing). */
  def layout: Seq[Seq[String]] = if (clusteringPaths.nonEmpty) clusteringPaths else zOrderBy.map(Seq(_))
  /** The curve they are laid out along: delta-spark's for liquid clustering, Z-order for ZORDER BY. */
  def curve: Curve = if (clusteringPaths.nonEmpty) Curve.forClustering(clusteringPaths.size) else Curve.ZOrder
}

object OptimizeSettings {
  private def invalid(argument: String, what: String, expected: String) =
    InvalidTableOperationException("STRATA_INVALID_PROCEDURE_ARGUMENT",
      Map("procedure" -> "optimize", "argument" -> argument, "problem" -> what, "expected" -> expected))

  def resolve(spark: SparkSession, snapshot: Snapshot, request: OptimizeRequest, conf: WriteConf): OptimizeSettings = {
    val table = io.strata.table.TableSchema.of(snapshot.metadata)
    val parts = table.partitionColumns
    val columns = table.schema.fieldNames.toSeq
    val (selects, predicateSql) = request.where.map(_.trim).filter(_.nonEmpty) match {
      case None => ((_: Map[String, Option[String]]) => true, Seq.empty[String])
      case Some(w) =>
        if (parts.isEmpty) throw invalid("where", s"('$w') selects partitions, but the table is not partitioned",
          "no where argument: optimize the whole table")
        val others = SqlPredicates.referencedColumns(w).filterNot(c => parts.exists(_.equalsIgnoreCase(c)))
        if (others.nonEmpty) throw invalid("where", s"('$w') refers to ${others.mkString(", ")}, which " +
          (if (others.size == 1) "is not a partition column" else "are not partition columns"),
          s"a predicate over the partition columns only (${parts.mkString(", ")})")
        (SqlPredicates.partitionMatcher(spark, w, table.partitionSchema),
          Seq(SqlPredicates.predicateSql(spark, w, table.partitionSchema)))
    }
    val numIndexed = conf.numIndexedColumns
    val dataFields = table.schema.fields.filterNot(f => parts.contains(f.name))
    val clustering = Clustering.columns(snapshot)
    if (request.full && clustering.isEmpty) throw invalid("full", s"is true, but ${snapshot.tablePath} is not a " +
      "clustered table (OPTIMIZE FULL reclusters a clustered table's files)", "full => false, or a table with " +
      "clustering columns (ALTER TABLE ... CLUSTER BY (...))")
    if (clustering.nonEmpty && !request.auto) return OptimizeClustering.settings(snapshot, request, clustering, selects, predicateSql,
      request.targetFileSize.getOrElse(conf(WriteSettings.OptimizeTargetFileSize)))
    val zOrderBy = request.zOrderBy.map { c =>
      val name = columns.find(_.equalsIgnoreCase(c.trim)).getOrElse(throw invalid("zorder_by",
        s"names column '$c', which the table does not have", s"data columns of the table (${columns.filterNot(
          parts.contains).mkString(", ")})"))
      if (parts.contains(name)) throw invalid("zorder_by", s"names partition column '$name' (every file holds one " +
        "value of it, so ordering by it changes nothing)", s"data columns (${columns.filterNot(parts.contains)
        .mkString(", ")})")
      val field = table.schema(name)
      if (!ZOrder.orderable(field.dataType)) throw invalid("zorder_by", s"names column '$name' of " +
        s"type ${field.dataType.sql}", "columns of atomic types (numbers, strings, dates, timestamps, booleans, binary)")
      val leaf = dataFields.takeWhile(_.name != name).map(f => leaves(f.dataType)).sum
      if (leaf >= numIndexed) throw invalid("zorder_by", s"names column '$name', which has no statistics (the " +
        s"table keeps them for its first $numIndexed leaf columns, delta.dataSkippingNumIndexedCols; '$name' is " +
        s"number ${leaf + 1}), so Z-ordering by it would skip no file", "columns with statistics, or raise " +
        "delta.dataSkippingNumIndexedCols first")
      name
    }
    val dup = zOrderBy.groupBy(identity).collectFirst { case (c, cs) if cs.size > 1 => c }
    dup.foreach(c => throw invalid("zorder_by", s"names column '$c' twice", "each column once"))
    if (zOrderBy.size > 31) throw invalid("zorder_by", s"names ${zOrderBy.size} columns", "at most 31")
    val target = request.targetFileSize.getOrElse(conf(WriteSettings.OptimizeTargetFileSize))
    OptimizeSettings(selects, predicateSql, zOrderBy, target)
  }

  private def leaves(dt: org.apache.spark.sql.types.DataType): Int = dt match {
    case s: org.apache.spark.sql.types.StructType => s.fields.map(f => leaves(f.dataType)).sum
    case a: org.apache.spark.sql.types.ArrayType => leaves(a.elementType)
    case m: org.apache.spark.sql.types.MapType => leaves(m.keyType) + leaves(m.valueType)
    case _ => 1
  }
}
