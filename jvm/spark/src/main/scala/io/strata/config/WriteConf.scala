package io.strata.config

import java.util.Locale

import io.strata.log.InvalidTableOperationException

/** How a catalog write asks Spark to lay rows out across tasks before they reach the writers. */
sealed abstract class DistributionMode(val name: String)
object DistributionMode {
  /** No shuffle: each task writes its rows as they come, with one open file per partition it sees (fanout). */
  case object None extends DistributionMode("none")
  /** Hash-cluster by partition columns: about one file per partition, one open file per task. */
  case object Hash extends DistributionMode("hash")
  /** Range-order by partition columns: like hash, with partitions in sorted ranges across tasks. */
  case object Range extends DistributionMode("range")
  val all: Seq[DistributionMode] = Seq(None, Hash, Range)
}

/**
 * Settings that a write option, the Spark session and a table property can each set, resolved in one place with one
 * rule: write option > session conf > table property > default (the precedence Iceberg's SparkConfParser uses).
 */
final case class WriteConf(options: Map[String, String], session: String => Option[String],
                           tableProperties: Map[String, String]) {
  private def lookup(optionKey: String, sessionKey: String, propertyKey: String): Option[(String, String)] =
    options.find(_._1.equalsIgnoreCase(optionKey)).map(kv => s"write option ${kv._1}" -> kv._2)
      .orElse(session(sessionKey).map(v => s"session conf $sessionKey" -> v))
      .orElse(tableProperties.get(propertyKey).map(v => s"table property $propertyKey" -> v))

  /** `write.distribution-mode` (option), `spark.strata.write.distribution-mode` (session), same name as property. */
  def distributionMode(partitioned: Boolean): DistributionMode =
    lookup(WriteConf.DistributionModeKey, "spark.strata." + WriteConf.DistributionModeKey, WriteConf.DistributionModeKey) match {
      case Some((where, v)) => DistributionMode.all.find(_.name == v.trim.toLowerCase(Locale.ROOT)).getOrElse(
        throw WriteConf.invalid(where, v, "one of " + DistributionMode.all.map(_.name).mkString(", ")))
      case scala.None => if (partitioned) DistributionMode.Hash else DistributionMode.None
    }

  /**
   * Size at which a V2 writer rolls to a new file (`write.target-file-size-bytes`, default 128 MB); also the advisory
   * size of the shuffle partitions a clustered write asks for.
   */
  def targetFileSizeBytes: Long =
    lookup(WriteConf.TargetFileSizeKey, "spark.strata." + WriteConf.TargetFileSizeKey, WriteConf.TargetFileSizeKey) match {
      case Some((where, v)) => v.trim.toLongOption.filter(_ > 0).getOrElse(
        throw WriteConf.invalid(where, v, "a whole number of bytes > 0"))
      case scala.None => WriteConf.DefaultTargetFileSize
    }

  /** Most files one fanout task keeps open at once (`write.fanout.max-open-files`, default 100). */
  def maxOpenFiles: Int =
    lookup(WriteConf.MaxOpenFilesKey, "spark.strata." + WriteConf.MaxOpenFilesKey, WriteConf.MaxOpenFilesKey) match {
      case Some((where, v)) => v.trim.toIntOption.filter(_ > 0).getOrElse(
        throw WriteConf.invalid(where, v, "a whole number > 0"))
      case scala.None => 100
    }

  /**
   * Deletion vectors whose data takes at most this many bytes are stored inline in the log (`i` descriptors) instead
   * of in a `deletion_vector_*.bin` file (`write.deletion-vector.inline-max-bytes`, default 0: always a file, as
   * delta-spark writes them; every reader of the protocol must read both).
   */
  def maxInlineVectorBytes: Int =
    lookup(WriteConf.InlineVectorKey, "spark.strata." + WriteConf.InlineVectorKey, WriteConf.InlineVectorKey) match {
      case Some((where, v)) => v.trim.toIntOption.filter(n => n >= 0 && n <= 4096).getOrElse(
        throw WriteConf.invalid(where, v, "a whole number of bytes from 0 to 4096"))
      case scala.None => 0
    }
}

object WriteConf {
  /** `where` (a write option, session conf or table property, as `lookup` names it) has a value it may not take. */
  private def invalid(where: String, value: String, allowed: String): InvalidTableOperationException =
    InvalidTableOperationException(
      if (where.startsWith("session conf")) "STRATA_INVALID_CONF_VALUE"
      else if (where.startsWith("table property")) "STRATA_INVALID_TABLE_PROPERTY_VALUE"
      else "STRATA_INVALID_OPTION_VALUE",
      Map("setting" -> where, "value" -> value, "allowed" -> allowed))

  val InlineVectorKey = "write.deletion-vector.inline-max-bytes"
  val DistributionModeKey = "write.distribution-mode"
  val MaxOpenFilesKey = "write.fanout.max-open-files"
  val TargetFileSizeKey = "write.target-file-size-bytes"
  val DefaultTargetFileSize: Long = 128L * 1024 * 1024
}
