package io.strata

import io.strata.read.PruneLogFileIndex
import org.apache.spark.sql.SparkSessionExtensions

/**
 * Strata's session extension: `spark.sql.extensions=io.strata.StrataSessionExtensions` (`strata.configure_spark` sets
 * it). Its optimizer rules plan path reads (`format("strata").load(path)`, Spark's V1 file relation) from the log as
 * catalog reads (V2) are planned by their scan builder. Everything reads and writes correctly without it; it only
 * changes how much of a plan the log answers. Each rule lives in the package of the plans it rewrites. Its parser
 * adds delta-spark's `OPTIMIZE t [FULL] [WHERE ...] [ZORDER BY (...)]` ([[StrataSqlParser]]).
 */
class StrataSessionExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    // Pre-CBO: after the operator optimizations pushed filters down to the relations, before join planning and
    // cost-based reordering read the relations' sizes (delta-spark's PrepareDeltaScan runs there too). Aggregates
    // answered from the log first (they replace the scan, and read statistics in place); what remains is pruned.
    extensions.injectPreCBORule(session => io.strata.read.LogAggregateRule(session))
    extensions.injectPreCBORule(_ => PruneLogFileIndex)
    // The plan of both path and catalog reads' log answers (named in EXPLAIN, no Spark job).
    extensions.injectPlannerStrategy(_ => io.strata.read.LogAggregateStrategy)
    // delta-spark's OPTIMIZE statement, as the strata catalog's optimize procedure.
    extensions.injectParser((_, parser) => new StrataSqlParser(parser))
  }
}
