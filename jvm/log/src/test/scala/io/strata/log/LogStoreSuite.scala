package io.strata.log

import java.net.URI
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path => JPath}
import java.util.concurrent.{ConcurrentLinkedQueue, CyclicBarrier, Executors, TimeUnit}

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileAlreadyExistsException, FileSystem, Path, RawLocalFileSystem}
import org.scalatest.funsuite.AnyFunSuite

import scala.jdk.CollectionConverters._

/** A local file system that reports its own scheme, "honestfake", the way a real non-local file system would. */
class HonestFakeFileSystem extends RawLocalFileSystem {
  override def getUri: URI = URI.create("honestfake:///")
  override def getScheme: String = "honestfake"
}

class LogStoreSuite extends AnyFunSuite with LogTestSupport {

  private def localFs(): FileSystem = FileSystem.getLocal(newConf())

  private def namesIn(dir: JPath): Seq[String] = {
    val s = Files.list(dir)
    try s.iterator.asScala.map(_.getFileName.toString).toSeq.sorted finally s.close()
  }

  private def content(p: JPath): String = new String(Files.readAllBytes(p), UTF_8)

  Seq[(String, FileSystem => LogStore)](
    "LocalLogStore" -> (fs => new LocalLogStore(fs)),
    "HdfsLogStore (on the local file system)" -> (fs => new HdfsLogStore(fs))
  ).foreach { case (label, mk) =>
    test(s"$label: putIfAbsent twice on the same path: the second fails, the first content is intact") {
      val dir = tempDir("store")
      val store = mk(localFs())
      val p = new Path(hpath(dir), "_delta_log/00000000000000000000.json")
      store.putIfAbsent(p, Seq("""{"first":1}""", """{"second":2}"""))
      val target = dir.resolve("_delta_log").resolve("00000000000000000000.json")
      assert(content(target) == "{\"first\":1}\n{\"second\":2}\n")
      val e = intercept[FileAlreadyExistsException](store.putIfAbsent(p, Seq("""{"other":3}""")))
      assert(e.getMessage.contains("00000000000000000000.json"))
      assert(content(target) == "{\"first\":1}\n{\"second\":2}\n")
      assert(store.read(p) == Seq("""{"first":1}""", """{"second":2}"""))
      assert(namesIn(dir.resolve("_delta_log")).filterNot(_.endsWith(".crc")) == Seq("00000000000000000000.json"),
        "no temporary file is left behind")
      assert(!namesIn(dir.resolve("_delta_log")).exists(_.contains(".tmp")))
    }
  }

  test("LocalLogStore: many threads racing putIfAbsent on the same name: exactly one wins, no temp files left") {
    val dir = tempDir("store-race")
    val store = new LocalLogStore(localFs())
    val threads = 12
    val pool = Executors.newFixedThreadPool(threads)
    try {
      (0 until 25).foreach { round =>
        val p = new Path(hpath(dir), f"$round%020d.json")
        val barrier = new CyclicBarrier(threads)
        val wins = new ConcurrentLinkedQueue[Int]()
        val lost = new ConcurrentLinkedQueue[Int]()
        val other = new ConcurrentLinkedQueue[Throwable]()
        val futures = (0 until threads).map { t =>
          pool.submit(new Runnable {
            def run(): Unit = {
              barrier.await(30, TimeUnit.SECONDS)
              try { store.putIfAbsent(p, Seq(s"""{"writer":$t}""", "x" * (t * 1000))); wins.add(t) }
              catch {
                case _: FileAlreadyExistsException => lost.add(t)
                case e: Throwable => other.add(e)
              }
            }
          })
        }
        futures.foreach(_.get(60, TimeUnit.SECONDS))
        assert(other.isEmpty, other.asScala.mkString("; "))
        assert(wins.size == 1, s"round $round: winners ${wins.asScala}")
        assert(lost.size == threads - 1)
        val w = wins.peek()
        assert(store.read(p) == Seq(s"""{"writer":$w}""", "x" * (w * 1000)).filter(_.nonEmpty),
          "the file holds the winner's whole content")
      }
    } finally pool.shutdownNow()
    assert(namesIn(dir) == (0 until 25).map(r => f"$r%020d.json"), "no temporary files are left in the directory")
  }

  test("overwrite and writeCheckpoint leave no temporary files") {
    val dir = tempDir("store-overwrite")
    val store = new LocalLogStore(localFs())
    val hint = new Path(hpath(dir), "_last_checkpoint")
    store.overwrite(hint, Seq("""{"version":1}"""))
    store.overwrite(hint, Seq("""{"version":2}"""))
    assert(store.read(hint) == Seq("""{"version":2}"""))
    val cp = new Path(hpath(dir), "00000000000000000002.checkpoint.parquet")
    val size = store.writeCheckpoint(cp, Iterator(Protocol(1, 2), Metadata(id = "x", schemaString = "{}")))
    assert(size == Files.size(dir.resolve("00000000000000000002.checkpoint.parquet")))
    assert(store.readCheckpoint(cp).toSeq == Seq(Protocol(1, 2), Metadata(id = "x", schemaString = "{}")))
    assert(!namesIn(dir).exists(_.contains(".tmp")), namesIn(dir).toString)
    assert(store.list(new Path(hpath(dir), "does-not-exist")).isEmpty)
  }

  test("local paths get LocalLogStore, hdfs-like stores can be chosen by configuration") {
    val dir = tempDir()
    assert(LogStore.forPath(hpath(dir), newConf()).isInstanceOf[LocalLogStore])
    val conf = newConf()
    conf.set("spark.hadoop." + LogStore.implKey("file"), classOf[HdfsLogStore].getName)
    assert(LogStore.forPath(hpath(dir), conf).isInstanceOf[HdfsLogStore])
  }

  test("a log store class that cannot be used is refused naming the class and the key") {
    val conf = newConf()
    conf.set(LogStore.implKey("file"), "io.strata.log.NoSuchStore")
    val e = intercept[UnsafeLogStoreException](LogStore.forPath(hpath(tempDir()), conf))
    assert(e.getMessage.contains("io.strata.log.NoSuchStore") && e.getMessage.contains("strata.logStore.file.impl"))
    conf.set(LogStore.implKey("file"), "java.lang.String")
    assert(intercept[UnsafeLogStoreException](LogStore.forPath(hpath(tempDir()), conf)).getMessage.contains("java.lang.String"))
  }

  private def fakeConf(scheme: String, impl: Class[_]): Configuration = {
    val conf = newConf()
    conf.set(s"fs.$scheme.impl", impl.getName)
    conf.setBoolean(s"fs.$scheme.impl.disable.cache", true)
    conf
  }

  // A registered fake scheme stands in for "a file system Strata knows nothing about" (S3 has its own store:
  // io.strata.s3.S3LogStoreSuite).
  test("an unknown scheme (reported by its file system) is refused before any I/O, naming scheme and key") {
    val conf = fakeConf("honestfake", classOf[HonestFakeFileSystem])
    val path = new Path(s"honestfake://${tempDir().toUri.getPath}table")
    val e = intercept[UnsafeLogStoreException](LogStore.forPath(path, conf))
    assert(e.getMessage.contains("'honestfake'"), e.getMessage)
    assert(e.getMessage.contains("strata.logStore.honestfake.impl"), e.getMessage)
    conf.set(LogStore.implKey("honestfake"), "io.strata.log.HdfsLogStore")
    assert(LogStore.forPath(path, conf).isInstanceOf[HdfsLogStore])
  }

  test("an unknown scheme is refused even when its file system is a local one underneath (fs.fake.impl)") {
    val root = tempDir()
    val conf = fakeConf("fake", classOf[RawLocalFileSystem])
    val path = new Path(s"fake://${root.toUri.getPath}table")
    val e = intercept[UnsafeLogStoreException](LogStore.forPath(path, conf))
    assert(e.getMessage.contains("'fake'"), e.getMessage)
    assert(e.getMessage.contains("strata.logStore.fake.impl"), e.getMessage)
    assert(namesIn(root).isEmpty, "nothing was written")
    conf.set(LogStore.implKey("fake"), "io.strata.log.HdfsLogStore")
    assert(LogStore.forPath(path, conf).isInstanceOf[HdfsLogStore])
  }

  // No GCS or Azure connector is on the test class path: the refusal must not depend on one.
  Seq(
    "gs" -> Seq("Google Cloud Storage", "ifGenerationMatch=0"),
    "abfs" -> Seq("Azure Data Lake Storage", "creates the file empty", "hierarchical namespace"),
    "abfss" -> Seq("Azure Data Lake Storage", "creates the file empty"),
    "wasb" -> Seq("WASB connector", "checks, then writes", "copies, then deletes"),
    "wasbs" -> Seq("WASB connector", "atomic rename")
  ).foreach { case (scheme, says) =>
    test(s"$scheme:// is refused naming what a safe commit there needs and the key for a store of one's own") {
      val path = new Path(s"$scheme://container@account/warehouse/t")
      val e = intercept[UnsafeLogStoreException](LogStore.forPath(path, newConf()))
      assert(e.getCondition == "STRATA_UNSAFE_LOG_STORE", e.getMessage)
      assert(e.messageText.startsWith(s"Strata cannot commit safely to $path: "), e.getMessage)
      says.foreach(s => assert(e.getMessage.contains(s), s"'$s' in: ${e.getMessage}"))
      assert(e.getMessage.contains(s"set spark.hadoop.strata.logStore.$scheme.impl to a LogStore class"), e.getMessage)
      assert(!e.getMessage.contains("'file', 'hdfs'"), "not the generic unknown-scheme message")
    }
  }

  test("a log store configured for gs:// is used: the refusal is only for the built-in choice") {
    val root = tempDir()
    val conf = fakeConf("gs", classOf[RawLocalFileSystem]) // a local file system stands in for the GCS connector
    conf.set("spark.hadoop." + LogStore.implKey("gs"), classOf[HdfsLogStore].getName)
    assert(LogStore.forPath(new Path(s"gs://${root.toUri.getPath}t"), conf).isInstanceOf[HdfsLogStore])
  }
}
