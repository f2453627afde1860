package io.strata.config

import io.strata.log.InvalidTableOperationException

/**
 * Which schema changes of one kind (renames, drops or type widenings) a restarted stream may read across: every one
 * (`always`), or only those made by the commits at `versions` (delta-spark's value "the version of the schema change",
 * which unblocks that one change and not the next).
 */
final case class SchemaChangeAllowance(always: Boolean, versions: Set[Long]) {
  def allows(version: Long): Boolean = always || versions(version)
  def ++(other: SchemaChangeAllowance): SchemaChangeAllowance =
    SchemaChangeAllowance(always || other.always, versions ++ other.versions)
}

object SchemaChangeAllowance {
  val Never: SchemaChangeAllowance = SchemaChangeAllowance(always = false, Set.empty)
  val Always: SchemaChangeAllowance = SchemaChangeAllowance(always = true, Set.empty)

  private val expected = "always, true, false, or the table version whose schema change to allow (a whole number " +
    ">= 0, as the stream's error names it)"

  /** A reader option's value: `always` (or `true`), `false`, or a version. */
  def option(name: String, value: String): SchemaChangeAllowance = parse(value).getOrElse(
    StrataOptions.bad(name, value, expected))

  private def parse(value: String): Option[SchemaChangeAllowance] = value.trim.toLowerCase(java.util.Locale.ROOT) match {
    case "always" | "true" => Some(Always)
    case "false" => Some(Never)
    case v if v.nonEmpty && v.forall(_.isDigit) => v.toLongOption.map(n => SchemaChangeAllowance(always = false, Set(n)))
    case _ => None
  }

  private def badConf(key: String, value: String, allowed: String): Nothing =
    throw InvalidTableOperationException("STRATA_INVALID_OPTION_VALUE",
      Map("setting" -> s"Session conf '$key'", "value" -> value, "allowed" -> allowed))

  /**
   * delta-spark's session confs for a stream's source: `<prefix>.<option>` = `always` unblocks every stream,
   * `<prefix>.<option>.ckpt_<hash>` = `always` or a version unblocks the stream whose source checkpoint location has
   * that Java string hash (as delta-spark names it in its error). Other values are refused, naming the conf.
   */
  def sessionConfs(option: String, conf: String => Option[String], checkpointHash: Int): SchemaChangeAllowance = {
    val global = s"${StreamReadOptions.DeltaConfPrefix}.$option"
    val perStream = s"$global.ckpt_$checkpointHash"
    val all = conf(global).map { v =>
      if (v.trim.equalsIgnoreCase("always")) Always
      else if (v.trim.equalsIgnoreCase("false")) Never
      else badConf(global, v, s"always or false (a version goes in one stream's conf, $global.ckpt_<hash>)")
    }
    val one = conf(perStream).map(v => parse(v).getOrElse(badConf(perStream, v, expected)))
    (all.toSeq ++ one).foldLeft(Never)(_ ++ _)
  }
}
