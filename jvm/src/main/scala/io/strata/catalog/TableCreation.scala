package io.strata.catalog

import java.util.UUID

import io.strata.log.{ActionCodec, Metadata, Operation, TableLog}
import io.strata.table.TableSchema
import org.apache.spark.sql.connector.catalog.{Column, TableCatalog}
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.types.{StructField, StructType}

/** CREATE TABLE for both catalogs: version 0 of the log, holding schema, partitioning, comment and properties. */
object TableCreation {
  private val reserved = Set(TableCatalog.PROP_PROVIDER, TableCatalog.PROP_LOCATION, TableCatalog.PROP_COMMENT,
    TableCatalog.PROP_OWNER, TableCatalog.PROP_EXTERNAL, TableCatalog.PROP_IS_MANAGED_LOCATION, "path")

  def create(log: TableLog, columns: Array[Column], partitions: Array[Transform], props: Map[String, String]): Unit = {
    val schema = StructType(columns.map { c =>
      val f = StructField(c.name(), c.dataType(), c.nullable())
      Option(c.comment()).fold(f)(f.withComment)
    })
    val partCols = TableSchema.resolvePartitionColumns(schema, partitions.toSeq.map { t =>
      if (t.name() != "identity") throw new IllegalArgumentException(
        s"Partition transform ${t.describe()} is not supported: Strata partitions by plain columns.")
      t.references().head.fieldNames().mkString(".")
    })
    val txn = log.startTransaction()
    txn.updateMetadata(Metadata(id = UUID.randomUUID().toString, description = props.get(TableCatalog.PROP_COMMENT),
      schemaString = schema.json, partitionColumns = partCols,
      configuration = props.filter { case (k, _) => !reserved(k) && !k.startsWith(TableCatalog.OPTION_PREFIX) },
      createdTime = Some(System.currentTimeMillis())))
    txn.commit(Nil, Operation("CREATE TABLE", Map(
      "partitionBy" -> ActionCodec.mapper.writeValueAsString(partCols.toArray))))
  }
}
