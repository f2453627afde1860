package io.strata.testkit

import java.net.URI

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{AbstractFileSystem, FilterFs, Path}

/**
 * Hadoop's local file system as FileContext serves it (the class Hadoop picks by `fs.AbstractFileSystem.file.impl`:
 * Hadoop's own LocalFs, wrapped) with the pause point [[PausePoint.AfterCommit]]: Spark records that a streaming
 * micro-batch is done by a FileContext rename of its file `<checkpoint>/commits/<batch>` into place, and the driver
 * stops right before it. Plugged in only by tests (`spark.hadoop.fs.AbstractFileSystem.file.impl`, pytest's child
 * drivers); with no pause point configured, exactly LocalFs.
 */
class PausingLocalFs(uri: URI, conf: Configuration) extends FilterFs(PausingLocalFs.localFs(uri, conf)) {
  private val pause = PausePoint.configured(conf)

  override def renameInternal(src: Path, dst: Path): Unit = {
    pause.foreach(_.beforeRename(dst))
    super.renameInternal(src, dst)
  }

  override def renameInternal(src: Path, dst: Path, overwrite: Boolean): Unit = {
    pause.foreach(_.beforeRename(dst))
    super.renameInternal(src, dst, overwrite)
  }
}

object PausingLocalFs {
  /** The Hadoop setting that plugs it in for `file` paths reached through FileContext. */
  val Setting: (String, String) = "fs.AbstractFileSystem.file.impl" -> classOf[PausingLocalFs].getName

  private def localFs(uri: URI, conf: Configuration): AbstractFileSystem = {
    val plain = new Configuration(conf)
    plain.set(Setting._1, "org.apache.hadoop.fs.local.LocalFs")
    AbstractFileSystem.createFileSystem(uri, plain)
  }
}
