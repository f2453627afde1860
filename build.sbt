// Strata: transactional Delta-protocol table writes for Spark 4.1.1.
// Two JVM modules: jvm/log, the Delta log core (no Spark on its class path), and jvm/spark, the Spark connector that
// depends on it. The connector's jar carries both (one jar); the Python package in python/ ships it.
// jvm/testkit holds test-support classes only (fault-injecting log stores), never shipped: see `testkit` below.

lazy val sparkVersion = "4.1.1"
// S3 tests only: the hadoop-aws of Spark 4.1.1's Hadoop and the slim AWS SDK v2 modules S3A uses, instead of the
// 600 MB SDK bundle hadoop-aws declares. Never in the connector jar (users add hadoop-aws the standard way).
lazy val hadoopVersion = "3.4.2"
lazy val awsSdkVersion = "2.29.52"

ThisBuild / scalaVersion := "2.13.17"
ThisBuild / organization := "io.strata"
ThisBuild / version := IO.read(file("VERSION")).trim

// Spark 4.1 on Java 17 needs these opens for its unsafe and reflection-based internals.
lazy val sparkJavaOpens = Seq(
  "java.base/java.lang", "java.base/java.lang.invoke", "java.base/java.lang.reflect", "java.base/java.io",
  "java.base/java.net", "java.base/java.nio", "java.base/java.util", "java.base/java.util.concurrent",
  "java.base/java.util.concurrent.atomic", "java.base/jdk.internal.ref", "java.base/sun.nio.ch",
  "java.base/sun.nio.cs", "java.base/sun.security.action", "java.base/sun.util.calendar"
).map(p => s"--add-opens=$p=ALL-UNNAMED") :+ "-Djdk.reflect.useDirectMethodHandle=false"

lazy val root = (project in file("."))
  .aggregate(log, spark, testkit)
  .settings(publish / skip := true)

// The versions Spark 4.1.1 ships (all Provided: at run time they come from Spark's distribution).
lazy val logDependencies = Seq(
  "org.apache.hadoop" % "hadoop-client-api" % "3.4.2",
  "org.apache.hadoop" % "hadoop-client-runtime" % "3.4.2",
  "com.fasterxml.jackson.core" % "jackson-databind" % "2.20.0",
  "org.roaringbitmap" % "RoaringBitmap" % "1.3.0",
  "org.apache.parquet" % "parquet-hadoop" % "1.16.0",
  "org.slf4j" % "slf4j-api" % "2.0.17")

/** The Delta log core: actions, replay, checkpoints, commits and conflict rules, log stores, deletion vectors. */
lazy val log = (project in file("jvm/log"))
  .settings(
    name := "strata-log",
    libraryDependencies ++= logDependencies.map(_ % Provided) ++ Seq("org.scalatest" %% "scalatest" % "3.2.19" % Test),
    scalacOptions ++= Seq("-release", "17", "-deprecation", "-feature", "-Wunused:imports"),
    javacOptions ++= Seq("--release", "17"),
    // Its tests run alone (`log/test`) on this class path, which has no Spark: a Spark reference fails to compile.
    Test / fork := true,
    Test / javaOptions ++= Seq("-Xmx2g", "-Xss4m", "-XX:+UseParallelGC"),
    Test / parallelExecution := false,
    Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oDF"),
    // The test-support sources (jvm/testkit) are compiled into the log core's tests too: its suites, and through
    // them the connector's, plug the fault-injecting log store in. (A project dependency on testkit would be a cycle.)
    Test / unmanagedSourceDirectories += (ThisBuild / baseDirectory).value / "jvm/testkit/src/main/scala"
  )

/**
 * Test support that a test plugs into a Strata process through its configuration (a LogStore class set by
 * `strata.logStore.<scheme>.impl`), so that the production classes carry no test hooks. Its jar
 * (build/strata-testkit.jar, `make testkit`) goes onto the class path of the child drivers pytest starts (beside the
 * connector's jar); it is never part of the connector's jar or the wheel. Everything it uses comes from that jar and
 * Spark's distribution at run time (Provided).
 */
lazy val testkit = (project in file("jvm/testkit"))
  .dependsOn(log % Provided)
  .settings(
    name := "strata-testkit",
    libraryDependencies ++= logDependencies.map(_ % Provided),
    scalacOptions ++= Seq("-release", "17", "-deprecation", "-feature", "-Wunused:imports"),
    javacOptions ++= Seq("--release", "17"),
    publish / skip := true
  )

lazy val spark = (project in file("jvm/spark"))
  // The connector's tests also use the log core's test helpers (LogTestSupport, ChildJvm, ThreadRace, ...).
  .dependsOn(log % "compile->compile;test->test")
  .settings(
    name := "strata-spark",
    // One jar: the log core's classes go into the connector's.
    Compile / packageBin / mappings ++= (log / Compile / packageBin / mappings).value,
    libraryDependencies ++= Seq(
      // Everything at run time comes from Spark's own distribution: the jar stays thin.
      "org.apache.spark" %% "spark-sql" % sparkVersion % Provided,
      "org.scalatest" %% "scalatest" % "3.2.19" % Test,
      ("org.apache.hadoop" % "hadoop-aws" % hadoopVersion % Test).excludeAll(
        ExclusionRule("software.amazon.awssdk", "bundle"), ExclusionRule("org.wildfly.openssl")),
      "software.amazon.awssdk" % "s3" % awsSdkVersion % Test,
      "software.amazon.awssdk" % "s3-transfer-manager" % awsSdkVersion % Test
    ),
    scalacOptions ++= Seq("-release", "17", "-deprecation", "-feature", "-Wunused:imports"),
    javacOptions ++= Seq("--release", "17"),
    Compile / packageBin / packageOptions +=
      Package.ManifestAttributes("Implementation-Title" -> "strata-spark", "Implementation-Version" -> version.value),
    // Let the code know its own version (checked against the Python package at session set-up).
    Compile / resourceGenerators += Def.task {
      val out = (Compile / resourceManaged).value / "io" / "strata" / "strata-version.properties"
      IO.write(out, s"version=${version.value}\n")
      Seq(out)
    }.taskValue,
    Test / fork := true,
    Test / javaOptions ++= sparkJavaOpens ++ Seq("-Xmx3g", "-Xss4m", "-XX:+UseParallelGC"),
    Test / parallelExecution := false,
    Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oDF"),
    // The tests start child JVMs with the same class path and flags.
    Test / envVars := Map("STRATA_TEST_JAVA_OPTS" -> sparkJavaOpens.mkString(" "),
      // A local S3 server for the S3 tests (fetched by `make s3-test-jars`).
      "STRATA_S3PROXY_JAR" -> ((ThisBuild / baseDirectory).value / "build/s3proxy/s3proxy-4.0.0-jar-with-dependencies.jar").getPath)
  )
