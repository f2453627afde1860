package io.strata.log

/** The `interval N unit` strings Delta uses in table properties. */
object Intervals {
  private val Pattern = """(?i)^\s*(?:interval\s+)?(\d+)\s+(\w+?)s?\s*$""".r
  def parseMillis(s: String): Option[Long] = s match {
    case Pattern(n, unit) =>
      val ms = unit.toLowerCase match {
        case "millisecond" => Some(1L)
        case "second" => Some(1000L)
        case "minute" => Some(60000L)
        case "hour" => Some(3600000L)
        case "day" => Some(86400000L)
        case "week" => Some(604800000L)
        case _ => None
      }
      ms.map(_ * n.toLong)
    case _ => None
  }
}
