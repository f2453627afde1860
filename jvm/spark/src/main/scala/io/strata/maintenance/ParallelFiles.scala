package io.strata.maintenance

import java.io.{FileNotFoundException, IOException}

import io.strata.maintenance.ListedFile
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, FileSystem, Path}
import org.apache.spark.SparkContext
import org.apache.spark.sql.SparkSession
import org.apache.spark.util.SerializableConfiguration

import scala.collection.mutable
import scala.reflect.ClassTag

/**
 * Listing and deleting many files of one table with Spark jobs, so that a large table is not walked or cleaned one
 * file system call at a time on the driver. Hadoop FileSystem calls only (local, HDFS, S3A alike).
 */
object ParallelFiles {
  /** How a listing went: entries seen (files and empty directories), directories walked. */
  final case class ListingStats(entries: Long, directories: Long)

  /**
   * Walks the tree below `root`, skipping every name `hidden` rejects and, on the local file system, symbolic
   * links (never followed, never offered: they may lead outside the root). Each file and each empty directory is
   * given to `select`, which runs where it was listed; only what it returns travels to the driver. The root and up
   * to two levels below it are listed on the driver until there are enough directories to share out; each
   * directory left is then walked to its end by one task of a Spark job.
   */
  def list[T: ClassTag](spark: SparkSession, root: Path, conf: Configuration, hidden: String => Boolean,
                        select: ListedFile => Option[T], description: String): (Seq[T], ListingStats) = {
    val fs = root.getFileSystem(conf)
    val local = fs.getUri.getScheme == "file"
    val sc = spark.sparkContext
    val out = mutable.ArrayBuffer.empty[T]
    var entries = 0L
    var walked = 1L
    val top = root.toString
    var frontier = expand(fs, top, Seq(Dir(top, 0L)), hidden, local) { f => entries += 1; out ++= select(f) }
    var levels = 0
    val wanted = math.max(2, sc.defaultParallelism)
    while (frontier.nonEmpty && frontier.size < wanted && levels < 2) {
      walked += frontier.size
      frontier = expand(fs, top, frontier, hidden, local) { f => entries += 1; out ++= select(f) }
      levels += 1
    }
    if (frontier.nonEmpty) {
      val chosen = sc.broadcast(select)
      val hide = sc.broadcast(hidden)
      val hadoop = sc.broadcast(new SerializableConfiguration(conf))
      val slices = math.min(frontier.size, math.max(1, spark.conf.get(
        "spark.sql.sources.parallelPartitionDiscovery.parallelism", "10000").toInt))
      val results = describing(sc, description) {
        sc.parallelize(frontier, slices).mapPartitions { dirs =>
          val taskFs = new Path(top).getFileSystem(hadoop.value.value)
          val found = mutable.ArrayBuffer.empty[T]
          var n = 0L
          var d = 0L
          dirs.foreach { dir =>
            var pending = Seq(dir)
            while (pending.nonEmpty) {
              d += pending.size
              pending = expand(taskFs, top, pending, hide.value, local) { f => n += 1; found ++= chosen.value(f) }
            }
          }
          Iterator((found.toSeq, n, d))
        }.collect()
      }
      results.foreach { case (found, n, d) => out ++= found; entries += n; walked += d }
    }
    (out.toSeq, ListingStats(entries, walked))
  }

  /** A directory still to walk, with its modification time (reported if it turns out empty). */
  private final case class Dir(path: String, modificationTime: Long)

  /**
   * Lists `dirs` one level down: reports files and empty directories (except `root`, never reported), returns the
   * subdirectories to walk.
   */
  private def expand(fs: FileSystem, root: String, dirs: Seq[Dir], hidden: String => Boolean, local: Boolean)
                    (report: ListedFile => Unit): Seq[Dir] = {
    val next = mutable.ArrayBuffer.empty[Dir]
    dirs.foreach { dir =>
      val children: Array[FileStatus] = try fs.listStatus(new Path(dir.path)) catch {
        case _: FileNotFoundException => null // deleted meanwhile
      }
      if (children != null && children.isEmpty && dir.path != root) {
        report(ListedFile(dir.path, 0L, dir.modificationTime, isDirectory = true))
      }
      if (children != null) children.foreach { st =>
        val name = st.getPath.getName
        if (!hidden(name) && !(local && isSymlink(st.getPath))) {
          if (st.isDirectory) next += Dir(st.getPath.toString, st.getModificationTime)
          else report(ListedFile(st.getPath.toString, st.getLen, st.getModificationTime, isDirectory = false))
        }
      }
    }
    next.toSeq
  }

  private def isSymlink(p: Path): Boolean =
    try java.nio.file.Files.isSymbolicLink(java.nio.file.Paths.get(p.toUri)) catch { case _: Exception => true }

  /** What happened to one path given to [[delete]]. */
  sealed trait Outcome
  case object Deleted extends Outcome
  /** Not there any more (deleted by someone else, or by an earlier attempt of the same task). */
  case object Missing extends Outcome
  /** `allowed` rejected the path: not touched. */
  case object Refused extends Outcome
  final case class Failed(error: String) extends Outcome

  /**
   * Deletes `paths` (files, and directories that must be empty: never recursive) with a Spark job, each path
   * checked by `allowed` in the task right before its delete. Returns every path's outcome.
   */
  def delete(spark: SparkSession, root: Path, conf: Configuration, paths: Seq[String], allowed: String => Boolean,
             description: String): Seq[(String, Outcome)] = if (paths.isEmpty) Nil else {
    val sc = spark.sparkContext
    val hadoop = sc.broadcast(new SerializableConfiguration(conf))
    val check = allowed
    val slices = math.min(paths.size, math.max(1, sc.defaultParallelism * 4))
    describing(sc, description) {
      sc.parallelize(paths, slices).mapPartitions { it =>
        val fs = new Path(root.toString).getFileSystem(hadoop.value.value)
        it.map { p =>
          val outcome: Outcome =
            if (!check(p)) Refused
            else try { if (fs.delete(new Path(p), false)) Deleted else if (fs.exists(new Path(p))) Failed(
              "the file system did not delete it") else Missing } catch {
              case _: FileNotFoundException => Missing
              case e: IOException => Failed(e.toString)
            }
          p -> outcome
        }
      }.collect().toSeq
    }
  }

  private def describing[T](sc: SparkContext, description: String)(body: => T): T = {
    val before = sc.getLocalProperty("spark.job.description")
    sc.setJobDescription(description)
    try body finally sc.setLocalProperty("spark.job.description", before)
  }
}
