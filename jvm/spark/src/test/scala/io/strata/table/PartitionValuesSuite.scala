package io.strata.table

import java.time.{Instant, LocalDate, LocalDateTime, ZoneId, ZoneOffset}

import io.strata.SparkTestSession
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

class PartitionValuesSuite extends AnyFunSuite with SparkTestSession {
  import PartitionValues._

  private def micros(i: Instant): Long = Math.addExact(Math.multiplyExact(i.getEpochSecond, 1000000L), i.getNano / 1000L)
  private def micros(iso: String): Long = micros(Instant.parse(iso))

  private val LA = ZoneId.of("America/Los_Angeles")

  /** What Strata's scan makes of a log value in a session in `zone` (the file index's partition row). */
  private def strataReads(value: String, dataType: DataType, zone: ZoneId = ZoneOffset.UTC): Any =
    CatalystValues.partitionRow(StructType(Seq(StructField("p", dataType))), Map("p" -> Some(value)), zone)
      .get(0, dataType)

  /** What delta-spark makes of a log value in a session in `zone`: Spark's cast of the string in that zone. */
  private def deltaSparkReads(value: String, dataType: DataType, zone: ZoneId): Any =
    CatalystValues.cast(value, dataType, zone.getId)

  test("dates: yyyy-MM-dd before 1970, around the epoch, far in the future; Spark reads them back") {
    val days = Seq(LocalDate.of(1, 1, 1), LocalDate.of(1582, 10, 4), LocalDate.of(1900, 2, 28), LocalDate.of(1969, 12, 31),
      LocalDate.of(1970, 1, 1), LocalDate.of(2024, 2, 29), LocalDate.of(9999, 12, 31)).map(_.toEpochDay.toInt)
    val formatted = days.map(formatDate)
    assert(formatted == Seq("0001-01-01", "1582-10-04", "1900-02-28", "1969-12-31", "1970-01-01", "2024-02-29",
      "9999-12-31"))
    assert(formatted.map(parseDate) == days)
    assert(formatted.map(strataReads(_, DateType)) == days)
  }

  test("timestamps: ISO-8601 UTC with microseconds, exact for instants before 1970, far future and every microsecond") {
    val cases = Seq(
      micros("1970-01-01T00:00:00Z") -> "1970-01-01T00:00:00.000000Z",
      -1L -> "1969-12-31T23:59:59.999999Z",
      micros("1969-07-20T20:17:40.000001Z") -> "1969-07-20T20:17:40.000001Z",
      micros("0001-01-01T00:00:00Z") -> "0001-01-01T00:00:00.000000Z",
      micros("2024-03-01T10:11:12.123456Z") -> "2024-03-01T10:11:12.123456Z",
      micros("9999-12-31T23:59:59.999999Z") -> "9999-12-31T23:59:59.999999Z")
    cases.foreach { case (m, text) =>
      assert(formatTimestamp(m) == text)
      assert(parseTimestamp(text, LA) == m, text)
      assert(strataReads(text, TimestampType, LA) == m, text)
    }
  }

  test("a timestamp parses the same from every spelling the protocol allows (in a UTC session: zone-less is UTC)") {
    val m = micros("2024-03-01T10:11:12.500000Z")
    Seq("2024-03-01 10:11:12.500000", "2024-03-01 10:11:12.5", "2024-03-01T10:11:12.500000Z", "2024-03-01T10:11:12.5Z",
      "2024-03-01T15:41:12.5+05:30", "2024-03-01T05:11:12.500-05:00", "2024-03-01 10:11:12.500000000")
      .foreach { s =>
        assert(parseTimestamp(s, ZoneOffset.UTC) == m, s)
        assert(strataReads(s, TimestampType) == m, s)
      }
    assert(parseTimestamp("2024-03-01 10:11:12", ZoneOffset.UTC) == micros("2024-03-01T10:11:12Z"))
  }

  test("DST hours in several zones: instants a session zone renders alike keep distinct log values") {
    // Fall-back hours (the same local time twice) and spring-forward gaps.
    val zones = Seq("America/New_York" -> "2024-11-03T05:30:00Z", "Europe/Berlin" -> "2024-10-27T00:30:00Z",
      "Australia/Sydney" -> "2024-04-06T15:30:00Z", "America/Santiago" -> "2024-04-07T02:30:00Z")
    zones.foreach { case (zone, first) =>
      val a = micros(first)
      val b = a + 3600L * 1000000L
      val local = Seq(a, b).map(m => LocalDateTime.ofInstant(Instant.EPOCH.plusNanos(m * 1000L), ZoneId.of(zone)))
      assert(local.distinct.size == 1, s"$zone: the test needs a repeated local hour, got $local")
      assert(Seq(a, b).map(formatTimestamp).map(parseTimestamp(_, ZoneId.of(zone))) == Seq(a, b), zone)
    }
    val spring = micros("2024-03-10T07:30:00Z") // 03:30 EDT; 02:30 does not exist in New York that day
    assert(parseTimestamp(formatTimestamp(spring), ZoneId.of("America/New_York")) == spring)
  }

  test("timestamp_ntz: yyyy-MM-dd HH:mm:ss[.SSSSSS], no zone involved") {
    val m = LocalDateTime.of(1969, 12, 31, 23, 59, 59, 999999000).toEpochSecond(ZoneOffset.UTC) * 1000000L + 999999L
    assert(formatTimestampNtz(m) == "1969-12-31 23:59:59.999999")
    assert(formatTimestampNtz(0L) == "1970-01-01 00:00:00")
    assert(Seq(m, 0L, 1L).map(x => parseTimestampNtz(formatTimestampNtz(x))) == Seq(m, 0L, 1L))
    assert(Seq(m, 0L).map(x => strataReads(formatTimestampNtz(x), TimestampNTZType, LA)) == Seq(m, 0L))
    val e = intercept[IllegalArgumentException](parseTimestampNtz("2024-01-01T00:00:00Z"))
    assert(e.getMessage.contains("'2024-01-01T00:00:00Z' is not a valid timestamp_ntz partition value: expected " +
      "yyyy-MM-dd HH:mm:ss[.SSSSSS]"))
  }

  test("directory values (rendered in UTC by Spark) become the log's forms") {
    assert(fromDirectoryValue("2024-11-03 05:30:00", TimestampType).contains("2024-11-03T05:30:00.000000Z"))
    assert(fromDirectoryValue("2024-11-03 05:30:00.12", TimestampType).contains("2024-11-03T05:30:00.120000Z"))
    assert(fromDirectoryValue("2024-11-03 01:30:00.5", TimestampNTZType).contains("2024-11-03 01:30:00.500000"))
    assert(fromDirectoryValue("1E-10", DecimalType(20, 10)).contains("0.0000000001"))
    assert(fromDirectoryValue("1969-12-31", DateType).contains("1969-12-31"))
    assert(fromDirectoryValue(HiveDefaultPartition, DateType).isEmpty && fromDirectoryValue("", StringType).isEmpty)
  }

  test("typedKey compares values, not spellings; null and empty are one; unparsable values stay apart") {
    val schema = StructType(Seq(StructField("ts", TimestampType), StructField("amt", DecimalType(10, 2)),
      StructField("b", BooleanType), StructField("D", DateType), StructField("s", StringType)))
    val strata = Map("ts" -> Some("2024-03-01T10:11:12.000000Z"), "amt" -> Some("12.50"), "b" -> Some("true"),
      "D" -> Some("2024-03-01"), "s" -> None)
    val other = Map("ts" -> Some("2024-03-01 10:11:12.000000"), "amt" -> Some("12.5"), "b" -> Some("TRUE"),
      "d" -> Some("2024-03-01"), "s" -> Some(""))
    val utc = Some(ZoneOffset.UTC)
    assert(typedKey(strata, schema, utc) == typedKey(other, schema, utc))
    assert(typedKey(strata, schema, utc) != typedKey(strata + ("ts" -> Some("2024-03-01T10:11:12.000001Z")), schema, utc))
    assert(typedKey(strata, schema, utc) != typedKey(strata + ("s" -> Some("x")), schema, utc))
    val bad = strata + ("ts" -> Some("yesterday"))
    assert(typedKey(bad, schema, utc) == typedKey(bad, schema, utc) && typedKey(bad, schema, utc) != typedKey(strata, schema, utc))
    val set = keySet(Seq(strata), schema, utc)
    assert(set.size == 1 && set.contains(other) && !set.contains(bad))
  }

  test("values that are not of the column's type: errors name the value, the type and the expected form") {
    val e1 = intercept[IllegalArgumentException](parse("2024-13-01", DateType, None))
    assert(e1.getMessage.startsWith("'2024-13-01' is not a valid date partition value: expected yyyy-MM-dd (Invalid"))
    val schema = StructType(Seq(StructField("d", DateType)))
    assert(typedKey(Map("d" -> Some("2024-13-01")), schema, None) != typedKey(Map("d" -> Some("2024-01-13")), schema, None))
    val e2 = intercept[IllegalArgumentException](parse("noon", TimestampType, Some(LA)))
    assert(e2.getMessage == "'noon' is not a valid timestamp partition value: expected yyyy-MM-dd HH:mm:ss[.SSSSSS] " +
      "(a local time in the session time zone) or ISO-8601 such as 1970-01-01T00:00:00.123456Z.")
    assert(intercept[IllegalArgumentException](parse("1.5", IntegerType, None)).getMessage.contains("expected an integer"))
    assert(intercept[IllegalArgumentException](parse("yes", BooleanType, None)).getMessage.contains("expected true or false"))
  }

  // Defect 8: delta-spark casts a log value to a timestamp in the session time zone; Strata must read it alike.
  test("zone-less timestamps are local times in the session zone (DST gap and repeated hour too), as delta-spark reads") {
    val cases = Seq(
      "2024-03-10 01:30:00" -> "2024-03-10T09:30:00Z", // PST, the last hour before spring-forward
      "2024-03-10 02:30:00" -> "2024-03-10T10:30:00Z", // does not exist in Los Angeles: moves forward by the gap
      "2024-03-10 03:30:00.5" -> "2024-03-10T10:30:00.500Z", // PDT
      "2024-11-03 01:30:00" -> "2024-11-03T08:30:00Z", // the repeated hour: the earlier offset (PDT)
      "2024-11-03 02:30:00" -> "2024-11-03T10:30:00Z", // PST
      // An explicit zone or offset names the instant whatever the session zone.
      "2024-11-03T09:30:00.000000Z" -> "2024-11-03T09:30:00Z",
      "2024-11-03 01:30:00-08:00" -> "2024-11-03T09:30:00Z",
      "2024-11-03T15:00:00+05:30" -> "2024-11-03T09:30:00Z")
    cases.foreach { case (value, instant) =>
      assert(parseTimestamp(value, LA) == micros(instant), value)
      assert(strataReads(value, TimestampType, LA) == micros(instant), value)
      assert(deltaSparkReads(value, TimestampType, LA) == micros(instant), value)
    }
    // The same zone-less text is another instant in another session zone; an explicit one is not.
    assert(parseTimestamp("2024-03-10 01:30:00", ZoneOffset.UTC) == micros("2024-03-10T01:30:00Z"))
    assert(parseTimestamp("2024-03-10 01:30:00", ZoneId.of("Asia/Kolkata")) == micros("2024-03-09T20:00:00Z"))
    assert(parseTimestamp("2024-11-03T09:30:00.000000Z", ZoneId.of("Asia/Kolkata")) == micros("2024-11-03T09:30:00Z"))
    // Directory values are rendered by Strata's own writer in UTC, whatever the session: read back as UTC.
    assert(fromDirectoryValue("2024-03-10 01:30:00", TimestampType).contains("2024-03-10T01:30:00.000000Z"))
  }

  test("typedKey: Some(zone) matches a zone-less value with the instant that session reads; None never does") {
    val schema = StructType(Seq(StructField("ts", TimestampType)))
    def key(ts: String, zone: Option[ZoneId]) = typedKey(Map("ts" -> Some(ts)), schema, zone)
    val zoneLess = "2024-03-10 01:30:00"
    val utcForm = "2024-03-10T09:30:00.000000Z" // 01:30 PST
    assert(key(zoneLess, Some(LA)) == key(utcForm, Some(LA)))
    assert(key(zoneLess, Some(ZoneOffset.UTC)) != key(utcForm, Some(ZoneOffset.UTC)))
    // None: equal keys read alike in every session zone (what a rewrite such as OPTIMIZE may merge).
    assert(key(zoneLess, None) != key(utcForm, None))
    assert(key(zoneLess, None) == key("2024-03-10 01:30:00.000000", None))
    assert(key(utcForm, None) == key("2024-03-10T01:00:00-08:30", None))
    assert(key(zoneLess, None) != key("2024-03-10 01:30:00.000001", None))
  }
}
