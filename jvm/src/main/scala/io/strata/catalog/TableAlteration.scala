package io.strata.catalog

import io.strata.log.{InvalidTableOperationException, Operation, TableLog, TableNotFoundException}
import io.strata.table.TableSchema
import org.apache.spark.sql.connector.catalog.TableChange
import org.apache.spark.sql.types.{StructField, StructType}

/** ALTER TABLE for both catalogs: every change of one statement becomes one metadata commit. */
object TableAlteration {
  def apply(log: TableLog, changes: Seq[TableChange]): Unit = {
    val txn = log.startTransaction()
    val snapshot = txn.readSnapshot.getOrElse(throw new TableNotFoundException(log.tablePath.toString))
    var meta = snapshot.metadata
    var schema = TableSchema.of(meta).schema
    changes.foreach {
      case c: TableChange.SetProperty => meta = meta.copy(configuration = meta.configuration + (c.property -> c.value))
      case c: TableChange.RemoveProperty => meta = meta.copy(configuration = meta.configuration - c.property)
      case c: TableChange.AddColumn =>
        val name = topLevel(c.fieldNames, "ADD COLUMN")
        if (schema.fieldNames.exists(_.equalsIgnoreCase(name))) throw new InvalidTableOperationException(
          s"Column '$name' already exists in ${log.tablePath}.")
        if (!c.isNullable) throw new InvalidTableOperationException(
          s"Cannot add NOT NULL column '$name': the rows already in the table have no value for it.")
        val field = Option(c.comment).fold(StructField(name, c.dataType, nullable = true))(
          StructField(name, c.dataType, nullable = true).withComment)
        schema = Option(c.position) match {
          case None => StructType(schema.fields :+ field)
          case Some(_: TableChange.First) => StructType(field +: schema.fields)
          case Some(a: TableChange.After) =>
            val i = schema.fieldIndex(a.column)
            StructType((schema.fields.take(i + 1) :+ field) ++ schema.fields.drop(i + 1))
          case Some(other) => throw new InvalidTableOperationException(s"Unsupported column position $other.")
        }
      case c: TableChange.UpdateColumnComment =>
        val name = topLevel(c.fieldNames, "ALTER COLUMN COMMENT")
        schema = StructType(schema.fields.map(f => if (f.name.equalsIgnoreCase(name)) f.withComment(c.newComment) else f))
      case other => throw new InvalidTableOperationException(
        s"ALTER TABLE change ${other.getClass.getSimpleName} is not supported by Strata yet; nothing was changed.")
    }
    txn.updateMetadata(meta.copy(schemaString = schema.json))
    txn.commit(Nil, Operation("ALTER TABLE", Map("changes" -> changes.map(_.getClass.getSimpleName).mkString(","))))
  }

  private def topLevel(names: Array[String], what: String): String =
    if (names.length == 1) names.head
    else throw new InvalidTableOperationException(s"$what on nested field ${names.mkString(".")} is not supported yet.")
}
