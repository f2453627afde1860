package io.strata.table

import java.time.{Instant, LocalDate, LocalDateTime, ZoneId, ZoneOffset}

import io.strata.SparkTestSession
import io.strata.shim.SparkInternals
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

class PartitionValuesSuite extends AnyFunSuite with SparkTestSession {
  import PartitionValues._

  private def micros(i: Instant): Long = Math.addExact(Math.multiplyExact(i.getEpochSecond, 1000000L), i.getNano / 1000L)
  private def micros(iso: String): Long = micros(Instant.parse(iso))

  /** What Spark's reader makes of a log value (the same cast the scan's file index applies). */
  private def sparkReads(value: String, dataType: DataType): Any =
    SparkInternals.castPartitionValue(toCastableString(value, dataType), dataType, "UTC")

  test("dates: yyyy-MM-dd before 1970, around the epoch, far in the future; Spark reads them back") {
    val days = Seq(LocalDate.of(1, 1, 1), LocalDate.of(1582, 10, 4), LocalDate.of(1900, 2, 28), LocalDate.of(1969, 12, 31),
      LocalDate.of(1970, 1, 1), LocalDate.of(2024, 2, 29), LocalDate.of(9999, 12, 31)).map(_.toEpochDay.toInt)
    val formatted = days.map(formatDate)
    assert(formatted == Seq("0001-01-01", "1582-10-04", "1900-02-28", "1969-12-31", "1970-01-01", "2024-02-29",
      "9999-12-31"))
    assert(formatted.map(parseDate) == days)
    assert(formatted.map(sparkReads(_, DateType)) == days)
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
      assert(parseTimestamp(text) == m, text)
      assert(sparkReads(text, TimestampType) == m, text)
    }
  }

  test("a timestamp parses the same from every spelling the protocol allows (delta-rs writes it zone-less)") {
    val m = micros("2024-03-01T10:11:12.500000Z")
    Seq("2024-03-01 10:11:12.500000", "2024-03-01 10:11:12.5", "2024-03-01T10:11:12.500000Z", "2024-03-01T10:11:12.5Z",
      "2024-03-01T15:41:12.5+05:30", "2024-03-01T05:11:12.500-05:00", "2024-03-01 10:11:12.500000000")
      .foreach { s =>
        assert(parseTimestamp(s) == m, s)
        assert(sparkReads(s, TimestampType) == m, s)
      }
    assert(parseTimestamp("2024-03-01 10:11:12") == micros("2024-03-01T10:11:12Z"))
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
      assert(Seq(a, b).map(formatTimestamp).map(parseTimestamp) == Seq(a, b), zone)
    }
    val spring = micros("2024-03-10T07:30:00Z") // 03:30 EDT; 02:30 does not exist in New York that day
    assert(parseTimestamp(formatTimestamp(spring)) == spring)
  }

  test("timestamp_ntz: yyyy-MM-dd HH:mm:ss[.SSSSSS], no zone involved") {
    val m = LocalDateTime.of(1969, 12, 31, 23, 59, 59, 999999000).toEpochSecond(ZoneOffset.UTC) * 1000000L + 999999L
    assert(formatTimestampNtz(m) == "1969-12-31 23:59:59.999999")
    assert(formatTimestampNtz(0L) == "1970-01-01 00:00:00")
    assert(Seq(m, 0L, 1L).map(x => parseTimestampNtz(formatTimestampNtz(x))) == Seq(m, 0L, 1L))
    assert(Seq(m, 0L).map(x => sparkReads(formatTimestampNtz(x), TimestampNTZType)) == Seq(m, 0L))
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
    assert(typedKey(strata, schema) == typedKey(other, schema))
    assert(typedKey(strata, schema) != typedKey(strata + ("ts" -> Some("2024-03-01T10:11:12.000001Z")), schema))
    assert(typedKey(strata, schema) != typedKey(strata + ("s" -> Some("x")), schema))
    val bad = strata + ("ts" -> Some("yesterday"))
    assert(typedKey(bad, schema) == typedKey(bad, schema) && typedKey(bad, schema) != typedKey(strata, schema))
    val set = keySet(Seq(strata), schema)
    assert(set.size == 1 && set.contains(other) && !set.contains(bad))
  }

  test("values that are not of the column's type: errors name the value, the type and the expected form") {
    val e1 = intercept[IllegalArgumentException](parse("2024-13-01", DateType))
    assert(e1.getMessage.startsWith("'2024-13-01' is not a valid date partition value: expected yyyy-MM-dd (Invalid"))
    val schema = StructType(Seq(StructField("d", DateType)))
    assert(typedKey(Map("d" -> Some("2024-13-01")), schema) != typedKey(Map("d" -> Some("2024-01-13")), schema))
    val e2 = intercept[IllegalArgumentException](parse("noon", TimestampType))
    assert(e2.getMessage == "'noon' is not a valid timestamp partition value: expected yyyy-MM-dd HH:mm:ss[.SSSSSS] " +
      "(UTC) or ISO-8601 such as 1970-01-01T00:00:00.123456Z.")
    assert(intercept[IllegalArgumentException](parse("1.5", IntegerType)).getMessage.contains("expected an integer"))
    assert(intercept[IllegalArgumentException](parse("yes", BooleanType)).getMessage.contains("expected true or false"))
  }
}
