package io.strata.log

/**
 * The latest [[SnapshotHead]] of recently used tables: what [[SnapshotCache]] is to snapshots, for tables whose file
 * state is never built on the driver. Loading the head again then reads only the commits that landed since (their
 * non-file actions), not the checkpoint's columns again; a commit made over a head leaves the head after it here.
 */
private[log] object HeadCache extends LatestStateCache[SnapshotHead](_.version, _.segment.checkpointVersion)
