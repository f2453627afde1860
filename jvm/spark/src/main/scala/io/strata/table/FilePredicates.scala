package io.strata.table

import io.strata.log.FilePredicate
import io.strata.table.PartitionValues
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{And, Attribute, AttributeReference, BasePredicate, BoundReference,
  Expression, Predicate, SubqueryExpression}
import org.apache.spark.sql.catalyst.plans.logical.Filter
import org.apache.spark.sql.strata.SparkInternals
import org.apache.spark.sql.types.StructType

/**
 * A read set as a Catalyst condition over the table's columns, evaluated on a file's log entry: the conjuncts on
 * partition columns against its typed partition values, the others against its min/max/null-count statistics
 * ([[StatsSkipping]]). Anything it cannot decide counts as a match, so a conflict is never missed.
 */
final class ConditionPredicate private[table] (
    val description: String,
    partitionSchema: StructType,
    /** The session time zone the condition was analyzed in: zone-less timestamp values are local times in it. */
    zone: java.time.ZoneId,
    partitionCondition: Option[Expression],
    stats: StatsSkipping,
    /** Every conjunct of the condition is in `partitionCondition` or `stats` (none was left out). */
    complete: Boolean = false,
    /** No conjunct could be used: the predicate matches everything. */
    val isEmpty: Boolean = false) extends FilePredicate {

  @transient private lazy val partitionEval: Option[BasePredicate] = partitionCondition.map { c =>
    val bound = c.transform {
      case a: AttributeReference =>
        val i = partitionSchema.fieldNames.indexWhere(_.equalsIgnoreCase(a.name))
        BoundReference(i, partitionSchema(i).dataType, nullable = true)
    }
    val p = Predicate.createInterpreted(bound)
    p.initialize(0)
    p
  }

  override def mayMatch(partitionValues: Map[String, Option[String]], statsJson: Option[String]): Boolean = {
    val partitionsMatch = partitionEval match {
      case None => true
      // A file entry without its partition values (an old remove action) may be anywhere.
      case Some(_) if !partitionSchema.fields.forall(f => partitionValues.contains(PhysicalSchema.physicalName(f))) => true
      case Some(p) =>
        scala.util.Try(p.eval(CatalystValues.partitionRow(partitionSchema, partitionValues, zone))).getOrElse(true)
    }
    partitionsMatch && stats.mayMatch(statsJson)
  }

  /** True only when every row of a file with this entry matches (by partition values and statistics). */
  def mustMatchAll(partitionValues: Map[String, Option[String]], statsJson: Option[String]): Boolean =
    complete && partitionSchema.fields.forall(f => partitionValues.contains(PhysicalSchema.physicalName(f))) && (partitionEval match {
      case None => true
      case Some(p) =>
        scala.util.Try(p.eval(CatalystValues.partitionRow(partitionSchema, partitionValues, zone)) == true)
          .getOrElse(false)
    }) && stats.mustMatchAll(statsJson)
}

object FilePredicates {
  /** The rows a SQL predicate over the table's columns selects, as a read set. */
  def fromSql(spark: SparkSession, sql: String, tableSchema: StructType, partitionColumns: Seq[String]): FilePredicate = {
    val p = conditionFromSql(spark, sql, tableSchema, partitionColumns)
    if (p.isEmpty) FilePredicate.WholeTable else p
  }

  /** Like [[fromSql]], with its exact side ([[ConditionPredicate.mustMatchAll]]) reachable. */
  def conditionFromSql(spark: SparkSession, sql: String, tableSchema: StructType,
                       partitionColumns: Seq[String]): ConditionPredicate = {
    val probe = spark.createDataFrame(spark.sparkContext.emptyRDD[org.apache.spark.sql.Row], tableSchema).where(sql)
    val condition = probe.queryExecution.analyzed.collectFirst { case Filter(c, _) => c }.getOrElse(
      throw new IllegalStateException(s"Could not analyze predicate '$sql'"))
    condition0(s"the rows matching '$sql'", Seq(condition), tableSchema, partitionColumns, SparkInternals.sessionZone(spark))
  }

  /**
   * The rows `conditions` (conjuncts over attributes of the table's columns, matched by name) select. Conjuncts with
   * subqueries, or that mix partition and data columns, are left out: the predicate only grows (stays safe).
   * `zone`: the time zone of the session that analyzed the conditions.
   */
  def fromCondition(description: String, conditions: Seq[Expression], tableSchema: StructType,
                    partitionColumns: Seq[String], zone: java.time.ZoneId): FilePredicate = {
    val p = condition0(description, conditions, tableSchema, partitionColumns, zone)
    if (p.isEmpty) FilePredicate.WholeTable else p
  }

  private def condition0(description: String, conditions: Seq[Expression], tableSchema: StructType,
                         partitionColumns: Seq[String], zone: java.time.ZoneId): ConditionPredicate = {
    val all = conditions.map(SqlPredicates.evaluable).flatMap(splitAnd)
    val conjuncts = all.filterNot(SubqueryExpression.hasSubquery).filter(_.deterministic)
    val isPart = (a: Attribute) => partitionColumns.exists(_.equalsIgnoreCase(a.name))
    val onPartitions = conjuncts.filter(c => c.references.nonEmpty && c.references.forall(isPart))
    val onData = conjuncts.filter(c => c.references.nonEmpty && !c.references.exists(isPart))
    val partitionSchema = StructType(partitionColumns.map(c => tableSchema.fields.find(_.name.equalsIgnoreCase(c)).get))
    val dataSchema = StructType(tableSchema.fields.filterNot(f => partitionColumns.exists(_.equalsIgnoreCase(f.name))))
    new ConditionPredicate(description, partitionSchema, zone, onPartitions.reduceOption(And),
      StatsSkipping(dataSchema, onData),
      complete = onPartitions.size + onData.size == all.size, isEmpty = conjuncts.isEmpty)
  }

  private def splitAnd(e: Expression): Seq[Expression] = e match {
    case And(l, r) => splitAnd(l) ++ splitAnd(r)
    case other => Seq(other)
  }
}

/**
 * The partitions a dynamic overwrite replaces, matched by value ([[PartitionValues.keySet]]), not by spelling: a
 * zone-less timestamp partition is the one the writing session (time zone `zone`) reads it as.
 */
final class PartitionSetPredicate(partitionSchema: StructType, written: Seq[Map[String, Option[String]]],
                                  zone: java.time.ZoneId) extends FilePredicate {
  private val keys = PartitionValues.keySet(written, partitionSchema, Some(zone))
  val description: String = s"the ${keys.size} partition(s) this write replaces"

  /** Whether a file with these partition values lies in one of the written partitions. */
  def contains(values: Map[String, Option[String]]): Boolean = keys.contains(values)

  override def mayMatch(partitionValues: Map[String, Option[String]], stats: Option[String]): Boolean =
    !partitionSchema.fields.forall(f => partitionValues.contains(PhysicalSchema.physicalName(f))) || contains(partitionValues)
}
