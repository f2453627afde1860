package io.strata.log

/**
 * The latest snapshot of recently used tables, so that loading a table again reads only the commits that landed
 * since (one listing, the new commit files) instead of replaying checkpoint and log.
 */
private[log] object SnapshotCache extends LatestStateCache[Snapshot](_.version, _.segment.checkpointVersion)
