package io.strata.table

import java.util.Locale

import org.apache.spark.sql.catalyst.expressions.{ArrayTransform, BoundReference, Cast, CreateNamedStruct, Expression, GetStructField,
  If, IsNull, LambdaFunction, Literal, NamedLambdaVariable, TransformKeys, TransformValues}
import org.apache.spark.sql.types.{ArrayType, DataType, MapType, StructField, StructType}

/**
 * A write's data value turned into the table's type by name at every level, as delta-spark's writes resolve data:
 * struct fields are matched by name (case-insensitively, in any order), a nullable field the data lacks is null, the
 * elements of arrays and the values of maps are converted the same way, and a leaf of a narrower type is widened by a
 * cast ([[TableSchema.canWiden]]). One expression serves both writers: the V1 path's projection and the rows a
 * streaming write aligns (`write.RowAlignment`).
 *
 * [[merged]] is the type schema evolution (`mergeSchema`) gives a column: the table's fields, then the data's new
 * ones, at every level.
 */
object ByNameConversion {

  /** What stops a value of the data's type from becoming the table's: where (a dotted path) and why. */
  final case class Mismatch(path: String, problem: String)

  /**
   * The expression turning `in` (of type `from`) into type `to`; `in` itself when the types already agree (names,
   * order and leaf types; nullability aside). `path` names the column in a mismatch.
   */
  def apply(in: Expression, from: DataType, to: DataType, path: String, timeZone: String): Either[Mismatch, Expression] =
    if (same(from, to)) Right(in) else nested(in, from, to, path, timeZone)

  private def nested(in: Expression, from: DataType, to: DataType, path: String,
                     timeZone: String): Either[Mismatch, Expression] =
    (from, to) match {
      case (f: StructType, t: StructType) => struct(in, f, t, path, timeZone)
      case (f: ArrayType, t: ArrayType) =>
        // Nullable as the table's elements are: the rebuilt array's element nullability is the body's.
        val element = NamedLambdaVariable("element", f.elementType, f.containsNull || t.containsNull)
        apply(element, f.elementType, t.elementType, s"$path.element", timeZone).map { body =>
          ArrayTransform(in, LambdaFunction(body, Seq(element)))
        }
      case (f: MapType, t: MapType) =>
        // Keys first (a widening of a primitive key), then values, each by its own lambda.
        val (k1, v1) = (NamedLambdaVariable("key", f.keyType, nullable = false),
          NamedLambdaVariable("value", f.valueType, f.valueContainsNull))
        val keys = if (same(f.keyType, t.keyType)) Right(in) else apply(k1, f.keyType, t.keyType, s"$path.key",
          timeZone).map(body => TransformKeys(in, LambdaFunction(body, Seq(k1, v1))))
        keys.flatMap { withKeys =>
          val (k2, v2) = (NamedLambdaVariable("key", t.keyType, nullable = false),
            NamedLambdaVariable("value", f.valueType, f.valueContainsNull || t.valueContainsNull))
          if (same(f.valueType, t.valueType)) Right(withKeys)
          else apply(v2, f.valueType, t.valueType, s"$path.value", timeZone).map { body =>
            TransformValues(withKeys, LambdaFunction(body, Seq(k2, v2)))
          }
        }
      case _ if TableSchema.canWiden(from, to) => Right(Cast(in, to, Some(timeZone)))
      case _ => Left(Mismatch(path, s"${from.simpleString} in the data cannot be written as ${to.simpleString}"))
    }

  /**
   * [[apply]] for a column [[TableSchema.matchColumns]] has matched (so it converts): the writers' one call. A
   * mismatch here is a bug, not bad input.
   */
  def matched(in: Expression, from: DataType, to: DataType, column: String, timeZone: String): Expression =
    apply(in, from, to, column, timeZone).fold(m => throw new IllegalStateException(
      s"matched column $column does not convert: $m"), identity)

  /** Why a value of type `from` cannot become `to` (column `path`), if it cannot. */
  def mismatch(from: DataType, to: DataType, path: String): Option[Mismatch] =
    apply(BoundReference(0, from, nullable = true), from, to, path, "UTC").left.toOption

  /** Whether `from` is `to` already, with no conversion (names spelled alike, in order; nullability aside). */
  def isIdentity(from: DataType, to: DataType): Boolean = same(from, to)

  private def struct(in: Expression, from: StructType, to: StructType, path: String,
                     timeZone: String): Either[Mismatch, Expression] = {
    val byName = from.fields.zipWithIndex.map { case (f, i) => lower(f.name) -> (f, i) }.toMap
    val extra = from.fields.map(_.name).filterNot(n => to.fields.exists(t => lower(t.name) == lower(n)))
    if (extra.nonEmpty) return Left(Mismatch(path, s"field ${extra.mkString("'", "', '", "'")} is not in the table " +
      "(use option mergeSchema to add it)"))
    val fields = to.fields.toSeq.map { t =>
      byName.get(lower(t.name)) match {
        case Some((f, i)) => apply(GetStructField(in, i, Some(f.name)), f.dataType, t.dataType, s"$path.${t.name}",
          timeZone)
        case None if t.nullable => Right(Literal(null, t.dataType))
        case None => Left(Mismatch(s"$path.${t.name}", "the data lacks this NOT NULL field"))
      }
    }
    fields.collectFirst { case Left(m) => m } match {
      case Some(m) => Left(m)
      case None =>
        val built = CreateNamedStruct(to.fields.toSeq.zip(fields.collect { case Right(e) => e })
          .flatMap { case (t, e) => Seq(Literal(t.name), e) })
        Right(If(IsNull(in), Literal(null, to), built))
    }
  }

  /**
   * The type schema evolution gives a column the table has as `table` when the data holds it as `data`: the
   * table's struct fields in their order (each merged with the data's field of that name), then the data's fields the
   * table lacks (nullable), inside arrays and map values too. Leaf types stay the table's (widening a leaf is
   * [[TypeWideningChanges.evolve]]'s decision).
   */
  def merged(table: DataType, data: DataType): DataType = (table, data) match {
    case (t: StructType, d: StructType) =>
      val known = t.fields.map(f => lower(f.name)).toSet
      val kept = t.fields.map { f =>
        d.fields.find(g => lower(g.name) == lower(f.name)).fold(f)(g => f.copy(dataType = merged(f.dataType, g.dataType)))
      }
      val added = d.fields.filterNot(g => known(lower(g.name))).map { g =>
        StructField(g.name, TableSchema.asNullable(g.dataType), nullable = true, g.metadata)
      }
      StructType(kept ++ added)
    case (t: ArrayType, d: ArrayType) => t.copy(elementType = merged(t.elementType, d.elementType))
    case (t: MapType, d: MapType) => t.copy(valueType = merged(t.valueType, d.valueType))
    case _ => table
  }

  /**
   * The same names (spelled alike: a struct keeps its field names, so the table's spelling needs a rebuild) in the
   * same order and the same leaf types, nullability aside.
   */
  private def same(a: DataType, b: DataType): Boolean = (a, b) match {
    case (x: StructType, y: StructType) => x.length == y.length && x.fields.zip(y.fields).forall { case (f, g) =>
      f.name == g.name && same(f.dataType, g.dataType)
    }
    case (x: ArrayType, y: ArrayType) => same(x.elementType, y.elementType)
    case (x: MapType, y: MapType) => same(x.keyType, y.keyType) && same(x.valueType, y.valueType)
    case _ => a == b
  }

  private def lower(name: String): String = name.toLowerCase(Locale.ROOT)
}
