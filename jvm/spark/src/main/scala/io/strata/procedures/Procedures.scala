package io.strata.procedures

import io.strata.log.InvalidTableOperationException
import org.apache.spark.sql.connector.catalog.Identifier

/** The procedures of namespace `system` in a strata catalog (`CALL strata.system.<name>(...)`). */
object Procedures {
  val Namespace: String = "system"

  private val all: Map[String, StrataProcedure] = Seq[StrataProcedure](
    HistoryProcedure, DetailProcedure, OptimizeProcedure, VacuumProcedure, RestoreProcedure, CheckpointProcedure,
    CleanupLogProcedure, DropFeatureProcedure
  ).map(p => p.name() -> p).toMap

  def names: Seq[String] = all.keys.toSeq.sorted

  def load(ident: Identifier): StrataProcedure = {
    val inSystem = ident.namespace().length == 1 && ident.namespace()(0).equalsIgnoreCase(Namespace)
    all.get(ident.name().toLowerCase).filter(_ => inSystem).getOrElse(throw InvalidTableOperationException(
      "STRATA_PROCEDURE_NOT_FOUND", Map("procedure" -> (ident.namespace() :+ ident.name()).mkString("."),
        "known" -> names.map(n => s"$Namespace.$n").mkString(", "))))
  }

  def list(namespace: Array[String]): Array[Identifier] =
    if (namespace.length == 1 && namespace(0).equalsIgnoreCase(Namespace))
      names.map(n => Identifier.of(Array(Namespace), n)).toArray
    else Array.empty
}
