package io.strata.read

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, UnsafeProjection}
import org.apache.spark.sql.catalyst.plans.logical.LeafNode
import org.apache.spark.sql.catalyst.util.truncatedString
import org.apache.spark.sql.execution.LeafExecNode

/**
 * Rows an aggregate got from the log in place of a scan (path reads: [[LogAggregateRule]] puts it where the
 * aggregate was). `description` says what was answered and from which version; EXPLAIN shows it.
 */
final case class LogAggregateRelation(output: Seq[Attribute], rows: Seq[InternalRow], description: String)
    extends LeafNode {
  override def simpleString(maxFields: Int): String =
    s"$description ${truncatedString(output, "[", ", ", "]", maxFields)}"
}

/** Plans both forms of an aggregate answered from the log: collecting its rows runs no Spark job. */
final case class LogAggregateExec(output: Seq[Attribute], rows: Seq[InternalRow], description: String)
    extends LeafExecNode {
  private lazy val unsafeRows: Array[InternalRow] = {
    val project = UnsafeProjection.create(output, output)
    rows.map(r => project(r).copy(): InternalRow).toArray
  }

  override def simpleString(maxFields: Int): String =
    s"$description ${truncatedString(output, "[", ", ", "]", maxFields)}"
  override protected def doExecute(): RDD[InternalRow] = sparkContext.parallelize(unsafeRows.toSeq, 1)
  override def executeCollect(): Array[InternalRow] = unsafeRows
  override def executeTake(limit: Int): Array[InternalRow] = unsafeRows.take(limit)
  override def executeTail(limit: Int): Array[InternalRow] = unsafeRows.takeRight(limit)
}
