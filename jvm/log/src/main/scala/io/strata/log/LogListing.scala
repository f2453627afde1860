package io.strata.log

import org.apache.hadoop.fs.FileStatus

/** What `_delta_log` holds: commits and complete checkpoints by version (one listing of [[TableLog]]). */
private[log] final case class LogListing(commits: Map[Long, FileStatus], checkpoints: Map[Long, Seq[FileStatus]],
                                         v2Checkpoints: Set[Long], classified: Seq[(FileNames.LogFile, FileStatus)]) {
  def isEmpty: Boolean = commits.isEmpty && checkpoints.isEmpty
  def latest: Long = (commits.keys ++ checkpoints.keys).max

  /**
   * The oldest version this log can rebuild (version 0 when every commit is there, else the oldest complete
   * checkpoint followed by every commit up to the latest), None when it cannot rebuild even the latest one.
   */
  def oldestReconstructable: Option[Long] =
    if (isEmpty) None
    else {
      // The commits from `firstOfRun` to the latest are all there.
      var firstOfRun = latest + 1
      while (firstOfRun > 0 && commits.contains(firstOfRun - 1)) firstOfRun -= 1
      if (firstOfRun == 0) Some(0L) else checkpoints.keys.filter(_ >= firstOfRun - 1).minOption
    }
}
