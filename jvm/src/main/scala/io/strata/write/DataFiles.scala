package io.strata.write

import io.strata.log.AddFile
import io.strata.table.PartitionPaths
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

/** What both write paths do with a finished data file (named by [[JobFiles]]): turn it into an add action. */
object DataFiles {
  /**
   * The add action of a finished file at `relative` (unencoded, under `tableRoot`), with statistics from its Parquet
   * footer. A file without rows (Spark writes one for empty input) is deleted and gives None.
   */
  def finish(tableRoot: String, relative: String, partitionValues: Map[String, Option[String]],
             conf: Configuration, numIndexedCols: Int): Option[AddFile] = {
    val path = new Path(tableRoot, relative)
    val fs = path.getFileSystem(conf)
    val stats = DataFileStats.read(path, conf, numIndexedCols)
    if (stats.numRecords == 0) { fs.delete(path, false); None }
    else {
      val status = fs.getFileStatus(path)
      Some(AddFile(PartitionPaths.encode(relative), partitionValues, status.getLen, status.getModificationTime,
        dataChange = true, stats = Some(stats.json)))
    }
  }
}
