package io.strata.procedures

import io.strata.log.InvalidTableOperationException

/**
 * delta-spark's OPTIMIZE statement, `OPTIMIZE <table name or 'path'> [FULL] [WHERE <predicate>] [ZORDER BY (cols)]`,
 * as the CALL of Strata's optimize procedure it means (the parser extension then parses that CALL): one OPTIMIZE,
 * whichever way it is written. The table text is passed as written (a name, `` strata.`/path` ``, or the path of
 * a string literal); the predicate and column names as string literals, escaped.
 */
object OptimizeSql {
  private val Statement = "(?is)\\s*OPTIMIZE\\s+(.*?)[\\s;]*".r
  private val Name = "(?s)((?:`(?:[^`]|``)*`|[A-Za-z0-9_]+)(?:\\s*\\.\\s*(?:`(?:[^`]|``)*`|[A-Za-z0-9_]+))*)(.*)".r
  private val Path = "(?s)'((?:[^'\\\\]|\\\\.)*)'(.*)".r
  private val ZOrder = "(?is)ZORDER\\s+BY\\s*\\((.*)\\)".r
  private val ZOrderStart = "(?i)\\bZORDER\\s+BY\\b".r
  private val Where = "(?is)WHERE\\s+(.+)".r
  private val Full = "(?is)FULL(?:\\s+(.*)|)".r

  /** The CALL for `sql` when it is an OPTIMIZE statement (else None), on the strata catalog `catalog`. */
  def toCall(sql: String, catalog: String): Option[String] = sql match {
    case Statement(rest) =>
      def bad(problem: String) = InvalidTableOperationException("STRATA_INVALID_OPTIMIZE_STATEMENT",
        Map("statement" -> sql.trim, "problem" -> problem))
      val (table, afterTable) = rest match {
        case Path(p, tail) => ("`" + p.replace("\\'", "'").replace("`", "``") + "`", tail)
        case Name(n, tail) if n.nonEmpty => (n, tail)
        case _ => throw bad("it names no table")
      }
      val (full, afterFull) = afterTable.trim match {
        case Full(tail) => (true, Option(tail).getOrElse(""))
        case other => (false, other)
      }
      val clauses = afterFull.trim
      val (filter, zorder) = zorderStart(clauses).map(i => (clauses.substring(0, i).trim, clauses.substring(i))) match {
        case Some((before, ZOrder(cols))) => (before, Some(cols))
        case Some((_, z)) => throw bad(s"'$z' is not ZORDER BY (col, ...)")
        case None => (clauses, None)
      }
      val where = filter match {
        case "" => None
        case Where(p) => Some(p.trim)
        case other => throw bad(s"'$other' is neither FULL, WHERE nor ZORDER BY")
      }
      val columns = zorder.map(_.split(",", -1).toSeq.map(_.trim).map(c =>
        if (c.length > 1 && c.startsWith("`") && c.endsWith("`")) c.substring(1, c.length - 1).replace("``", "`")
        else c))
      columns.foreach(cs => if (cs.exists(_.isEmpty)) throw bad("ZORDER BY lists an empty column name"))
      val args = Seq(s"table => ${literal(table)}") ++ where.map(w => s"where => ${literal(w)}") ++
        columns.map(cs => s"zorder_by => array(${cs.map(literal).mkString(", ")})") ++
        (if (full) Seq("full => true") else Nil)
      Some(s"CALL `${catalog.replace("`", "``")}`.system.optimize(${args.mkString(", ")})")
    case _ => None
  }

  /** Where `ZORDER BY` starts outside quotes (a WHERE predicate's string literal may hold those words). */
  private def zorderStart(s: String): Option[Int] = {
    val quoted = new Array[Boolean](s.length)
    var quote = 0.toChar
    var i = 0
    while (i < s.length) {
      val c = s.charAt(i)
      quoted(i) = quote != 0
      if (quote == 0) { if (c == '\'' || c == '"' || c == '`') { quote = c; quoted(i) = true } }
      else if (c == '\\' && quote != '`' && i + 1 < s.length) { i += 1; quoted(i) = true }
      else if (c == quote) quote = 0
      i += 1
    }
    ZOrderStart.findAllMatchIn(s).map(_.start).find(i => !quoted(i))
  }

  private def literal(s: String): String = "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"
}
