package io.strata.shim

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.mapreduce.Job
import org.apache.spark.internal.io.FileCommitProtocol
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Alias, Cast, CommonExpressionRef, Expression, Literal, With}
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, LogicalPlan, Project}
import org.apache.spark.sql.catalyst.trees.TreePattern
import org.apache.spark.sql.classic.ClassicConversions.castToImpl
import org.apache.spark.sql.classic.{SparkSession => ClassicSession}
import org.apache.spark.sql.execution.datasources._
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.sources.BaseRelation
import org.apache.spark.sql.types.StructType

/**
 * The only place Strata touches Spark's internal (public-but-unstable) APIs: FileFormatWriter, ParquetFileFormat,
 * PartitioningAwareFileIndex, HadoopFsRelation, Catalyst casts. A Spark upgrade should need changes here alone.
 */
object SparkInternals {
  def classic(spark: SparkSession): ClassicSession = castToImpl(spark)

  def activeSession: ClassicSession = ClassicSession.active

  /** Where the session catalog puts a managed table of that name. */
  def defaultTablePath(spark: SparkSession, database: Option[String], table: String): java.net.URI =
    classic(spark).sessionState.catalog.defaultTablePath(
      org.apache.spark.sql.catalyst.TableIdentifier(table, database.orElse(Some(classic(spark).catalog.currentDatabase))))

  /** Data source options with the keys as the user spelled them (Spark hands them over lower-cased). */
  def originalOptions(options: Map[String, String]): Map[String, String] = options match {
    case m: org.apache.spark.sql.catalyst.util.CaseInsensitiveMap[String @unchecked] => m.originalMap
    case other => other
  }

  /**
   * Asks Spark's output commit coordinator whether this task attempt may commit; throws CommitDeniedException when
   * another attempt of the same partition (a retry or speculative copy) already did. The caller's task then fails
   * and aborts, deleting its files, so exactly one attempt's files reach the job commit.
   */
  def authorizeTaskCommit(ctx: org.apache.hadoop.mapreduce.TaskAttemptContext): Unit = {
    val task = org.apache.spark.TaskContext.get()
    if (task != null) {
      val coordinatorOnly = new org.apache.hadoop.mapreduce.OutputCommitter {
        override def setupJob(c: org.apache.hadoop.mapreduce.JobContext): Unit = ()
        override def setupTask(c: org.apache.hadoop.mapreduce.TaskAttemptContext): Unit = ()
        override def needsTaskCommit(c: org.apache.hadoop.mapreduce.TaskAttemptContext): Boolean = true
        override def commitTask(c: org.apache.hadoop.mapreduce.TaskAttemptContext): Unit = ()
        override def abortTask(c: org.apache.hadoop.mapreduce.TaskAttemptContext): Unit = ()
      }
      org.apache.spark.mapred.SparkHadoopMapRedUtil.commitTask(coordinatorOnly, ctx, task.stageId(), task.partitionId())
    }
  }

  /** The column names a SQL predicate refers to (parsed, not resolved). */
  def referencedColumns(predicate: String): Seq[String] =
    parsePredicate(predicate).collect {
      case a: org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute => a.nameParts.mkString(".")
    }.distinct

  private def parsePredicate(predicate: String): Expression =
    try activeSession.sessionState.sqlParser.parseExpression(predicate) catch {
      case e: Exception => throw new io.strata.log.InvalidTableOperationException(
        s"'$predicate' is not a valid SQL predicate: ${e.getMessage.linesIterator.next()}")
    }

  /**
   * An analyzed plan whose expressions Strata evaluates itself (partition predicates, CHECK constraints, read sets),
   * made evaluable the way the optimizer makes them before any execution: RuntimeReplaceable expressions (extract(),
   * nvl(), BETWEEN, ...) replaced by the expressions they stand for (Spark's ReplaceExpressions rule), then the
   * common subexpressions some replacements share (`With`, as BETWEEN's) inlined: what the optimizer's
   * RewriteWithExpression computes once in a projection below, computed at each use. Left in, either fails when
   * evaluated (`assertion failed` in RuntimeReplaceable.eval, `Cannot evaluate expression: with(...)`).
   */
  def evaluable(analyzed: LogicalPlan): LogicalPlan =
    org.apache.spark.sql.catalyst.optimizer.ReplaceExpressions(analyzed).transformAllExpressions {
      case e if e.containsPattern(TreePattern.WITH_EXPRESSION) => inlineWith(e)
    }

  private def inlineWith(e: Expression): Expression = e.transformUp {
    case With(child, defs) =>
      val byId = defs.map(d => d.id -> d.child).toMap
      child.transformUp { case r: CommonExpressionRef if byId.contains(r.id) => byId(r.id) }
  }

  /** [[evaluable]] for one analyzed (resolved) expression. */
  def evaluable(analyzed: Expression): Expression =
    if (!analyzed.containsAnyPattern(TreePattern.RUNTIME_REPLACEABLE, TreePattern.WITH_EXPRESSION)) analyzed
    else evaluable(Project(Seq(Alias(analyzed, "e")()), LocalRelation(analyzed.references.toSeq))) match {
      case Project(Seq(Alias(e, _)), _) => e
      case other => throw new IllegalStateException(s"Unexpected plan $other")
    }

  /**
   * A predicate over partition columns compiled once and evaluated on the log's partition values (strings), with
   * Spark's own analysis (type coercion) and expression evaluation.
   */
  def partitionMatcher(spark: SparkSession, predicate: String, partitionSchema: StructType)
      : Map[String, Option[String]] => Boolean = {
    val condition = analyzedPredicate(spark, predicate, partitionSchema, forEvaluation = true)
    val bound = org.apache.spark.sql.catalyst.expressions.Predicate.create(condition._1, condition._2)
    val zone = sessionZone(spark)
    values => bound.eval(partitionRow(partitionSchema, values, zone))
  }

  /** A predicate over `schema` as Spark renders it once analyzed (`(p = 1)`), as delta-spark records predicates. */
  def predicateSql(spark: SparkSession, predicate: String, schema: StructType): String =
    analyzedPredicate(spark, predicate, schema, forEvaluation = false)._1.sql

  /** The analyzed predicate and its input; `forEvaluation`: made [[evaluable]] by Strata's own evaluation. */
  private def analyzedPredicate(spark: SparkSession, predicate: String, schema: StructType, forEvaluation: Boolean)
      : (Expression, Seq[org.apache.spark.sql.catalyst.expressions.Attribute]) = {
    val session = classic(spark)
    val probe = session.createDataFrame(session.sparkContext.emptyRDD[org.apache.spark.sql.Row], schema)
      .where(predicate)
    val analyzed = probe.queryExecution.analyzed
    (if (forEvaluation) evaluable(analyzed) else analyzed).collectFirst {
      case org.apache.spark.sql.catalyst.plans.logical.Filter(c, child) => (c, child.output)
    }.getOrElse(throw new IllegalStateException(s"Could not analyze predicate '$predicate'"))
  }

  /**
   * A file's log partition values as Catalyst values, in `partitionSchema` order. `zone`: the reading session's time
   * zone, in which zone-less timestamp values are local times (as delta-spark reads them; see
   * [[io.strata.table.PartitionValues.parseTimestamp]]). Timestamps go through that one parser, so a scan, a filter
   * on the partition column and a write's partition matching all agree on what a value means.
   */
  def partitionRow(partitionSchema: StructType, values: Map[String, Option[String]], zone: java.time.ZoneId)
      : InternalRow =
    InternalRow.fromSeq(partitionSchema.fields.toSeq.map { f =>
      values.getOrElse(f.name, None).map { v =>
        if (f.dataType == org.apache.spark.sql.types.TimestampType) {
          io.strata.table.PartitionValues.parseTimestamp(v, zone): Any
        } else castPartitionValue(v, f.dataType, zone.getId)
      }.orNull
    })

  def hadoopConf(spark: SparkSession, options: Map[String, String]): Configuration =
    classic(spark).sessionState.newHadoopConfWithOptions(options)

  def sessionTimeZone(spark: SparkSession): String = classic(spark).sessionState.conf.sessionLocalTimeZone

  /** The session time zone as Spark resolves it (short ids such as PST included). */
  def sessionZone(spark: SparkSession): java.time.ZoneId =
    org.apache.spark.sql.catalyst.util.DateTimeUtils.getZoneId(sessionTimeZone(spark))

  /**
   * Runs Spark's file writer over `data`: our Parquet format, our commit protocol, Hive-style partition directories
   * under `outputPath`. Spark's writer chooses single, dynamic-partition or concurrent output writers and honours
   * maxRecordsPerFile; the commit protocol collects the files. Spark renders partition directory values in the
   * write's `timeZone` option, else the session zone; Strata sets UTC, so that a directory value names one instant
   * (01:30 in New York on a DST fall-back day names two) and the commit protocol reads it back exactly.
   */
  def writeFiles(
      data: DataFrame,
      outputPath: String,
      partitionColumns: Seq[String],
      committer: FileCommitProtocol,
      options: Map[String, String]): Unit = {
    val spark = classic(data.sparkSession)
    val plan = data.queryExecution.executedPlan
    val partAttrs = partitionColumns.map(c => plan.output.find(_.name == c).getOrElse(
      throw new IllegalArgumentException(s"Partition column $c is not among ${plan.output.map(_.name).mkString(", ")}")))
    FileFormatWriter.write(
      sparkSession = spark,
      plan = plan,
      fileFormat = new StrataParquetFormat,
      committer = committer,
      outputSpec = FileFormatWriter.OutputSpec(outputPath, Map.empty, plan.output),
      hadoopConf = spark.sessionState.newHadoopConfWithOptions(options),
      partitionColumns = partAttrs,
      bucketSpec = None,
      statsTrackers = Nil,
      options = options + (org.apache.spark.sql.catalyst.util.DateTimeUtils.TIMEZONE_OPTION -> "UTC"))
  }

  /**
   * The rows of one streaming micro-batch as a plain batch DataFrame (what Spark's own foreachBatch sink does): the
   * batch's incremental plan, stateful operators included, runs once as the RDD under a non-streaming relation, so
   * the write may project, check and repartition it like any batch input.
   */
  def microBatchRows(data: DataFrame): DataFrame =
    data.sparkSession.baseRelationToDataFrame(new MicroBatchRelation(data.sparkSession.sqlContext, data.schema,
      data.queryExecution.toRdd))

  /**
   * On the thread running a streaming query's micro-batch: its batch id (a local property Spark sets before it plans
   * the batch). None elsewhere, and in continuous processing.
   */
  def microBatchId(spark: SparkSession): Option[Long] = {
    val sc = spark.sparkContext
    val continuous = Option(sc.getLocalProperty(
      org.apache.spark.sql.execution.streaming.runtime.StreamExecution.IS_CONTINUOUS_PROCESSING)).contains("true")
    if (continuous) None else Option(sc.getLocalProperty(
      org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution.BATCH_ID_KEY)).flatMap(_.toLongOption)
  }

  /** On a streaming query's thread: the query's id (stable across restarts from the same checkpoint). */
  def streamingQueryId(spark: SparkSession): Option[String] = Option(spark.sparkContext.getLocalProperty(
    org.apache.spark.sql.execution.streaming.runtime.StreamExecution.QUERY_ID_KEY))

  /** A relation that reads the given files with Spark's vectorized Parquet reader (partition pruning included). */
  def parquetRelation(spark: SparkSession, index: FileIndex, partitionSchema: StructType, dataSchema: StructType,
                      options: Map[String, String]): BaseRelation =
    HadoopFsRelation(index, partitionSchema, dataSchema, None, index match {
      case l: LogFileIndex if l.hasDeletionVectors => new DeletionVectorParquetFormat(l.readTablePath.toString)
      case _ => new ParquetFileFormat
    }, options)(spark)

  /** Catalyst's value for a partition value string (the same cast Spark applies to directory values). */
  def castPartitionValue(value: String, dataType: org.apache.spark.sql.types.DataType, timeZone: String): Any =
    Cast(Literal(value), dataType, Some(timeZone)).eval()

  /** Like [[castPartitionValue]], but null instead of an error for a value that does not parse. */
  def tryCast(value: String, dataType: org.apache.spark.sql.types.DataType, timeZone: String): Any =
    Cast(Literal(value), dataType, Some(timeZone), org.apache.spark.sql.catalyst.expressions.EvalMode.TRY).eval()
}

/**
 * Strata's FileFormat for writes: Spark's Parquet writer with timestamps as INT64 micros (so Parquet keeps min/max
 * statistics for them), behind Strata's own OutputWriterFactory / OutputWriter.
 */
final class StrataParquetFormat extends ParquetFileFormat {
  override def prepareWrite(spark: SparkSession, job: Job, options: Map[String, String],
                            dataSchema: StructType): OutputWriterFactory = {
    val parquet = super.prepareWrite(spark, job, options, dataSchema)
    job.getConfiguration.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    new StrataOutputWriterFactory(parquet)
  }
  override def toString: String = "Strata(Parquet)"
}

/** Wraps Spark's Parquet writer factory; the place for per-row write checks. */
final class StrataOutputWriterFactory(parquet: OutputWriterFactory) extends OutputWriterFactory {
  override def getFileExtension(context: org.apache.hadoop.mapreduce.TaskAttemptContext): String =
    parquet.getFileExtension(context)
  override def newInstance(path: String, dataSchema: StructType,
                           context: org.apache.hadoop.mapreduce.TaskAttemptContext): OutputWriter =
    new StrataOutputWriter(parquet.newInstance(path, dataSchema, context), WriteFaults.forTask(context))
}

/** One data file being written. */
final class StrataOutputWriter(parquet: OutputWriter, faults: WriteFaults) extends OutputWriter {
  private var rows = 0L
  override def write(row: InternalRow): Unit = {
    parquet.write(row)
    rows += 1
    faults.afterRow(rows)
  }
  override def close(): Unit = parquet.close()
  override def path(): String = parquet.path()
}

/**
 * Test-only fault injection, off unless the Hadoop conf sets `strata.test.failAfterRows` (fail a task's first
 * attempt after writing that many rows to a file) or `strata.test.sleepAfterCommitMs` (a task whose commit was
 * authorized waits that long before reporting it: a straggler). Failure tests use it to break real writes at a
 * chosen point.
 */
final class WriteFaults(failAfterRows: Long) extends Serializable {
  def afterRow(n: Long): Unit =
    if (failAfterRows > 0 && n == failAfterRows) {
      throw new java.io.IOException(s"Injected write failure after $n rows (strata.test.failAfterRows)")
    }
}

object WriteFaults {
  val FailAfterRowsKey = "strata.test.failAfterRows"
  val SleepAfterCommitKey = "strata.test.sleepAfterCommitMs"

  /**
   * Called by a task right after its commit was authorized. The wait ignores interrupts: a real straggler is past
   * the point where Spark's kill could stop it (it only has to send its result).
   */
  def afterCommitAuthorized(conf: org.apache.hadoop.conf.Configuration): Unit = {
    val deadline = System.currentTimeMillis() + conf.getLong(SleepAfterCommitKey, 0L)
    var interrupted = false
    while (System.currentTimeMillis() < deadline) {
      try Thread.sleep(math.max(1L, deadline - System.currentTimeMillis()))
      catch { case _: InterruptedException => interrupted = true }
    }
    if (interrupted) Thread.currentThread().interrupt()
  }

  def forTask(context: org.apache.hadoop.mapreduce.TaskAttemptContext): WriteFaults = {
    val n = context.getConfiguration.getLong(FailAfterRowsKey, 0L)
    // Hadoop's attempt id here is Spark's task id; the retry number comes from the TaskContext.
    val firstAttempt = Option(org.apache.spark.TaskContext.get()).forall(_.attemptNumber() == 0)
    new WriteFaults(if (firstAttempt) n else 0L)
  }
}

/**
 * A micro-batch's rows as a relation: the RDD of its incremental plan, handed over in Spark's internal row format
 * (`needConversion = false`), as Spark's foreachBatch sink does with a private relation.
 */
final class MicroBatchRelation(context: org.apache.spark.sql.SQLContext, rowSchema: StructType,
                               rows: org.apache.spark.rdd.RDD[InternalRow])
    extends BaseRelation with org.apache.spark.sql.sources.TableScan {
  override def sqlContext: org.apache.spark.sql.SQLContext = context
  override def schema: StructType = rowSchema
  override def needConversion: Boolean = false
  override def buildScan(): org.apache.spark.rdd.RDD[org.apache.spark.sql.Row] =
    rows.asInstanceOf[org.apache.spark.rdd.RDD[org.apache.spark.sql.Row]]
}
