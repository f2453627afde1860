package io.strata.table

import io.strata.SparkTestSession
import org.apache.spark.sql.catalyst.expressions.{AttributeReference, DayOfMonth, DayOfWeek, DayOfYear, EqualTo,
  Expression, Literal, Quarter, WeekDay, WeekOfYear, YearOfWeek}
import org.apache.spark.sql.catalyst.util.V2ExpressionBuilder
import org.apache.spark.sql.connector.expressions.filter.Predicate
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

class V2PredicateSqlSuite extends AnyFunSuite with SparkTestSession {
  /** `p = value` as Spark hands it to a V2 writer: translated from Catalyst, literals holding internal values. */
  private def v2Equals(value: Any, dataType: DataType): Predicate =
    new V2ExpressionBuilder(EqualTo(AttributeReference("p", dataType)(), Literal.create(value, dataType)), true)
      .build().get.asInstanceOf[Predicate]

  private val values: Seq[(Any, DataType)] = Seq(
    java.time.LocalDate.of(1969, 7, 20) -> DateType,
    java.time.LocalDate.of(9999, 12, 31) -> DateType,
    java.time.Instant.parse("2024-11-03T05:30:00.000001Z") -> TimestampType,
    java.time.Instant.parse("2024-11-03T06:30:00Z") -> TimestampType,
    java.time.Instant.parse("1969-12-31T23:59:59.999999Z") -> TimestampType,
    java.time.LocalDateTime.parse("2024-11-03T01:30:00.5") -> TimestampNTZType,
    "it's a \\ \"quote\"\n" -> StringType,
    new java.math.BigDecimal("0.0000000001") -> DecimalType(20, 10),
    new java.math.BigDecimal("-12.50") -> DecimalType(10, 2),
    -7 -> IntegerType, Long.MinValue -> LongType, true -> BooleanType,
    Double.NaN -> DoubleType, 1.5e300 -> DoubleType, Array[Byte](0, 1, -1) -> BinaryType,
    (null: String) -> StringType)

  test("V2 predicates render as SQL whose literals Spark reads back exactly, in any session time zone") {
    Seq("UTC", "America/New_York", "Asia/Kolkata").foreach { zone =>
      spark.conf.set("spark.sql.session.timeZone", zone)
      try values.foreach { case (value, dataType) =>
        val sql = V2PredicateSql(v2Equals(value, dataType)).getOrElse(fail(s"$value did not render"))
        assert(sql.startsWith("p = "), sql)
        val back = spark.sql(s"SELECT ${sql.stripPrefix("p = ")} AS v").head()
        assert(spark.sql(s"SELECT ${sql.stripPrefix("p = ")} AS v").schema.head.dataType == dataType, sql)
        (value, back.get(0)) match {
          case (a: Array[Byte], b: Array[Byte]) => assert(a.sameElements(b), sql)
          case (a: java.time.LocalDate, b: java.sql.Date) => assert(b.toLocalDate == a, sql)
          case (a: java.time.Instant, b: java.sql.Timestamp) => assert(b.toInstant == a, s"$sql in $zone")
          case (a: java.math.BigDecimal, b: java.math.BigDecimal) => assert(a.compareTo(b) == 0, sql)
          case (a: Double, b: Double) if a.isNaN => assert(b.isNaN, sql)
          case (a, b) => assert(a == b, sql)
        }
      } finally spark.conf.set("spark.sql.session.timeZone", "UTC")
    }
  }

  test("date field functions render as EXTRACT fields Spark's parser knows, selecting the rows the functions do") {
    // Spark translates these to V2 EXTRACTs with ANSI field names (DAY_OF_WEEK: Monday = 1); its own EXTRACT
    // spells them DAYOFWEEK_ISO, DOY, YEAROFWEEK.
    val d = AttributeReference("d", DateType)()
    val dates = spark.sql("SELECT date_add(DATE'2023-12-20', CAST(id AS INT)) AS d FROM range(0, 30)")
    def selected(where: String) = dates.where(where).collect().map(_.getDate(0).toString).sorted.toSeq
    Seq[(String, Expression, Int)](("dayofweek(d)", DayOfWeek(d), 1), ("weekday(d)", WeekDay(d), 0),
      ("dayofyear(d)", DayOfYear(d), 1), ("extract(YEAROFWEEK FROM d)", YearOfWeek(d), 2024),
      ("weekofyear(d)", WeekOfYear(d), 52), ("dayofmonth(d)", DayOfMonth(d), 31), ("quarter(d)", Quarter(d), 4))
      .foreach { case (function, e, value) =>
        val v2 = new V2ExpressionBuilder(EqualTo(e, Literal(value)), true).build().get.asInstanceOf[Predicate]
        val sql = V2PredicateSql(v2).getOrElse(fail(s"$function did not render"))
        val expected = selected(s"$function = $value")
        assert(expected.nonEmpty && selected(sql) == expected, s"$function = $value as $sql")
      }
  }

  test("timestamps render in UTC with an explicit zone, dates and decimals as their values, not internal numbers") {
    assert(V2PredicateSql(v2Equals(java.time.LocalDate.of(2024, 1, 1), DateType)).contains("p = DATE '2024-01-01'"))
    assert(V2PredicateSql(v2Equals(java.time.Instant.parse("2024-11-03T05:30:00Z"), TimestampType))
      .contains("p = TIMESTAMP '2024-11-03T05:30:00.000000Z'"))
    assert(V2PredicateSql(v2Equals(new java.math.BigDecimal("12.50"), DecimalType(10, 2)))
      .contains("p = CAST('12.50' AS DECIMAL(10,2))"))
  }
}
