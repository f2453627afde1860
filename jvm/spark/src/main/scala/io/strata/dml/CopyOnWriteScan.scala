package io.strata.dml

import java.util.OptionalLong

import io.strata.log.{AddFile, FilePredicate, Snapshot}
import io.strata.read.{FileColumn, ParquetScans, SnapshotReader}
import io.strata.table.TableSchema
import io.strata.write.RowLevelRead
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.expressions.{Expressions, Literal, NamedReference}
import org.apache.spark.sql.connector.expressions.filter.Predicate
import org.apache.spark.sql.connector.read.{Batch, InputPartition, PartitionReaderFactory, Scan, Statistics,
  SupportsReportStatistics, SupportsRuntimeV2Filtering}
import org.apache.spark.sql.types.StructType

/** See [[CopyOnWriteScanBuilder]]. `condition`: the row condition, as the read set of the operation's commit. */
final class CopyOnWriteScan(val snapshot: Snapshot, val condition: FilePredicate, val conditionSql: Seq[String])
    extends Scan with SupportsRuntimeV2Filtering with SupportsReportStatistics with RowLevelRead {
  private val table = TableSchema.of(snapshot.metadata)
  private val dataSchema = StructType(table.schema.fields.filterNot(f => table.partitionColumns.contains(f.name)))
  @volatile private var selected: Seq[AddFile] = snapshot.files.filter(f => condition.mayMatch(f.partitionValues, f.stats))

  /** The files this scan reads (final once Spark applied the runtime group filter). */
  override def files: Seq[AddFile] = selected

  private def scanOf(files: Seq[AddFile]): Scan = {
    val spark = SparkSession.active
    ParquetScans.wholeFiles(spark, SnapshotReader.fileIndex(spark, snapshot, Some(files), withFileColumn = true),
      table.schema, dataSchema)
  }

  private lazy val template = scanOf(Nil)

  override def readSchema(): StructType = template.readSchema()
  override def description(): String =
    s"Strata copy-on-write scan of ${snapshot.tablePath} v${snapshot.version}" +
      (if (conditionSql.isEmpty) "" else conditionSql.mkString(" where ", " AND ", ""))

  /** From the log: the chosen files' bytes and (when every file's statistics have it) their row count. */
  override def estimateStatistics(): Statistics = {
    val files = selected
    val rows = io.strata.write.RowLevelMetrics.total(files)
    new Statistics {
      override def sizeInBytes(): OptionalLong = OptionalLong.of(files.map(_.size).sum)
      override def numRows(): OptionalLong = rows.fold(OptionalLong.empty())(OptionalLong.of)
    }
  }

  override def filterAttributes(): Array[NamedReference] = Array(Expressions.column(FileColumn.Name))

  /** Spark's group filter: `_strata_file IN (the files holding matching rows)`. Other predicates are not used. */
  override def filter(predicates: Array[Predicate]): Unit = predicates.foreach { p =>
    val onFile = p.children().headOption.exists {
      case r: NamedReference => r.fieldNames().toSeq == Seq(FileColumn.Name)
      case _ => false
    }
    if (onFile && (p.name() == "IN" || p.name() == "=")) {
      val paths: Set[String] = p.children().tail.collect { case l: Literal[_] => String.valueOf(l.value()) }.toSet
      selected = selected.filter(f => paths.contains(snapshot.absolutePath(f.path).toString))
    }
  }

  override def toBatch: Batch = new Batch {
    // Planned when the job runs, after the runtime filter narrowed the files.
    override def planInputPartitions(): Array[InputPartition] = scanOf(selected).toBatch.planInputPartitions()
    override def createReaderFactory(): PartitionReaderFactory = template.toBatch.createReaderFactory()
  }
}
