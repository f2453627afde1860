package io.strata.catalog

import io.strata.log.{CheckConstraint, CheckConstraints, InvalidTableOperationException, Operation, Snapshot, TableLog,
  TableNotFoundException, TableOperation, TableProperties}
import io.strata.read.SnapshotReader
import io.strata.table.TableSchema
import io.strata.write.RowChecks
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.catalog.TableChange
import org.apache.spark.sql.functions.{coalesce, expr, lit, not}
import org.apache.spark.sql.types.{StructField, StructType}

/**
 * ALTER TABLE for both catalogs: every change of one statement becomes one metadata commit. A CHECK constraint
 * (ADD CONSTRAINT, or a `delta.constraints.*` property) is added only if every row already in the table satisfies
 * it; the commit then reads the whole table, so a concurrent write makes it fail rather than slip a row past it.
 */
object TableAlteration {
  def apply(log: TableLog, changes: Seq[TableChange]): Unit = {
    if (ClusteringChanges.isClusterBy(changes)) return ClusteringChanges.alter(log, changes)
    val txn = log.startTransaction()
    val snapshot = txn.readSnapshot.getOrElse(throw TableNotFoundException(log.tablePath.toString))
    val table = log.tablePath.toString
    var meta = snapshot.metadata
    var schema = TableSchema.of(meta).schema
    var conf = meta.configuration
    var partitionColumns = meta.partitionColumns
    val mode = io.strata.log.ColumnMapping.mode(meta)
    var set = Map.empty[String, String] // plain SET TBLPROPERTIES: checked (and protocol ones applied) together
    changes.foreach {
      case c: TableChange.SetProperty if CheckConstraints.isConstraintProperty(c.property) =>
        val name = c.property.substring(CheckConstraints.Prefix.length)
        conf = CheckConstraints.add(CheckConstraints.drop(conf, name, ifExists = true, table), name, c.value, table)
      case c: TableChange.SetProperty => set += c.property -> c.value
      case c: TableChange.RemoveProperty if TableProperties.isProtocolProperty(c.property) =>
        throw InvalidTableOperationException("STRATA_UNSUPPORTED_ALTER",
          s"Cannot unset ${c.property} of $table: protocol properties are " +
          "not stored (they upgraded the protocol, which is never downgraded); nothing was changed.")
      case c: TableChange.RemoveProperty => conf = conf - c.property
      case c: TableChange.AddConstraint => conf = TableCreation.withConstraint(conf, c.constraint(), table)
      case c: TableChange.DropConstraint => conf = CheckConstraints.drop(conf, c.name(), c.ifExists(), table)
      case c: TableChange.AddColumn =>
        val name = topLevel(c.fieldNames, "ADD COLUMN")
        if (schema.fieldNames.exists(_.equalsIgnoreCase(name))) throw InvalidTableOperationException(
          "STRATA_COLUMN_ALREADY_EXISTS", Map("column" -> name, "table" -> log.tablePath))
        if (!c.isNullable) throw InvalidTableOperationException("STRATA_UNSUPPORTED_ALTER",
          s"Cannot add NOT NULL column '$name': the rows already in the table have no value for it.")
        val field = Option(c.comment).fold(StructField(name, c.dataType, nullable = true))(
          StructField(name, c.dataType, nullable = true).withComment)
        schema = Option(c.position) match {
          case None => StructType(schema.fields :+ field)
          case Some(_: TableChange.First) => StructType(field +: schema.fields)
          case Some(a: TableChange.After) =>
            val i = schema.fieldIndex(a.column)
            StructType((schema.fields.take(i + 1) :+ field) ++ schema.fields.drop(i + 1))
          case Some(other) => throw InvalidTableOperationException("STRATA_UNSUPPORTED_ALTER",
            s"Unsupported column position $other.")
        }
      // Widening only (TypeWideningChanges); Spark 4.1.1's MERGE WITH SCHEMA EVOLUTION also asks for narrower types.
      case c: TableChange.UpdateColumnType =>
        schema = io.strata.table.TypeWideningChanges.widen(schema, c.fieldNames.toSeq, c.newDataType, conf ++ set,
          partitionColumns, snapshot.protocol, snapshot.version + 1, table)
      case c: TableChange.RenameColumn =>
        ColumnMappingChanges.requireMapping(mode, "RENAME COLUMN", table)
        ColumnMappingChanges.requireUnconstrained(conf, c.fieldNames.toSeq, "rename", table)
        schema = ColumnMappingChanges.rename(schema, c.fieldNames.toSeq, c.newName, table)
        if (c.fieldNames.length == 1) partitionColumns = partitionColumns.map(p =>
          if (p.equalsIgnoreCase(c.fieldNames.head)) c.newName else p)
      case c: TableChange.DeleteColumn =>
        ColumnMappingChanges.requireMapping(mode, "DROP COLUMN", table)
        ColumnMappingChanges.requireUnconstrained(conf, c.fieldNames.toSeq, "drop", table)
        if (c.fieldNames.length == 1 && partitionColumns.exists(_.equalsIgnoreCase(c.fieldNames.head)))
          throw InvalidTableOperationException("STRATA_UNSUPPORTED_ALTER", s"Cannot drop partition column " +
            s"${c.fieldNames.head} of $table: dropping a partition column is not allowed (as in delta-spark); " +
            "nothing was changed.")
        ColumnMappingChanges.drop(schema, c.fieldNames.toSeq, c.ifExists, table).foreach(s => schema = s)
        if (schema.fields.forall(f => partitionColumns.contains(f.name))) throw InvalidTableOperationException(
          "STRATA_UNSUPPORTED_ALTER", s"Cannot drop the last data column of $table; nothing was changed.")
      case c: TableChange.UpdateColumnComment =>
        val name = topLevel(c.fieldNames, "ALTER COLUMN COMMENT")
        schema = StructType(schema.fields.map(f => if (f.name.equalsIgnoreCase(name)) f.withComment(c.newComment) else f))
      case other => throw InvalidTableOperationException("STRATA_UNSUPPORTED_ALTER",
        s"ALTER TABLE change ${other.getClass.getSimpleName} is not supported by Strata yet; nothing was changed.")
    }
    val stored = TableProperties.applyTo(txn, set, table) // keys in canonical case: replace any other spelling
    conf = conf.filterNot { case (k, _) => stored.keys.exists(_.equalsIgnoreCase(k)) } ++ stored
    val added = CheckConstraints.of(conf).filterNot(CheckConstraints.of(meta.configuration).contains)
    if (added.nonEmpty) validate(snapshot, schema, added)
    // Column mapping: a mode change first (none -> name keeps the current names as physical names), then the
    // schema, whose new fields (ADD COLUMN) get ids and physical names.
    val changed = meta.copy(configuration = conf, partitionColumns = partitionColumns)
    val newMode = io.strata.log.ColumnMapping.mode(changed)
    meta = if (newMode != mode) ColumnMappingChanges.changeMode(changed.copy(schemaString = schema.json), mode, newMode,
      table)
      else io.strata.table.PhysicalSchema.withSchema(changed, schema)
    io.strata.table.ClusteringStage.check(io.strata.log.Clustering.columns(snapshot), meta,
      ClusteringChanges.numIndexed(meta.configuration), table) // clustering columns keep existing and their stats
    // Rows checked against a new constraint must stay as read; concurrent adds conflict with any metadata change.
    txn.commit(TableOperation.ChangeMetadata(meta, if (added.nonEmpty) snapshot.files else Nil), Nil,
      Operation("ALTER TABLE", Map("changes" -> changes.map(_.getClass.getSimpleName).mkString(","))))
  }

  /** Fails naming the constraint when it does not apply to the schema or a row of the table breaks it. */
  private def validate(snapshot: Snapshot, schema: StructType, constraints: Seq[CheckConstraint]): Unit = {
    val spark = SparkSession.active
    RowChecks.compile(spark, schema, constraints) // resolves columns and functions, and checks it is a condition
    if (snapshot.files.nonEmpty) {
      val rows = spark.baseRelationToDataFrame(SnapshotReader.relation(spark, snapshot))
      constraints.foreach { c =>
        val violating = rows.where(not(coalesce(expr(c.predicate), lit(false)))).count()
        if (violating > 0) throw InvalidTableOperationException("STRATA_CONSTRAINT_VIOLATED_BY_TABLE",
          Map("constraint" -> c, "table" -> snapshot.tablePath, "rows" -> violating))
      }
    }
  }

  private def topLevel(names: Array[String], what: String): String =
    if (names.length == 1) names.head
    else throw InvalidTableOperationException("STRATA_UNSUPPORTED_ALTER",
      s"$what on nested field ${names.mkString(".")} is not supported yet.")
}
