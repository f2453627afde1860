package io.strata.procedures

import io.strata.dml.DmlTestSupport
import org.apache.spark.sql.Row
import org.scalatest.funsuite.AnyFunSuite

/** CALL plumbing: argument forms, table forms (catalog name, session-catalog name, path) and bad input. */
class ProcedureCallSuite extends AnyFunSuite with DmlTestSupport {
  private def versions(call: String): Seq[Long] = spark.sql(call).collect().map(_.getLong(0)).toSeq

  test("history takes the table as a strata name, a path, a quoted path and a session-catalog name") {
    val t = freshTable("proc", "(id INT) USING strata")
    spark.sql(s"INSERT INTO $t VALUES (1)")
    spark.sql(s"INSERT INTO $t VALUES (2)")
    val path = location(t)
    assert(versions(s"CALL strata.system.history('$t')") == Seq(2L, 1L, 0L))
    assert(versions(s"CALL strata.system.history(table => '$t', limit => 1)") == Seq(2L))
    assert(versions(s"CALL strata.system.history(limit => 2, table => '$path')") == Seq(2L, 1L))
    assert(versions(s"CALL strata.system.history('`$path`', 1)") == Seq(2L))
    assert(versions(s"CALL strata.system.history('strata.`$path`', 1)") == Seq(2L))
    spark.sql("CREATE DATABASE IF NOT EXISTS procdb")
    spark.sql("DROP TABLE IF EXISTS procdb.s")
    spark.sql("CREATE TABLE procdb.s (id INT) USING strata")
    spark.sql("INSERT INTO procdb.s VALUES (7)")
    assert(versions("CALL strata.system.history(table => 'spark_catalog.procdb.s')") == Seq(1L, 0L))
    val ops = spark.sql(s"CALL strata.system.history('$t')").collect().map(_.getAs[String]("operation")).toSeq
    assert(ops.head == "WRITE" && ops.last == "CREATE TABLE", ops)
  }

  test("detail describes the table") {
    val t = freshTable("proc", "(id INT, p STRING) USING strata PARTITIONED BY (p)")
    spark.sql(s"INSERT INTO $t VALUES (1, 'a'), (2, 'b')")
    val d = spark.sql(s"CALL strata.system.detail(table => '$t')").head()
    assert(d.getAs[String]("format") == "delta")
    assert(d.getAs[Long]("numFiles") == 2L && d.getAs[Long]("version") == 1L)
    assert(d.getList[String](d.fieldIndex("partitionColumns")).toArray.toSeq == Seq("p"))
    assert(d.getAs[String]("location") == location(t))
  }

  test("bad input names what is wrong") {
    val t = freshTable("proc", "(id INT) USING strata")
    val noTable = intercept[Exception](spark.sql("CALL strata.system.history('/nonexistent/strata/table')").collect())
    assert(causes(noTable).exists(_.getMessage.contains("No Strata/Delta table at")), noTable)
    val badLimit = intercept[Exception](spark.sql(s"CALL strata.system.history('$t', 0)").collect())
    assert(causes(badLimit).exists(_.getMessage.contains("argument limit is 0")), badLimit)
    val unknown = intercept[Exception](spark.sql(s"CALL strata.system.compactify('$t')").collect())
    assert(causes(unknown).exists(_.getMessage.contains("Strata's procedures are")), unknown)
    val unknownArg = intercept[Exception](spark.sql(s"CALL strata.system.history(table => '$t', limt => 1)"))
    assert(unknownArg.getMessage.contains("UNRECOGNIZED_PARAMETER_NAME"), unknownArg)
    spark.sql("CREATE DATABASE IF NOT EXISTS procdb")
    spark.sql("DROP TABLE IF EXISTS procdb.plain")
    spark.sql("CREATE TABLE procdb.plain (id INT) USING parquet")
    val plain = intercept[Exception](spark.sql("CALL strata.system.detail('spark_catalog.procdb.plain')").collect())
    assert(causes(plain).exists(_.getMessage.contains("is not a Strata or Delta table")), plain)
  }

  test("bad input reaches the caller with a condition and SQLSTATE (no bare IllegalArgumentException)") {
    val t = freshTable("proc", "(id INT) USING strata")
    def condition(e: Throwable): Option[(String, String)] = causes(e).collectFirst {
      case s: org.apache.spark.SparkThrowable if Option(s.getCondition).exists(_.startsWith("STRATA_")) =>
        s.getCondition -> s.getSqlState
    }
    def refused(sql: String): Option[(String, String)] = condition(intercept[Exception](spark.sql(sql).collect()))
    assert(refused(s"CALL strata.system.history('$t', 0)") == Some("STRATA_INVALID_PROCEDURE_ARGUMENT" -> "22023"))
    assert(refused(s"CALL strata.system.compactify('$t')") == Some("STRATA_PROCEDURE_NOT_FOUND" -> "42883"))
    assert(refused(s"CALL strata.system.restore('$t')") == Some("STRATA_CONFLICTING_OPTIONS" -> "42613"))
    assert(refused("CALL strata.system.history('a..b')") == Some("STRATA_INVALID_TABLE_NAME" -> "42602"))
    spark.sql("CREATE DATABASE IF NOT EXISTS procdb")
    spark.sql("CREATE TABLE IF NOT EXISTS procdb.plain_pq (id INT) USING parquet")
    assert(refused("CALL strata.system.detail('spark_catalog.procdb.plain_pq')") ==
      Some("STRATA_NOT_A_DELTA_TABLE" -> "42809"))
    assert(refused(s"SELECT * FROM $t VERSION AS OF 'x'") == Some("STRATA_INVALID_OPTION_VALUE" -> "42616"))
    assert(refused("CREATE TABLE strata.proc.pq (id INT) USING parquet") ==
      Some("STRATA_UNSUPPORTED_PROVIDER" -> "0A000"))
    assert(refused("CREATE TABLE strata.proc.bk (id INT) USING strata PARTITIONED BY (bucket(4, id))") ==
      Some("STRATA_INVALID_PARTITIONING" -> "42000"))
  }

  test("SHOW PROCEDURES lists the system procedures") {
    val names = spark.sql("SHOW PROCEDURES IN strata.system").collect().map(_.getAs[String]("procedure_name")).toSet
    assert(Set("history", "detail").subsetOf(names), names)
  }
}
