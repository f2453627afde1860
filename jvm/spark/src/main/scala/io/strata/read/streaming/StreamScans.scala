package io.strata.read.streaming

import io.strata.read.{LogFileIndex, ParquetScans}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, UnsafeProjection}
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.vectorized.ColumnarBatch

/** One input partition of a streaming micro-batch: Spark's Parquet file partition, read with or without vectors. */
final case class StreamInputPartition(inner: InputPartition, deletionVectors: Boolean) extends InputPartition {
  override def preferredLocations(): Array[String] = inner.preferredLocations()
}

/**
 * The reads of the streaming source's micro-batches, through Spark's V2 Parquet scan over a log file index: every
 * column, no filter, a missing file fails the batch ([[ParquetScans.wholeFiles]]). Spark's scan returns partition
 * columns last; a stream's rows must come in the table's column order, so the reader factory reorders them.
 */
object StreamScans {
  /** The input partitions of the files `index` lists (its deletion vectors decide which reader serves them). */
  def partitions(spark: SparkSession, index: LogFileIndex, schema: StructType,
                 dataSchema: StructType): Array[InputPartition] = {
    val batch = ParquetScans.wholeFiles(spark, index, schema, dataSchema).toBatch
    batch.planInputPartitions().map(p => StreamInputPartition(p, index.hasDeletionVectors): InputPartition)
  }

  /**
   * A reader factory for any such partitions, built once per stream: `emptyIndex(deletionVectors)` is an index of no
   * files (the factories of Spark's scan depend on the columns and the session, not on the files).
   */
  def readerFactory(spark: SparkSession, emptyIndex: Boolean => LogFileIndex, schema: StructType,
                    dataSchema: StructType): PartitionReaderFactory = {
    def of(dv: Boolean): (PartitionReaderFactory, Array[Int]) = {
      val scan = ParquetScans.wholeFiles(spark, emptyIndex(dv), schema, dataSchema)
      val read = scan.readSchema()
      val ordinals = schema.fields.map(f => read.fieldNames.indexWhere(_.equalsIgnoreCase(f.name)))
      if (ordinals.contains(-1)) throw new IllegalStateException(s"Parquet scan columns ${read.simpleString} lack " +
        s"some of ${schema.simpleString}")
      (scan.toBatch.createReaderFactory(), ordinals)
    }
    new StreamReaderFactory(of(dv = false), of(dv = true), schema)
  }
}

/** Delegates to the plain or the deletion-vector factory of Spark's scan and puts columns in the table's order. */
final class StreamReaderFactory(plain: (PartitionReaderFactory, Array[Int]), withVectors: (PartitionReaderFactory,
    Array[Int]), schema: StructType) extends PartitionReaderFactory {
  private def pick(p: InputPartition): (PartitionReaderFactory, Array[Int], InputPartition) = p match {
    case StreamInputPartition(inner, dv) =>
      val (f, ordinals) = if (dv) withVectors else plain
      (f, ordinals, inner)
    case other => throw new IllegalStateException(s"Not a Strata stream partition: $other")
  }
  private def identity(ordinals: Array[Int]) = ordinals.indices.forall(i => ordinals(i) == i)

  override def supportColumnarReads(p: InputPartition): Boolean = { val (f, _, inner) = pick(p); f.supportColumnarReads(inner) }

  override def createReader(p: InputPartition): PartitionReader[InternalRow] = {
    val (f, ordinals, inner) = pick(p)
    val reader = f.createReader(inner)
    if (identity(ordinals)) reader else {
      val project = UnsafeProjection.create(ordinals.toSeq.zip(schema.fields).map { case (i, field) =>
        BoundReference(i, field.dataType, nullable = true) })
      new PartitionReader[InternalRow] {
        override def next(): Boolean = reader.next()
        override def get(): InternalRow = project(reader.get())
        override def close(): Unit = reader.close()
      }
    }
  }

  override def createColumnarReader(p: InputPartition): PartitionReader[ColumnarBatch] = {
    val (f, ordinals, inner) = pick(p)
    val reader = f.createColumnarReader(inner)
    if (identity(ordinals)) reader else new PartitionReader[ColumnarBatch] {
      override def next(): Boolean = reader.next()
      override def get(): ColumnarBatch = {
        val b = reader.get()
        new ColumnarBatch(ordinals.map(b.column), b.numRows())
      }
      override def close(): Unit = reader.close()
    }
  }
}
