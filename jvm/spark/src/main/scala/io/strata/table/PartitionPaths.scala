package io.strata.table

import java.net.URI

/**
 * Hive-style partition directories (`col=value/...`) and the URI-encoded relative paths the log stores for files
 * in them. Escaping matches Spark's, so directories look the same as Spark's own writers make them.
 */
object PartitionPaths {
  private val charsToEscape: java.util.BitSet = {
    val bits = new java.util.BitSet(128)
    (0x01 to 0x1f).foreach(bits.set)
    "\"#%'*/:=?\\\u007f{[]^".foreach(c => bits.set(c.toInt))
    bits
  }

  def escape(s: String): String = {
    val b = new StringBuilder
    s.foreach { c =>
      if (c < 128 && charsToEscape.get(c.toInt)) b.append(f"%%${c.toInt}%02X") else b.append(c)
    }
    b.toString
  }

  def unescape(s: String): String = {
    val b = new StringBuilder
    var i = 0
    while (i < s.length) {
      val c = s.charAt(i)
      if (c == '%' && isHex(s, i + 1)) {
        b.append(Integer.parseInt(s.substring(i + 1, i + 3), 16).toChar); i += 3
      } else { b.append(c); i += 1 }
    }
    b.toString
  }

  private def isHex(s: String, i: Int): Boolean =
    i + 1 < s.length && Character.digit(s.charAt(i), 16) >= 0 && Character.digit(s.charAt(i + 1), 16) >= 0

  /** `col=value/col2=value2`, values escaped; null or empty values become the Hive default partition. */
  def directory(values: Seq[(String, Option[String])]): String =
    values.map { case (k, v) => s"${escape(k)}=${v.filter(_.nonEmpty).map(escape).getOrElse(PartitionValues.HiveDefaultPartition)}" }
      .mkString("/")

  /** Parses `col=value/col2=value2` (as Spark names partition directories) into unescaped pairs. */
  def parseDirectory(dir: String): Seq[(String, String)] =
    dir.split('/').toSeq.filter(_.nonEmpty).map { seg =>
      val eq = seg.indexOf('=')
      if (eq <= 0) throw new IllegalArgumentException(s"'$seg' is not a col=value partition directory")
      unescape(seg.substring(0, eq)) -> unescape(seg.substring(eq + 1))
    }

  /** The log's form of a relative file path: URI-encoded, as PROTOCOL.md requires for `add.path`. */
  def encode(relativePath: String): String = new URI(null, null, relativePath, null).getRawPath
}
