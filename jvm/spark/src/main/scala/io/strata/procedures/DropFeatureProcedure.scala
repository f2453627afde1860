package io.strata.procedures

import io.strata.log.{FeatureDrop, InvalidTableOperationException, Operation, ProtocolSupport, Snapshot, TableLog,
  TableOperation}
import io.strata.procedures.StrataProcedure.{optional, required}
import io.strata.table.{PhysicalSchema, TableSchema, TypeWideningChanges}
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.types._

/**
 * `drop_feature(table, feature, truncate_history)`: delta-spark's `ALTER TABLE ... DROP FEATURE` (Spark's parser
 * does not know the statement). As delta-spark 4.x without TRUNCATE HISTORY: first the feature's traces go (its
 * property unset, files rewritten: [[FeatureTraces]]), then a feature with reader rules gets three checkpoints on empty
 * commits, and one commit drops it from the protocol while adding `checkpointProtection` ([[FeatureDrop]]), followed
 * by a checkpoint. A writer-only feature is dropped in one commit.
 */
object DropFeatureProcedure extends StrataProcedure {
  override def name(): String = "drop_feature"
  override def description(): String = "Removes a table feature's traces and drops it from the table's protocol."

  val outputType: StructType = StructType(Seq(
    StructField("version", LongType, nullable = false),
    StructField("min_reader_version", IntegerType, nullable = false),
    StructField("min_writer_version", IntegerType, nullable = false)))

  protected val params = Seq(
    required("table", StringType, "table name or path"),
    required("feature", StringType, "the table feature to drop, e.g. 'typeWidening'"),
    optional("truncate_history", BooleanType, "delta-spark's TRUNCATE HISTORY (not supported: false)", "false"))

  private val BarrierCheckpoints = 3 // delta-spark's DropTableFeatureUtils.NUMBER_OF_BARRIER_CHECKPOINTS

  protected def run(spark: SparkSession, args: ProcedureArgs): Seq[Row] = {
    val table = ProcedureTable.resolve(spark, args.requiredString("table"))
    val feature = args.requiredString("feature")
    val log = table.log
    val start = log.snapshot()
    ProtocolSupport.checkWritable(start.protocol, start.metadata, table.name)
    def refuse(reason: String) = InvalidTableOperationException("STRATA_UNSUPPORTED_TABLE_FEATURE_DROP",
      Map("feature" -> feature, "table" -> table.name, "reason" -> reason))
    val present = FeatureDrop.features(start.protocol)
    val canonical = present.find(_.equalsIgnoreCase(feature)).getOrElse(throw refuse(
      s"the table's protocol does not support it (it supports ${present.toSeq.sorted.mkString(", ")})"))
    if (args.boolean("truncate_history").contains(true)) throw refuse("Strata drops features with checkpoint " +
      "protection only (delta-spark's default, DROP FEATURE without TRUNCATE HISTORY); call it with " +
      "truncate_history => false")
    if (canonical == FeatureDrop.CheckpointProtection) throw refuse("checkpointProtection can only be dropped with " +
      "history truncation (delta-spark's ALTER TABLE ... DROP FEATURE checkpointProtection TRUNCATE HISTORY), which " +
      "Strata does not do")
    if (!FeatureDrop.Droppable(canonical)) throw refuse(s"Strata drops only ${FeatureDrop.Droppable.toSeq.sorted
      .mkString(", ")}; delta-spark's ALTER TABLE ... DROP FEATURE $canonical drops it")

    FeatureTraces.remove(spark, log, canonical, table.name)
    if (FeatureDrop.readerWriter(canonical)) (1 to BarrierCheckpoints).foreach { _ =>
      val txn = log.startTransaction()
      txn.commit(Nil, Operation("EMPTY COMMIT"))
      log.checkpoint(log.snapshot())
    }
    val txn = log.startTransaction()
    val snapshot = txn.readSnapshot.get
    FeatureTraces.remaining(log, snapshot, canonical).foreach(r => throw refuse(s"$r (a concurrent write brought " +
      "it back); run the drop again"))
    val protocol = FeatureDrop.protocolWithout(snapshot.protocol, canonical)
    val conf = FeatureTraces.applied(snapshot.metadata.configuration, canonical) ++
      (if (FeatureDrop.readerWriter(canonical)) Map(FeatureDrop.ProtectionKey -> (snapshot.version + 1).toString)
      else Map.empty)
    txn.downgradeProtocol(protocol)
    val result = txn.commit(TableOperation.ChangeMetadata(snapshot.metadata.copy(configuration = conf), Nil), Nil,
      Operation("DROP FEATURE", Map("featureName" -> canonical, "truncateHistory" -> "false")))
    if (FeatureDrop.readerWriter(canonical)) log.checkpoint(log.snapshot())
    Seq(Row(result.version, protocol.minReaderVersion, protocol.minWriterVersion))
  }
}

/** What each droppable feature leaves in a table, and how it goes (delta-spark's PreDowngradeTableFeatureCommand). */
object FeatureTraces {
  /** Table properties that turn the feature on, each with what it becomes before the drop (None: unset). */
  private def properties(feature: String): Map[String, Option[String]] = feature match {
    case "typeWidening" | "typeWidening-preview" => Map(ProtocolSupport.TypeWideningKey -> None)
    case "deletionVectors" => Map("delta.enableDeletionVectors" -> None)
    case "v2Checkpoint" => Map("delta.checkpointPolicy" -> Some("classic")) // as delta-spark leaves it
    // delta-spark turns it off (when on) and forgets when it was turned on.
    case "inCommitTimestamp" => Map("delta.enableInCommitTimestamps" -> Some("false"),
      "delta.inCommitTimestampEnablementVersion" -> None, "delta.inCommitTimestampEnablementTimestamp" -> None)
    case _ => Map.empty
  }

  /** The feature's properties whose value must still change. */
  private def pending(conf: Map[String, String], feature: String): Map[String, Option[String]] =
    properties(feature).filter {
      case (k, Some("false")) => conf.get(k).exists(_.trim.equalsIgnoreCase("true")) // an absent flag is off
      case (k, v) => conf.get(k) != v
    }

  /** `conf` with the feature's properties as they are after its drop. */
  def applied(conf: Map[String, String], feature: String): Map[String, String] =
    pending(conf, feature).foldLeft(conf) { case (c, (k, v)) => v.fold(c - k)(x => c + (k -> x)) }

  /** Unsets the feature's properties and removes its traces from the schema and the files, each in a commit. */
  def remove(spark: SparkSession, log: TableLog, feature: String, table: String): Unit = {
    val snapshot = log.snapshot()
    val props = pending(snapshot.metadata.configuration, feature)
    val schema = TableSchema.of(snapshot.metadata).schema
    val typeChanges = feature.startsWith("typeWidening") && TypeWideningChanges.hasTypeChanges(schema)
    // Files first: delta-spark rewrites them, then forgets the type changes (a reader then needs no upcast).
    val stale = staleFiles(log, snapshot, feature)
    io.strata.optimize.FileRewrite.run(spark, log, snapshot, stale, Operation("REORG",
      Map("predicate" -> "[]", "applyPurge" -> "true", "reason" -> s"DROP FEATURE $feature")))
    if (props.nonEmpty || typeChanges) {
      val txn = log.startTransaction()
      val m = txn.readSnapshot.get.metadata
      val cleaned = if (!typeChanges) m else PhysicalSchema.withSchema(m,
        TypeWideningChanges.withoutTypeChanges(TableSchema.of(m).schema).asInstanceOf[StructType])
      txn.commit(TableOperation.ChangeMetadata(cleaned.copy(configuration = applied(m.configuration, feature)), Nil),
        Nil, Operation("SET TBLPROPERTIES", Map("properties" -> props.map { case (k, v) => s"$k=${v.getOrElse("")}" }
          .mkString("{", ",", "}"))))
    }
  }

  /** A trace still there in `snapshot` (checked in the dropping transaction's snapshot), if any. */
  def remaining(log: TableLog, snapshot: Snapshot, feature: String): Option[String] = {
    val props = pending(snapshot.metadata.configuration, feature)
    val stale = staleFiles(log, snapshot, feature)
    if (props.nonEmpty) Some(s"the table sets ${props.keys.mkString(", ")}")
    else if (feature.startsWith("typeWidening") && TypeWideningChanges.hasTypeChanges(
      TableSchema.of(snapshot.metadata).schema)) Some("the schema records type changes")
    else if (stale.nonEmpty) Some(s"${stale.size} file(s) still hold the feature's data (e.g. ${stale.head.path})")
    else None
  }

  /** Files holding the feature's data: deletion vectors, or values of a type from before a widening. */
  private def staleFiles(log: TableLog, snapshot: Snapshot, feature: String): Seq[io.strata.log.AddFile] =
    feature match {
      case "deletionVectors" => snapshot.files.filter(_.deletionVector.isDefined).toSeq
      case "typeWidening" | "typeWidening-preview" => OldTypedFiles.find(snapshot, log.conf)
      case _ => Nil
    }
}
