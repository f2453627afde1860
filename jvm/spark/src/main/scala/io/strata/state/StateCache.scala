package io.strata.state

import io.strata.log.RecentlyUsed
import org.apache.spark.SparkContext
import org.apache.spark.sql.DataFrame

/**
 * The reconciled live adds of the tables read lately through the distributed state, persisted (at
 * [[io.strata.config.ReadConf.stateStorageLevel]], on local disk by default) so that later queries on the same
 * version run no reconciliation job: one entry per table path (its latest version read), at most
 * [[StateCache.MaxTables]] tables, the least recently used unpersisted first. A newer version replaces the entry
 * (built from it when only commits separate them) and unpersists it.
 */
private[state] object StateCache {
  /** Tables whose state stays cached (each is a whole table state: a small number). */
  val MaxTables = 4
  /** Incremental updates stacked on one full build before a rebuild (each adds a step to the plan's lineage). */
  val MaxDepth = 16

  final case class Entry(context: SparkContext, tableId: String, version: Long, state: DataFrame, depth: Int)

  private val entries = new RecentlyUsed[String, Entry](MaxTables, unpersist)

  /**
   * The state of `table` at `version`: the cached one, or `build(previous, true)` (previous: the cached entry of an
   * older version of the table, to update from; true: persisted and materialized), then cached. A version older than
   * the cached one is built unpersisted and not cached (`build(None, false)`: the newer stays). One build at a time:
   * a concurrent query of the same version waits and then reuses it. `tableId`: the table's metadata id, so that a
   * table created again at the path never reads the state of the one before.
   */
  def stateOf(context: SparkContext, table: String, tableId: String, version: Long)(
      build: (Option[Entry], Boolean) => Entry): DataFrame =
    synchronized {
      // Another table at the same path (dropped and created again) or another Spark application: not this one.
      val cached = entries.get(table).filter(e => (e.context eq context) && !context.isStopped &&
        e.tableId == tableId)
      cached match {
        case Some(e) if e.version == version => e.state
        case Some(e) if e.version > version => build(None, false).state
        case _ =>
          val fresh = build(cached, true)
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
