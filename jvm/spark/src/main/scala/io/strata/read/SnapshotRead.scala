package io.strata.read

import org.apache.hadoop.fs.Path

/**
 * A read of one version of a table that a query plan carries (the V1 file index, the V2 table). A write whose input
 * plan holds one for its own table validates from that version (read-then-write isolation). `timeTravel`: the user
 * asked for that version explicitly (versionAsOf, VERSION AS OF, ...), so the write deliberately builds on it.
 */
trait SnapshotRead {
  def readTablePath: Path
  def readVersion: Long
  def timeTravel: Boolean
}
