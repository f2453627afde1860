package io.strata.write

import io.strata.log.{InvalidTableOperationException, TableLog}
import org.apache.hadoop.fs.Path

/** A new table must not be created over files that are not part of any table: they would silently mix. */
object ForeignFiles {
  /** Fails when the table's location holds visible files although it has no log. */
  def refuse(log: TableLog): Unit = {
    val fs = log.tablePath.getFileSystem(log.conf)
    if (fs.exists(log.tablePath)) {
      val visible = fs.listStatus(log.tablePath).map(_.getPath.getName)
        .filterNot(n => n.startsWith("_") || n.startsWith("."))
      if (visible.nonEmpty) throw InvalidTableOperationException("STRATA_NOT_A_TABLE_LOCATION",
        s"${log.tablePath} holds files (${visible.take(3).mkString(", ")}${if (visible.length > 3) ", ..." else ""}) " +
          "but no Strata/Delta log. Write to an empty or new location.")
    }
  }

  /**
   * Like [[refuse]], but for a write that may follow an earlier attempt of itself which died before creating the
   * table: files for which `ours` holds (by name, in any directory) are that attempt's, not foreign.
   */
  def refuse(log: TableLog, ours: String => Boolean): Unit = {
    val fs = log.tablePath.getFileSystem(log.conf)
    def foreign(dir: Path): Option[String] = fs.listStatus(dir).iterator
      .filterNot(st => st.getPath.getName.startsWith("_") || st.getPath.getName.startsWith("."))
      .map(st => if (st.isDirectory) foreign(st.getPath) else Some(st.getPath.getName).filterNot(ours))
      .collectFirst { case Some(name) => name }
    if (fs.exists(log.tablePath)) foreign(log.tablePath).foreach { name =>
      throw InvalidTableOperationException("STRATA_NOT_A_TABLE_LOCATION",
        s"${log.tablePath} holds files ($name) but no Strata/Delta log. " +
        "Write to an empty or new location.")
    }
  }
}
