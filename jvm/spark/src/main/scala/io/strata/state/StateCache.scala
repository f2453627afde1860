package io.strata.state

import io.strata.log.{FileStamp, RecentlyUsed}
import org.apache.spark.SparkContext
import org.apache.spark.sql.DataFrame

/**
 * The reconciled live adds of the tables read lately through the distributed state, persisted (at
 * [[io.strata.config.ReadConf.stateStorageLevel]], on local disk by default) so that later queries on the same
 * version run no reconciliation job: one entry per table path (its latest version read), at most
 * [[StateCache.MaxTables]] tables, the least recently used unpersisted first. A newer version replaces the entry
 * (built from it when only commits separate them) and unpersists it.
 *
 * An entry is the state of one history of the table: it keeps the [[FileStamp]] of the commit file it was built up to,
 * and serves a query, or is brought forward, only while the log's commit of that version still has that stamp (the
 * version's head carries it from the listing it was read from; bringing forward probes it, one status call). A log
 * replaced under the path (a copy put back, an object-store rollback, the table created again) is rebuilt from the log.
 */
private[state] object StateCache {
  /** Tables whose state stays cached (each is a whole table state: a small number). */
  val MaxTables = 4
  /** Incremental updates stacked on one full build before a rebuild (each adds a step to the plan's lineage). */
  val MaxDepth = 16

  final case class Entry(context: SparkContext, tableId: String, version: Long, stamp: Option[FileStamp],
                         state: DataFrame, depth: Int)

  private val entries = new RecentlyUsed[String, Entry](MaxTables, unpersist)

  /**
   * The state of `table` at `version`, whose commit file has `stamp` (None: not known, so nothing is cached for it
   * nor built from a cache): the cached one when it is of that commit, else `build(previous, true)` (previous: the
   * cached entry of an older version of the table, to update from, when `probe` of its version still gives its stamp;
   * true: persisted and materialized), then cached. A version older than a cached one that is still in the log (time
   * travel) is built unpersisted and not cached (`build(None, false)`: the newer stays). One build at a time: a
   * concurrent query of the same version waits and then reuses it. `tableId`: the table's metadata id.
   */
  def stateOf(context: SparkContext, table: String, tableId: String, version: Long, stamp: Option[FileStamp],
              probe: Long => Option[FileStamp])(build: (Option[Entry], Boolean) => Entry): DataFrame =
    synchronized {
      // Another table at the same path (dropped and created again) or another Spark application: not this one.
      val cached = entries.get(table).filter(e => (e.context eq context) && !context.isStopped &&
        e.tableId == tableId)
      def stillInLog(e: Entry) = e.stamp.exists(s => probe(e.version).exists(_.sameFile(s)))
      cached match {
        case _ if stamp.isEmpty => build(None, false).state
        case Some(e) if e.version == version && FileStamp.same(e.stamp, stamp) => e.state
        case Some(e) if e.version > version && stillInLog(e) => build(None, false).state
        case _ =>
          val fresh = build(cached.filter(e => e.version < version && stillInLog(e)), true)
          entries.put(table, fresh).foreach(unpersist)
          fresh.state
      }
    }

  private def unpersist(e: Entry): Unit = if (!e.context.isStopped) e.state.unpersist(blocking = false)

  /** Drops every entry (tests). */
  def clear(): Unit = synchronized {
    entries.clear().foreach(unpersist)
  }
}
