package io.strata.read

import io.strata.SparkTestSession
import io.strata.log.{AddFile, DeletionVectorDescriptor, LogSegment, Metadata, Protocol, Snapshot}
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.types.Decimal
import org.scalatest.funsuite.AnyFunSuite

/**
 * The per-file rules of aggregates answered from the log, on statistics no writer at hand produces (tests/
 * test_log_aggregates.py compares whole queries with and without the push-down on tables real writers wrote):
 * tight bounds on a file with a deletion vector, decimal bounds written through a double, counts that do not fit.
 */
class LogAggregationSuite extends AnyFunSuite with SparkTestSession {
  private val schema = """{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},""" +
    """{"name":"dec","type":"decimal(10,2)","nullable":true,"metadata":{}},""" +
    """{"name":"p","type":"string","nullable":true,"metadata":{}}]}"""

  private def dv(cardinality: Long) = DeletionVectorDescriptor("i", "wi5b=000010000siXQKl0rr91000f", None, 40, cardinality)

  /** The answer over files of (stats, deleted rows), one partition `p=a`. */
  private def answer(files: Seq[(String, Long)], aggregates: LogAggregate*): Option[Seq[Any]] = {
    val adds = files.zipWithIndex.map { case ((stats, deleted), i) =>
      AddFile(s"p=a/f$i.parquet", Map("p" -> Some("a")), 10L, 0L, dataChange = true, Some(stats),
        deletionVector = if (deleted > 0) Some(dv(deleted)) else None)
    }
    val snapshot = Snapshot.of(new Path("file:/no/such/table"), 3L, LogSegment(3L, None, Nil, Nil, 0L),
      Protocol(3, 7, Some(Set("deletionVectors")), Some(Set("deletionVectors"))),
      Metadata(id = "t", schemaString = schema, partitionColumns = Seq("p")), adds)
    LogAggregation.answer(SnapshotReader.fileIndex(spark, snapshot), Nil, Nil, aggregates)
      .map(a => a.rows.head.toSeq(a.schema))
  }

  private val min = LogAggregate.Min("id")
  private val max = LogAggregate.Max("id")

  test("a file with a deletion vector: rows counted without the deleted ones, bounds only when declared tight") {
    val wide = """{"numRecords":5,"tightBounds":false,"minValues":{"id":1},"maxValues":{"id":9},"nullCount":{"id":0}}"""
    val tight = wide.replace("false", "true")
    assert(answer(Seq(wide -> 2L), LogAggregate.CountRows, LogAggregate.Count("id")) == Some(Seq(3L, 3L)))
    assert(answer(Seq(wide -> 2L), min).isEmpty)
    assert(answer(Seq(tight -> 2L), min, max) == Some(Seq(1L, 9L)))
    // Tight bounds, but some rows are null: whether a live row is not null is unknown.
    assert(answer(Seq(tight.replace("\"nullCount\":{\"id\":0}", "\"nullCount\":{\"id\":2}") -> 2L), min).isEmpty)
    // Absent tightBounds means tight only without a vector.
    assert(answer(Seq(wide.replace("\"tightBounds\":false,", "") -> 2L), min).isEmpty)
    assert(answer(Seq(wide.replace("\"tightBounds\":false,", "") -> 0L), min) == Some(Seq(1L)))
  }

  test("null counts: all-null files add no bound, a missing null count or bound means the data is read") {
    val allNull = """{"numRecords":4,"minValues":{},"maxValues":{},"nullCount":{"id":4}}"""
    val some = """{"numRecords":3,"minValues":{"id":-7},"maxValues":{"id":2},"nullCount":{"id":1}}"""
    assert(answer(Seq(allNull -> 0L, some -> 0L), LogAggregate.Count("id"), min, max) == Some(Seq(2L, -7L, 2L)))
    assert(answer(Seq(allNull -> 0L), min, LogAggregate.CountRows) == Some(Seq(null, 4L)))
    assert(answer(Seq("""{"numRecords":3,"nullCount":{"id":1}}""" -> 0L), min).isEmpty)
    assert(answer(Seq("""{"numRecords":3,"minValues":{"id":1},"maxValues":{"id":1}}""" -> 0L), min).isEmpty)
    assert(answer(Seq("""{"minValues":{"id":1}}""" -> 0L), LogAggregate.CountRows).isEmpty)
    assert(answer(Seq("""{"numRecords":2.5}""" -> 0L), LogAggregate.CountRows).isEmpty)
    assert(answer(Nil, LogAggregate.CountRows, min) == Some(Seq(0L, null)))
  }

  test("bounds that are not exact for the column are never used") {
    def dec(v: String) = s"""{"numRecords":1,"minValues":{"dec":$v},"maxValues":{"dec":$v},"nullCount":{"dec":0}}"""
    assert(answer(Seq(dec("1.5") -> 0L, dec("-3.25") -> 0L), LogAggregate.Min("dec"), LogAggregate.Max("dec")) ==
      Some(Seq(Decimal("-3.25"), Decimal("1.50"))))
    assert(answer(Seq(dec("1.005") -> 0L), LogAggregate.Min("dec")).isEmpty) // more digits than the scale
    assert(answer(Seq(dec("\"1.5\"") -> 0L), LogAggregate.Min("dec")).isEmpty) // not a number
    val huge = """{"numRecords":1,"minValues":{"id":99999999999999999999},"maxValues":{"id":1},"nullCount":{"id":0}}"""
    assert(answer(Seq(huge -> 0L), min).isEmpty) // beyond a long
  }

  test("count(*) takes numRecords only from whole statistics: broken JSON anywhere in them sends it to the data") {
    val ok = """{"numRecords":5,"minValues":{"id":1},"maxValues":{"id":9},"nullCount":{"id":0}}"""
    assert(answer(Seq(ok -> 0L, ok -> 2L), LogAggregate.CountRows, LogAggregate.Count("p")) == Some(Seq(8L, 8L)))
    Seq("""{"numRecords":5,"minValues":{"id":1},"maxValues":{"id":9""", """{"numRecords":5,"nullCount":{"id":0,"id":0}}""",
      """{"numRecords":5,"minValues":{"v":"a" "b"}}""", """{"numRecords":5,"maxValues":{"id":01}}""").foreach { broken =>
      assert(answer(Seq(ok -> 0L, broken -> 0L), LogAggregate.CountRows).isEmpty, broken)
      assert(answer(Seq(broken -> 0L, ok -> 0L), LogAggregate.Count("p"), LogAggregate.Max("p")).isEmpty, broken)
    }
    assert(answer(Seq(ok -> 6L), LogAggregate.CountRows).isEmpty) // a vector deleting more rows than the file holds
  }
}
