package io.strata.config

import io.strata.log.InvalidTableOperationException

import java.util.Locale

/** Options of one read. */
final case class ReadOptions(versionAsOf: Option[Long] = None, timestampAsOf: Option[String] = None)

/**
 * Read options, and what option parsing shares (writes: [[WriteSettings]] and [[WriteConf]]). Unknown options are
 * rejected with the closest known name, because a misspelt option that is silently ignored (as Spark and Delta do)
 * reads or writes the wrong thing.
 */
object StrataOptions {
  val Path = "path"
  val VersionAsOf = "versionAsOf"
  val TimestampAsOf = "timestampAsOf"

  private val readKeys = Seq(Path, VersionAsOf, TimestampAsOf)

  /**
   * Options of a batch read: a path read (`load(path)`) or a catalog table's (`.table(name)`, checked when the scan
   * is planned), with the same accepted set and messages.
   */
  def parseRead(options: Map[String, String]): ReadOptions = {
    refuseChangeFeed(options, "this read would return the table's rows, not its changes. Leave the option out to " +
      s"read the rows (with $VersionAsOf or $TimestampAsOf for an older version).")
    val o = normalize(options, readKeys)
    val version = o.get(lc(VersionAsOf)).map(v => positiveLong(VersionAsOf, v, allowZero = true))
    val ts = o.get(lc(TimestampAsOf))
    if (version.isDefined && ts.isDefined) throw InvalidTableOperationException("STRATA_CONFLICTING_OPTIONS",
      s"Options $VersionAsOf and $TimestampAsOf cannot be used together: pick one.")
    ReadOptions(version, ts)
  }

  /** delta-spark's change data feed read options. */
  private val changeFeedOptions = Seq("readChangeFeed", "readChangeData")

  /**
   * Refuses a change data feed request by name: Strata has none, and a read that ignored the option would hand a
   * pipeline asking for changes the whole table instead. `consequence` says what the read would have done.
   */
  private[config] def refuseChangeFeed(options: Map[String, String], consequence: String): Unit =
    changeFeedOptions.find(n => options.keys.exists(_.equalsIgnoreCase(n))).foreach { n =>
      throw InvalidTableOperationException("STRATA_UNSUPPORTED_OPTION",
        s"Option '$n': change data feed is not supported by Strata yet; $consequence")
    }

  /** Lower-cases keys and rejects anything not in `known`. */
  private[config] def normalize(options: Map[String, String], known: Seq[String]): Map[String, String] = {
    val o = options.map { case (k, v) => k.toLowerCase(Locale.ROOT) -> v }
    val knownLc = known.map(lc).toSet
    o.keys.toSeq.sorted.find(k => !knownLc(k)).foreach { k =>
      val original = options.keys.find(_.toLowerCase(Locale.ROOT) == k).getOrElse(k)
      WriteSettings.ComingSoon.find(lc(_) == k) match {
        case Some(name) => throw InvalidTableOperationException("STRATA_UNSUPPORTED_OPTION",
          s"Option '$name' is not supported by this version of Strata yet; nothing was written.")
        case None =>
          val closest = known.filterNot(_.startsWith("__")).minBy(c => io.strata.log.Spelling.editDistance(lc(c), k))
          throw InvalidTableOperationException("STRATA_UNKNOWN_OPTION", Map("option" -> original,
            "closest" -> closest, "known" -> known.filterNot(_.startsWith("__")).mkString(", ")))
      }
    }
    o
  }

  private[config] def lc(s: String) = s.toLowerCase(Locale.ROOT)

  private[config] def boolean(o: Map[String, String], name: String): Boolean = o.get(lc(name)) match {
    case None => false
    case Some(v) if v.trim.equalsIgnoreCase("true") => true
    case Some(v) if v.trim.equalsIgnoreCase("false") => false
    case Some(v) => bad(name, v, "true or false")
  }

  private[config] def bad(name: String, value: String, allowed: String): Nothing =
    throw InvalidTableOperationException("STRATA_INVALID_OPTION_VALUE",
      Map("setting" -> s"Option '$name'", "value" -> value, "allowed" -> allowed))

  private[config] def positiveLong(name: String, v: String, allowZero: Boolean): Long =
    v.trim.toLongOption.filter(x => x > 0 || (allowZero && x == 0))
      .getOrElse(bad(name, v, if (allowZero) "a whole number >= 0" else "a whole number > 0"))

  /** DataFrameWriter.partitionBy encodes the columns as a JSON array of strings. */
  private[config] def decodeColumns(json: String): Seq[String] = {
    val node = io.strata.log.ActionCodec.mapper.readTree(json)
    import scala.jdk.CollectionConverters._
    node.elements.asScala.map(_.asText).toSeq
  }

  private val sizePattern = """(?i)\s*(\d+)\s*(b|k|kb|kib|m|mb|mib|g|gb|gib|t|tb|tib)?\s*""".r

  /** A size > 0: "1048576", "512k", "64mb", "1g" (binary units, as Spark's size confs). */
  private[config] def byteSize(v: String): Option[Long] = v match {
    case sizePattern(n, unit) =>
      val shift = Option(unit).map(_.toLowerCase(Locale.ROOT).take(1)) match {
        case None | Some("b") => 0
        case Some("k") => 10
        case Some("m") => 20
        case Some("g") => 30
        case _ => 40
      }
      n.toLongOption.filter(x => x > 0 && x <= (Long.MaxValue >> shift)).map(_ << shift)
    case _ => None
  }
}
