package io.strata.table

import io.strata.log.InvalidTableOperationException
import org.apache.spark.sql.types._

/**
 * Clustering columns between the names users write (logical, dotted for nested fields) and the paths the
 * `delta.clustering` domain stores (physical names, PROTOCOL.md "Clustered Table"), with delta-spark's checks: each
 * column exists, is a top-level or nested field of a type data skipping uses, appears once, and has statistics
 * (among the first `delta.dataSkippingNumIndexedCols` leaf columns, and in `delta.dataSkippingStatsColumns` when set).
 */
object ClusteringColumns {
  private def invalid(table: String, message: String) =
    InvalidTableOperationException("STRATA_INVALID_CLUSTERING", s"Cannot cluster $table: $message")

  /** Types with min/max statistics (delta-spark's data-skipping eligible types). */
  def eligible(dt: DataType): Boolean = dt match {
    case ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType | DateType | TimestampType |
         TimestampNTZType | StringType => true
    case _: DecimalType => true
    case _ => false
  }

  /**
   * The physical paths of `names` (logical paths) in `schema` (the table's schema with its mapping keys), checked.
   * `numIndexed`: the table's `delta.dataSkippingNumIndexedCols` (-1: all); `statsColumns`: its
   * `delta.dataSkippingStatsColumns`.
   */
  def resolve(schema: StructType, partitionColumns: Seq[String], names: Seq[Seq[String]], numIndexed: Int,
              statsColumns: Option[String], table: String): Seq[Seq[String]] = {
    if (names.nonEmpty && partitionColumns.nonEmpty) throw invalid(table, s"it is partitioned by " +
      s"${partitionColumns.mkString(", ")}, and a table is either partitioned or clustered (as in delta-spark); " +
      "create it without PARTITIONED BY to cluster it.")
    val dup = names.map(_.map(_.toLowerCase)).groupBy(identity).collectFirst { case (n, ns) if ns.size > 1 => n }
    dup.foreach(n => throw invalid(table, s"column ${n.mkString(".")} is named twice; name each column once."))
    val stats = statsColumns.map(_.split(",").map(_.trim.toLowerCase).filter(_.nonEmpty).toSet)
    names.map { path =>
      val (fields, leafIndex) = locate(schema, path).getOrElse(throw invalid(table, s"column ${path.mkString(".")} " +
        s"does not exist (columns: ${schema.fieldNames.mkString(", ")})."))
      val name = fields.map(_.name).mkString(".")
      val field = fields.last
      if (!eligible(field.dataType)) throw invalid(table, s"column $name is of type ${field.dataType.sql}; clustering " +
        "columns must be of a type with min/max statistics (numbers, strings, dates, timestamps).")
      stats match {
        case Some(cols) => if (!cols(name.toLowerCase)) throw invalid(table, s"column $name has no statistics: " +
          s"delta.dataSkippingStatsColumns (${statsColumns.get}) does not list it; add it there first.")
        case None => if (numIndexed >= 0 && leafIndex >= numIndexed) throw invalid(table, s"column $name has no " +
          s"statistics: the table keeps them for its first $numIndexed leaf columns " +
          s"(delta.dataSkippingNumIndexedCols) and $name is number ${leafIndex + 1}; raise the property first.")
      }
      fields.map(PhysicalSchema.physicalName)
    }
  }

  /** The fields along `path` (case-insensitive) and the index of its leaf among the schema's leaf columns. */
  private def locate(schema: StructType, path: Seq[String]): Option[(Seq[StructField], Int)] = {
    var t: StructType = schema
    var before = 0
    val fields = path.zipWithIndex.map { case (p, i) =>
      val at = t.fields.indexWhere(_.name.equalsIgnoreCase(p))
      if (at < 0) return None
      before += t.fields.take(at).map(f => leaves(f.dataType)).sum
      val f = t.fields(at)
      f.dataType match {
        case s: StructType if i < path.size - 1 => t = s
        case _ if i < path.size - 1 => return None
        case _ =>
      }
      f
    }
    Some((fields, before))
  }

  private def leaves(dt: DataType): Int = dt match {
    case s: StructType => s.fields.map(f => leaves(f.dataType)).sum
    case a: ArrayType => leaves(a.elementType)
    case m: MapType => leaves(m.keyType) + leaves(m.valueType)
    case _ => 1
  }

  /** The logical paths of stored (physical) clustering columns; a column the schema lost is an error. */
  def logical(schema: StructType, physical: Seq[Seq[String]], table: String): Seq[Seq[String]] = physical.map { path =>
    var t: StructType = schema
    path.map { p =>
      val f = t.fields.find(f => PhysicalSchema.physicalName(f) == p).getOrElse(throw InvalidTableOperationException(
        "STRATA_INVALID_CLUSTERING", s"Table $table is clustered by ${path.mkString(".")}, which its schema does " +
          "not have (any more); drop or change the clustering with ALTER TABLE ... CLUSTER BY first."))
      f.dataType match { case s: StructType => t = s; case _ => }
      f.name
    }
  }

  /** A logical path as SQL shows it: parts joined by dots, quoted when they hold a dot or backtick. */
  def sql(path: Seq[String]): String =
    path.map(p => if (p.contains(".") || p.contains("`")) "`" + p.replace("`", "``") + "`" else p).mkString(".")

  /**
   * A logical path as Spark's `FieldReference` prints it, the spelling delta-spark's `ZCUBE_ZORDER_BY` tag and
   * commitInfo `clusterBy` use: parts other than plain identifiers (letters, digits, `_`; not all digits) quoted.
   */
  def fieldName(path: Seq[String]): String = path.map { p =>
    if (p.matches("[a-zA-Z0-9_]+") && !p.matches("\\d+")) p else "`" + p.replace("`", "``") + "`"
  }.mkString(".")
}
