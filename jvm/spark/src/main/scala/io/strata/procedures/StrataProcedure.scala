package io.strata.procedures

import io.strata.log.InvalidTableOperationException
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.ArrayData
import org.apache.spark.sql.connector.catalog.procedures.{BoundProcedure, ProcedureParameter, UnboundProcedure}
import org.apache.spark.sql.connector.read.{LocalScan, Scan}
import org.apache.spark.sql.types.{DataType, StructType}

/**
 * One `CALL <catalog>.system.<name>(...)` procedure. Spark matches positional and named arguments to [[parameters]],
 * fills defaults and casts before [[call]], so a procedure reads its arguments by name through [[ProcedureArgs]] and
 * returns its result rows in [[outputType]]. Procedures change tables, so none is deterministic.
 */
abstract class StrataProcedure extends UnboundProcedure with BoundProcedure {
  def outputType: StructType
  protected def params: Seq[ProcedureParameter]
  protected def run(spark: SparkSession, args: ProcedureArgs): Seq[Row]

  override def parameters(): Array[ProcedureParameter] = params.toArray
  override def bind(inputType: StructType): BoundProcedure = this
  override def isDeterministic: Boolean = false

  override def call(input: InternalRow): java.util.Iterator[Scan] = {
    val spark = SparkSession.active
    val rows = run(spark, new ProcedureArgs(name(), params, input))
    java.util.List.of[Scan](StrataProcedure.Result(outputType, StrataProcedure.toInternal(outputType, rows))).iterator()
  }
}

object StrataProcedure {
  final case class Result(readSchema: StructType, rows: Array[InternalRow]) extends LocalScan {
    override def description(): String = s"procedure result (${rows.length} rows)"
  }

  private def toInternal(schema: StructType, rows: Seq[Row]): Array[InternalRow] = {
    val converter = org.apache.spark.sql.catalyst.CatalystTypeConverters.createToCatalystConverter(schema)
    rows.map(r => converter(r).asInstanceOf[InternalRow]).toArray
  }

  /** A required parameter. */
  def required(name: String, dataType: DataType, comment: String): ProcedureParameter =
    ProcedureParameter.in(name, dataType).comment(comment).build()

  /** An optional parameter; `default` is a SQL literal ("NULL" when absent means "not given"). */
  def optional(name: String, dataType: DataType, comment: String, default: String = "NULL"): ProcedureParameter =
    ProcedureParameter.in(name, dataType).defaultValue(default).comment(comment).build()
}

/** The bound arguments of one call, by parameter name. Errors name the procedure and the argument. */
final class ProcedureArgs(procedure: String, params: Seq[ProcedureParameter], row: InternalRow) {
  private def index(name: String): Int = {
    val i = params.indexWhere(_.name() == name)
    require(i >= 0, s"procedure $procedure has no parameter $name")
    i
  }
  private def isNull(name: String): Boolean = row.isNullAt(index(name))

  def string(name: String): Option[String] = if (isNull(name)) None else Some(row.getUTF8String(index(name)).toString)
  def int(name: String): Option[Int] = if (isNull(name)) None else Some(row.getInt(index(name)))
  def long(name: String): Option[Long] = if (isNull(name)) None else Some(row.getLong(index(name)))
  def double(name: String): Option[Double] = if (isNull(name)) None else Some(row.getDouble(index(name)))
  def boolean(name: String): Option[Boolean] = if (isNull(name)) None else Some(row.getBoolean(index(name)))
  def strings(name: String): Option[Seq[String]] = if (isNull(name)) None else {
    val a: ArrayData = row.getArray(index(name))
    Some((0 until a.numElements()).map { i =>
      if (a.isNullAt(i)) throw invalid(name, "holds a NULL element", "an array of column names")
      a.getUTF8String(i).toString
    })
  }

  /** An hours argument (a retention) in milliseconds; NaN, infinite and negative values are refused. */
  def hoursAsMillis(name: String, expected: String): Option[Long] = double(name).map { h =>
    if (h.isNaN || h.isInfinite || h < 0) throw invalid(name, s"is $h", expected)
    math.round(h * 3600000)
  }

  def requiredString(name: String): String = string(name).getOrElse(throw invalid(name, "is NULL", "a value"))

  /** The error for a bad argument: what is wrong and what would be right. */
  def invalid(name: String, what: String, expected: String): InvalidTableOperationException =
    InvalidTableOperationException("STRATA_INVALID_PROCEDURE_ARGUMENT", Map("procedure" -> procedure,
      "argument" -> name, "problem" -> what, "expected" -> expected))
}
