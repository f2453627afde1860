package io.strata.s3

import java.io.{IOException, OutputStream}
import java.util.concurrent.atomic.AtomicInteger

import scala.language.existentials

import io.strata.log.{LogStore, S3LogStore}
import org.apache.hadoop.fs.{CreateFlag, FSDataOutputStream, FSDataOutputStreamBuilder, FileSystem, FilterFileSystem, Path}

/**
 * Faults at the point S3A answers a PUT (the close of the stream), on top of the real S3A client and server:
 * `conflicts` PUTs fail with a 409 ConditionalRequestConflict before reaching the server; `lostAnswers` PUTs reach
 * the server and land, then fail as if the answer had been lost. Chosen for tables with
 * `strata.logStore.s3a.impl=io.strata.s3.FaultInjectingS3LogStore`.
 */
object S3Faults {
  val conflicts = new AtomicInteger()
  val lostAnswers = new AtomicInteger()
  /** Conditional PUTs attempted (each reaching the server or failing with an injected 409). */
  val conditionalPuts = new AtomicInteger()
  def reset(): Unit = { conflicts.set(0); lostAnswers.set(0); conditionalPuts.set(0) }

  private def take(counter: AtomicInteger): Boolean = counter.getAndUpdate(n => math.max(0, n - 1)) > 0

  /** The file system S3LogStore sees: S3A, with the stream of each conditional create wrapped. */
  final class FaultyFs(inner: FileSystem) extends FilterFileSystem(inner) {
    override def createFile(path: Path): FSDataOutputStreamBuilder[S, B] forSome {
      type S <: FSDataOutputStream; type B <: FSDataOutputStreamBuilder[S, B] } = new FaultyBuilder(this, inner, path)
  }

  final class FaultyBuilder(outer: FileSystem, inner: FileSystem, path: Path)
      extends FSDataOutputStreamBuilder[FSDataOutputStream, FaultyBuilder](outer, path) {
    override def getThisBuilder: FaultyBuilder = this

    override def build(): FSDataOutputStream = {
      val overwrite = getFlags.contains(CreateFlag.OVERWRITE)
      val conditional = getMandatoryKeys.contains(S3LogStore.ConditionalOverwrite)
      val real =
        if (conditional) inner.createFile(path).overwrite(overwrite).must(S3LogStore.ConditionalOverwrite, true).build()
        else inner.createFile(path).overwrite(overwrite).build()
      if (!conditional) real
      else new FSDataOutputStream(new OutputStream {
        override def write(b: Int): Unit = real.write(b)
        override def write(b: Array[Byte], off: Int, len: Int): Unit = real.write(b, off, len)
        override def close(): Unit = {
          conditionalPuts.incrementAndGet()
          if (take(conflicts)) {
            real.abort()
            throw new IOException(s"Writing Object on $path: S3Exception: The conditional request cannot succeed " +
              "due to a conflicting operation against this resource. (Service: S3, Status Code: 409):" +
              "ConditionalRequestConflict")
          }
          real.close()
          if (take(lostAnswers)) throw new IOException(s"Writing Object on $path: injected: the PUT landed, its answer was lost")
        }
      }, null)
    }
  }
}

/** [[S3LogStore]] over [[S3Faults.FaultyFs]]. */
final class FaultInjectingS3LogStore(val fs: FileSystem) extends LogStore {
  private val store = new S3LogStore(new S3Faults.FaultyFs(fs))
  override def putIfAbsent(path: Path, lines: Seq[String]): Unit = store.putIfAbsent(path, lines)
  override def overwrite(path: Path, lines: Seq[String]): Unit = store.overwrite(path, lines)
  override def writeCheckpoint(path: Path, actions: Iterator[io.strata.log.Action]): Long = store.writeCheckpoint(path, actions)
}
