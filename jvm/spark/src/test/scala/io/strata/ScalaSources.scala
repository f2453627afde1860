package io.strata

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path => JPath}

import scala.jdk.CollectionConverters._
import scala.util.matching.Regex

/**
 * Scala sources read as text for [[ArchitectureSuite]], without a compiler: comments (and, where asked, string
 * literals) blanked out with every line kept in place, imports expanded (`import a.b.{c, d => e}` uses `a.b.c` and
 * `a.b.d`), fully qualified names found in the code. A name reached without either (through an enclosing package
 * clause, or a relative import other than of a sub-package) is not seen.
 */
object ScalaSources {
  /** A name used at a line of a file; `text` is that line as written. */
  final case class Use(file: String, line: Int, name: String, text: String) {
    override def toString: String = s"$file:$line: $text"
  }

  final class Source(val file: String, val text: String) {
    /** The code with comments blanked; string literals kept (a class named in a string is still a reference). */
    lazy val codeAndStrings: String = blank(text, keepStrings = true)
    /** The code with comments and string literals blanked. */
    lazy val code: String = blank(text, keepStrings = false)
    /** The package its clauses declare (chained clauses joined). */
    lazy val pkg: String = PackageClause.findAllMatchIn(code).map(_.group(1)).mkString(".")
    private lazy val lineStarts: IndexedSeq[Int] = 0 +: text.indices.filter(text(_) == '\n').map(_ + 1)
    private lazy val statements: Seq[(Int, Int)] = importStatements(code)
    private lazy val clauses: Seq[(Int, Int)] = statements ++ PackageClause.findAllMatchIn(code).map(m => (m.start, m.end))

    def lineOf(offset: Int): Int = lineStarts.lastIndexWhere(_ <= offset) + 1
    def lineText(line: Int): String = text.linesIterator.drop(line - 1).nextOption().getOrElse("").trim

    /** Every name its import statements bring in, expanded; relative ones as written. */
    lazy val imports: Seq[Use] = statements.flatMap { case (from, to) =>
      val line = lineOf(from)
      expand(code.substring(from, to).stripPrefix("import")).map(Use(file, line, _, lineText(line)))
    }

    /** Matches of `regex` (its group 1, else the whole match) in `in`, outside package clauses and imports. */
    def uses(regex: Regex, in: String = code): Seq[Use] = regex.findAllMatchIn(in)
      .filterNot(m => clauses.exists { case (from, to) => m.start >= from && m.start < to })
      .map { m =>
        val line = lineOf(m.start)
        Use(file, line, Option(m.group(1)).getOrElse(m.matched), lineText(line))
      }.toSeq
  }

  private val PackageClause = """(?m)^\s*package\s+(?!object\b)([\w.]+)""".r

  /** Every .scala and .java file below `dir`, named relative to `repo`. */
  def under(repo: JPath, dir: String): Seq[Source] = {
    val s = Files.walk(repo.resolve(dir))
    try s.iterator.asScala.filter(p => Files.isRegularFile(p) && p.toString.matches(""".*\.(scala|java)"""))
      .map(p => new Source(repo.relativize(p).toString, new String(Files.readAllBytes(p), UTF_8))).toSeq.sortBy(_.file)
    finally s.close()
  }

  /** `text` with comments (and string literals, unless `keepStrings`) replaced by spaces; newlines and length kept. */
  def blank(text: String, keepStrings: Boolean): String = {
    val out = new StringBuilder(text.length)
    def emit(from: Int, to: Int, keep: Boolean): Unit =
      (from until to).foreach(k => out += (if (keep || text(k) == '\n') text(k) else ' '))
    var i = 0
    while (i < text.length) {
      val start = i
      if (text.startsWith("//", i)) {
        i = Some(text.indexOf('\n', i)).filter(_ >= 0).getOrElse(text.length)
        emit(start, i, keep = false)
      } else if (text.startsWith("/*", i)) {
        var depth = 0
        do {
          if (text.startsWith("/*", i)) { depth += 1; i += 2 }
          else if (text.startsWith("*/", i)) { depth -= 1; i += 2 }
          else i += 1
        } while (depth > 0 && i < text.length)
        emit(start, i, keep = false)
      } else if (text(i) == '\'' && i + 2 < text.length && text(i + 1) != '\\' && text(i + 2) == '\'') {
        i += 3; emit(start, i, keepStrings)
      } else if (text(i) == '\'' && text.startsWith("\\", i + 1) && text.indexOf('\'', i + 2) > 0) {
        i = text.indexOf('\'', i + 2) + 1; emit(start, i, keepStrings)
      } else if (text(i) == '"') {
        i = string(text, i, keepStrings, out)
      } else { out += text(i); i += 1 }
    }
    out.toString
  }

  /** Emits the string literal starting at `open` (interpolated code kept as code); returns the offset after it. */
  private def string(text: String, open: Int, keepStrings: Boolean, out: StringBuilder): Int = {
    val interpolated = open > 0 && (text(open - 1).isLetterOrDigit || text(open - 1) == '_')
    val quote = if (text.startsWith("\"\"\"", open)) "\"\"\"" else "\""
    var i = open + quote.length
    var literalFrom = open
    def flush(to: Int): Unit = (literalFrom until to).foreach(k => out += (if (keepStrings || text(k) == '\n') text(k) else ' '))
    var closed = false
    while (!closed && i < text.length) {
      if (interpolated && text.startsWith("${", i)) {
        flush(i + 2)
        var depth = 1
        var j = i + 2
        while (depth > 0 && j < text.length) { if (text(j) == '{') depth += 1 else if (text(j) == '}') depth -= 1; j += 1 }
        out ++= blank(text.substring(i + 2, j - 1), keepStrings)
        literalFrom = j - 1; i = j
      } else if (quote.length == 1 && text(i) == '\\') i += 2
      else if (quote.length == 1 && text(i) == '\n') closed = true
      else if (text.startsWith(quote, i)) {
        i += quote.length
        while (quote.length == 3 && i < text.length && text(i) == '"') i += 1
        closed = true
      } else i += 1
    }
    flush(math.min(i, text.length))
    math.min(i, text.length)
  }

  /** (start, end) of every import statement in `code` (comments and strings blanked). */
  private def importStatements(code: String): Seq[(Int, Int)] =
    """(?m)(?:^|[;{])\s*(import\s)""".r.findAllMatchIn(code).map { m =>
      var (j, depth) = (m.start(1), 0)
      def continues = code.substring(m.start(1), j).trim.endsWith(",")
      while (j < code.length && !(depth == 0 && (code(j) == ';' || (code(j) == '\n' && !continues)))) {
        if (code(j) == '{') depth += 1 else if (code(j) == '}') depth -= 1
        j += 1
      }
      (m.start(1), j)
    }.toSeq

  /** The names one import clause brings in: `a.b.{c => d, _}, e.F` gives a.b.c, a.b._ and e.F. */
  private def expand(clause: String): Seq[String] = topLevel(clause.filterNot(_.isWhitespace), ',').flatMap { expr =>
    expr.indexOf(".{") match {
      case -1 => Seq(expr.stripPrefix("_root_."))
      case k =>
        val prefix = expr.substring(0, k).stripPrefix("_root_.")
        expr.substring(k + 2).stripSuffix("}").split(',').toSeq.map(_.split("=>").head)
          .filter(s => s.nonEmpty && s != "given").map(s => s"$prefix.$s")
    }
  }

  private def topLevel(s: String, sep: Char): Seq[String] = {
    val parts = Seq.newBuilder[String]
    var (depth, from) = (0, 0)
    s.indices.foreach { k =>
      if (s(k) == '{') depth += 1 else if (s(k) == '}') depth -= 1
      else if (s(k) == sep && depth == 0) { parts += s.substring(from, k); from = k + 1 }
    }
    (parts += s.substring(from)).result().filter(_.nonEmpty)
  }
}
