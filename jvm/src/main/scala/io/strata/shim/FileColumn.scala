package io.strata.shim

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.connector.catalog.MetadataColumn
import org.apache.spark.sql.connector.expressions.filter.Predicate
import org.apache.spark.sql.connector.read.{Scan, ScanBuilder, SupportsPushDownRequiredColumns}
import org.apache.spark.sql.execution.datasources.PartitioningAwareFileIndex
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetScanBuilder
import org.apache.spark.sql.internal.connector.SupportsPushDownCatalystFilters
import org.apache.spark.sql.types.{DataType, StringType, StructField, StructType}
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import org.apache.spark.unsafe.types.UTF8String

import scala.jdk.CollectionConverters._

/**
 * The metadata column naming the data file that holds a row (`SELECT _strata_file, * FROM t`). Row-level operations
 * need it: Spark groups the rewritten rows by it and the runtime group filter chooses files with it. The reader
 * fills it in as if it were one more partition column, so Parquet's vectorized reader still serves the scan.
 */
object FileColumn {
  val Name = "_strata_file"
  val field: StructField = StructField(Name, StringType, nullable = false)

  val metadataColumn: MetadataColumn = new MetadataColumn {
    override def name(): String = Name
    override def dataType(): DataType = StringType
    // Null on the rows an UPDATE writes (not preserved on update): the writer counts them as the updated rows.
    override def isNullable: Boolean = true
    override def comment(): String = "the data file holding the row"
    override def metadataInJSON(): String = s"""{"${MetadataColumn.PRESERVE_ON_UPDATE}":false}"""
  }

  /** `values` (partition values in `schema` order) followed by the file's path. */
  def append(values: InternalRow, schema: StructType, path: Path): InternalRow =
    InternalRow.fromSeq(values.toSeq(schema) :+ UTF8String.fromString(path.toString))

  def requested(schema: StructType): Boolean = schema.fieldNames.exists(_.equalsIgnoreCase(Name))
}

/**
 * Spark's Parquet scan builder over a log file index, with the file column when a query asks for it. Filters and the
 * required columns go to a builder over the plain index (so that the plan reports them); only when the required
 * columns include [[FileColumn]] does [[build]] replay them on a builder whose index carries the column.
 */
final class StrataScanBuilder(spark: SparkSession, index: Boolean => PartitioningAwareFileIndex, schema: StructType,
                              dataSchema: StructType, options: CaseInsensitiveStringMap)
    extends ScanBuilder with SupportsPushDownCatalystFilters with SupportsPushDownRequiredColumns {
  private def builder(withFile: Boolean) = new ParquetScanBuilder(spark, index(withFile), schema, dataSchema, options)
  private val plain = builder(withFile = false)
  private var filters: Seq[Expression] = Nil
  private var required: Option[StructType] = None

  override def pushFilters(fs: Seq[Expression]): Seq[Expression] = { filters = fs; plain.pushFilters(fs) }
  override def pushedFilters: Array[Predicate] = plain.pushedFilters
  override def pruneColumns(s: StructType): Unit = { required = Some(s); plain.pruneColumns(s) }

  override def build(): Scan = required match {
    case Some(s) if FileColumn.requested(s) =>
      val withFile = builder(withFile = true)
      withFile.pushFilters(filters)
      withFile.pruneColumns(s)
      withFile.build()
    case _ => plain.build()
  }
}

/** DataSource V2 scans over a log-driven file index, through Spark's own Parquet scan builder. */
object ParquetScans {
  def scanBuilder(spark: SparkSession, index: PartitioningAwareFileIndex, schema: StructType, dataSchema: StructType,
                  options: CaseInsensitiveStringMap): ScanBuilder =
    new ParquetScanBuilder(spark, index, schema, dataSchema, options)

  /**
   * A scan returning every row of the index's files, with every column: no filter reaches Parquet (its row-group
   * skipping would drop rows a file rewrite must keep) and a missing or corrupt file fails the scan instead of
   * being skipped, whatever the session says.
   */
  def wholeFiles(spark: SparkSession, index: PartitioningAwareFileIndex, schema: StructType,
                 dataSchema: StructType): Scan = {
    val options = new CaseInsensitiveStringMap(Map("ignoreMissingFiles" -> "false",
      "ignoreCorruptFiles" -> "false").asJava)
    val builder = new ParquetScanBuilder(spark, index, schema, dataSchema, options)
    builder.pruneColumns(StructType(schema.fields ++ index.partitionSchema.fields.filterNot(f =>
      schema.fieldNames.exists(_.equalsIgnoreCase(f.name)))))
    builder.build()
  }
}
