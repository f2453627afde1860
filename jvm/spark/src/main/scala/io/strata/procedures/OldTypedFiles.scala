package io.strata.procedures

import io.strata.log.{AddFile, Snapshot}
import io.strata.table.{PhysicalSchema, TableSchema, TypeWideningChanges}
import org.apache.hadoop.conf.Configuration
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.apache.spark.sql.execution.datasources.parquet.ParquetToSparkSchemaConverter
import org.apache.spark.sql.types._

/**
 * The live files written before a type widening: their Parquet footer holds a widened column (`delta.typeChanges`)
 * under another type than the table's. Only the widened columns are compared, by physical name; a column a file
 * lacks (added later) is no trace. Reads one footer per file on the driver (DROP FEATURE typeWidening only).
 */
object OldTypedFiles {
  def find(snapshot: Snapshot, conf: Configuration): Seq[AddFile] = {
    val schema = TableSchema.of(snapshot.metadata).schema
    val widened = PhysicalSchema.renamed(schema, schema).fields.zip(schema.fields)
      .collect { case (physical, logical) if TypeWideningChanges.hasTypeChanges(StructType(Seq(logical))) => physical }
    if (widened.isEmpty) return Nil
    val converter = new ParquetToSparkSchemaConverter()
    snapshot.files.filter { f =>
      val reader = ParquetFileReader.open(HadoopInputFile.fromPath(snapshot.absolutePath(f.path), conf))
      val inFile = try converter.convert(reader.getFooter.getFileMetaData.getSchema) finally reader.close()
      widened.exists(w => inFile.fields.find(_.name.equalsIgnoreCase(w.name)).exists(g => differs(w.dataType, g.dataType)))
    }.toSeq
  }

  /** Whether a leaf both types hold has another type in the file. */
  private def differs(table: DataType, file: DataType): Boolean = (table, file) match {
    case (t: StructType, f: StructType) => t.fields.exists(tf =>
      f.fields.find(_.name.equalsIgnoreCase(tf.name)).exists(ff => differs(tf.dataType, ff.dataType)))
    case (t: ArrayType, f: ArrayType) => differs(t.elementType, f.elementType)
    case (t: MapType, f: MapType) => differs(t.keyType, f.keyType) || differs(t.valueType, f.valueType)
    case (StringType, BinaryType) => false // the converter's default reads UTF-8 as binary
    case (t, f) => t != f
  }
}
