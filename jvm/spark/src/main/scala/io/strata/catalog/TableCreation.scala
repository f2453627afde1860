package io.strata.catalog

import java.util.UUID

import io.strata.log.{ActionCodec, CheckConstraints, InvalidTableOperationException, Metadata, Operation, TableLog,
  TableOperation, TableProperties}
import io.strata.table.TableSchema
import io.strata.write.TableDefinition
import org.apache.spark.sql.connector.catalog.{Column, Identifier, TableCatalog, TableInfo}
import org.apache.spark.sql.connector.catalog.constraints.{Check, Constraint}
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.types.{StructField, StructType}

import scala.jdk.CollectionConverters._

/** CREATE TABLE for both catalogs: version 0 of the log, holding schema, partitioning, comment and properties. */
object TableCreation {
  val CreateAsSelect = "CREATE TABLE AS SELECT"
  private val reserved = Set(TableCatalog.PROP_PROVIDER, TableCatalog.PROP_LOCATION, TableCatalog.PROP_COMMENT,
    TableCatalog.PROP_OWNER, TableCatalog.PROP_EXTERNAL, TableCatalog.PROP_IS_MANAGED_LOCATION, "path")

  /**
   * The properties of a CREATE / REPLACE statement with its CHECK constraints folded in as `delta.constraints.<name>`
   * (where the Delta protocol keeps them). Other kinds of constraint (primary, foreign, unique keys) are refused.
   */
  def propertiesOf(info: TableInfo, table: String): java.util.Map[String, String] = {
    Option(info.constraints()).getOrElse(Array.empty[Constraint])
      .foldLeft(info.properties().asScala.toMap)((props, c) => withConstraint(props, c, table)).asJava
  }

  /** For REPLACE / CREATE OR REPLACE: Spark 4.1.1 drops the constraints from `info` ([[RunningDdl]]). */
  def replacePropertiesOf(info: TableInfo, ident: Identifier, table: String): java.util.Map[String, String] = {
    val declared = Option(info.constraints()).getOrElse(Array.empty[Constraint]).toSeq
    val constraints = if (declared.nonEmpty) declared else RunningDdl.replaceConstraints(ident)
    constraints.foldLeft(info.properties().asScala.toMap)((props, c) => withConstraint(props, c, table)).asJava
  }

  /** `configuration` with a DDL constraint added as `delta.constraints.<name>`; only CHECK constraints are taken. */
  def withConstraint(configuration: Map[String, String], constraint: Constraint, table: String): Map[String, String] =
    constraint match {
      case c: Check => CheckConstraints.add(configuration, c.name(), c.predicateSql(), table)
      case other => throw InvalidTableOperationException("STRATA_INVALID_CONSTRAINT",
        s"Constraint ${other.name()} of $table is not " +
        s"supported: Strata tables take CHECK constraints only (got ${other.toDDL}).")
    }

  /** The table a CREATE / REPLACE statement declares; its `delta.*` properties are checked here, before any job. */
  def definition(columns: Array[Column], partitions: Array[Transform], props: Map[String, String],
                 table: String): TableDefinition = {
    val schema = StructType(columns.map { c =>
      val f = StructField(c.name(), c.dataType(), c.nullable())
      Option(c.comment()).fold(f)(f.withComment)
    })
    val (plain, clusterBy) = ClusteringChanges.split(partitions)
    val partCols = TableSchema.resolvePartitionColumns(schema, plain.toSeq.map { t =>
      if (t.name() != "identity") throw InvalidTableOperationException("STRATA_INVALID_PARTITIONING",
        s"Partition transform ${t.describe()} is not supported: Strata partitions by plain columns " +
          "(PARTITIONED BY (col, ...)).")
      t.references().head.fieldNames().mkString(".")
    })
    TableDefinition(schema, partCols, TableProperties.validate(
      props.filter { case (k, _) => !reserved(k) && !k.startsWith(TableCatalog.OPTION_PREFIX) }, table),
      props.get(TableCatalog.PROP_COMMENT), clusterBy)
  }

  def create(log: TableLog, columns: Array[Column], partitions: Array[Transform], props: Map[String, String]): Unit =
    commitDefinition(log, definition(columns, partitions, props, log.tablePath.toString), "CREATE TABLE",
      createOnly = true)

  /**
   * Commits a table definition without data (CREATE TABLE, or a REPLACE that wrote no rows: all files removed).
   * `createOnly`: fails unless no version of the table exists, even one created concurrently.
   */
  def commitDefinition(log: TableLog, d: TableDefinition, operation: String, createOnly: Boolean): Unit = {
    val txn = log.startTransaction()
    if (createOnly) txn.requireNoTable()
    val base = txn.readSnapshot.map(_.metadata).getOrElse(Metadata(id = UUID.randomUUID().toString, schemaString = "",
      createdTime = Some(System.currentTimeMillis())))
    // With delta.columnMapping.mode, every column gets an id and a fresh physical name (PhysicalSchema.withSchema).
    val meta = io.strata.table.PhysicalSchema.withSchema(base.copy(description = d.description,
      partitionColumns = d.partitionColumns,
      configuration = TableProperties.applyTo(txn,
        io.strata.config.TableDefaults.forNewTable(d.properties, txn.readSnapshot.isEmpty), log.tablePath.toString)),
      io.strata.table.PhysicalSchema.strip(d.schema))
    io.strata.table.ClusteringStage(txn, meta, d.clusterBy, ClusteringChanges.numIndexed(meta.configuration),
      log.tablePath.toString)
    txn.commit(TableOperation.ReplaceTable(meta, txn.readSnapshot.map(_.files).getOrElse(Nil), Nil, createOnly), Nil,
      Operation(operation, Map("partitionBy" -> ActionCodec.mapper.writeValueAsString(d.partitionColumns.toArray))))
  }
}
