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

  /** The same column as part of a merge-on-read row id (with [[RowIndexColumn]]): Spark wants row ids non-null. */
  val rowIdColumn: MetadataColumn = new MetadataColumn {
    override def name(): String = Name
    override def dataType(): DataType = StringType
    override def isNullable: Boolean = false
    override def comment(): String = "the data file holding the row"
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
 * `checkBatchOptions` runs before a batch scan is built: only then is it known that `options` are a batch read's
 * (a streaming read's are checked by its own scan).
 */
final class StrataScanBuilder(spark: SparkSession, index: Boolean => PartitioningAwareFileIndex, schema: StructType,
                              dataSchema: StructType, options: CaseInsensitiveStringMap,
                              streamScan: Option[(() => Scan) => Scan] = None,
                              checkBatchOptions: () => Unit = () => ())
    extends ScanBuilder with SupportsPushDownCatalystFilters with SupportsPushDownRequiredColumns {
  private val plainIndex = index(false)
  private val plain = ParquetScans.builder(spark, plainIndex, schema, dataSchema, options)
  private var filters: Seq[Expression] = Nil
  private var required: StructType = schema

  override def pushFilters(fs: Seq[Expression]): Seq[Expression] = { filters = fs; plain.pushFilters(fs) }
  override def pushedFilters: Array[Predicate] = plain.pushedFilters
  override def pruneColumns(s: StructType): Unit = { required = s; pruned = true }
  /** Spark's batch planning always prunes columns; a streaming read builds its scan without (see [[build]]). */
  private var pruned = false

  /** The conditions Spark pushed (what a row-level operation's scan selects, for its read set). */
  def pushedConditions: Seq[Expression] = filters

  /**
   * The batch scan; or, when Spark builds without pruning columns or pushing filters (what it does for a streaming
   * read, once, at query start) and the table streams, `streamScan` of it.
   */
  override def build(): Scan = streamScan match {
    case Some(stream) if !pruned && filters.isEmpty => stream(() => batchScan())
    case _ => batchScan()
  }

  private def batchScan(): Scan = {
    checkBatchOptions()
    val withFile = FileColumn.requested(required)
    val idx = if (withFile) index(true) else plainIndex
    val b = if (!withFile && !RowIndexColumn.requested(required)) plain else {
      val fresh = ParquetScans.builder(spark, idx, schema, dataSchema, options, RowIndexColumn.requested(required))
      fresh.pushFilters(filters)
      fresh
    }
    ParquetScans.build(b, idx, required)
  }
}

/**
 * The metadata column holding a row's index in its data file (`_strata_row_index`): with [[FileColumn]], the row id
 * of merge-on-read DELETE / UPDATE / MERGE. Spark's Parquet reader computes it ([[DeletionVectorReads.RowIndexField]]).
 */
object RowIndexColumn {
  val Name = "_strata_row_index"
  val metadataColumn: MetadataColumn = new MetadataColumn {
    override def name(): String = Name
    override def dataType(): DataType = org.apache.spark.sql.types.LongType
    override def isNullable: Boolean = false
    override def comment(): String = "the row's index in its data file"
  }
  def requested(schema: StructType): Boolean = schema.fieldNames.exists(_.equalsIgnoreCase(Name))
}

/**
 * DataSource V2 scans over a log-driven file index, through Spark's own Parquet scan builder. When some file of the
 * index has a deletion vector, the builder also reads each row's index in its file and the scan is wrapped in a
 * [[DeletionVectorScan]] that drops the deleted rows.
 */
object ParquetScans {
  private def deletionVectorTable(index: PartitioningAwareFileIndex): Option[String] = index match {
    case l: LogFileIndex if l.hasDeletionVectors => Some(l.readTablePath.toString)
    case _ => None
  }

  /** `rowIndex`: the scan will also return each row's index in its file ([[RowIndexColumn]]). */
  def builder(spark: SparkSession, index: PartitioningAwareFileIndex, schema: StructType, dataSchema: StructType,
              options: CaseInsensitiveStringMap, rowIndex: Boolean = false): ParquetScanBuilder =
    new ParquetScanBuilder(spark, index, schema,
      if (deletionVectorTable(index).isDefined || rowIndex) dataSchema.add(DeletionVectorReads.RowIndexField)
      else dataSchema, options)

  /** Prunes `builder` (made by [[builder]] over `index`) to `required` and builds its scan. */
  def build(builder: ParquetScanBuilder, index: PartitioningAwareFileIndex, required: StructType): Scan = {
    val rowIndex = RowIndexColumn.requested(required)
    deletionVectorTable(index).orElse(if (rowIndex) Some(index.rootPaths.head.toString) else None) match {
      case None => builder.pruneColumns(required); builder.build()
      case Some(table) =>
        builder.pruneColumns(StructType(required.fields.filterNot(f => RowIndexColumn.requested(StructType(Seq(f)))))
          .add(DeletionVectorReads.RowIndexField))
        new DeletionVectorScan(builder.build(), table, if (rowIndex) Some(RowIndexColumn.Name) else None)
    }
  }

  /**
   * A scan returning every row of the index's files, with every column: no filter reaches Parquet (its row-group
   * skipping would drop rows a file rewrite must keep) and a missing or corrupt file fails the scan instead of
   * being skipped, whatever the session says. Rows deleted by a deletion vector are not returned.
   */
  def wholeFiles(spark: SparkSession, index: PartitioningAwareFileIndex, schema: StructType,
                 dataSchema: StructType): Scan = {
    val options = new CaseInsensitiveStringMap(Map("ignoreMissingFiles" -> "false",
      "ignoreCorruptFiles" -> "false").asJava)
    build(builder(spark, index, schema, dataSchema, options), index, StructType(schema.fields ++
      index.partitionSchema.fields.filterNot(f => schema.fieldNames.exists(_.equalsIgnoreCase(f.name)))))
  }
}
