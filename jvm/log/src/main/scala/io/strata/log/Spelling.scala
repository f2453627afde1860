package io.strata.log

/** Closest-name suggestions for misspelt options and properties ("Did you mean ...?"). */
object Spelling {
  /** The Levenshtein distance of `a` and `b`. */
  def editDistance(a: String, b: String): Int = {
    val d = Array.tabulate(a.length + 1, b.length + 1)((i, j) => if (i == 0) j else if (j == 0) i else 0)
    for (i <- 1 to a.length; j <- 1 to b.length) {
      d(i)(j) = math.min(math.min(d(i - 1)(j) + 1, d(i)(j - 1) + 1), d(i - 1)(j - 1) + (if (a(i - 1) == b(j - 1)) 0 else 1))
    }
    d(a.length)(b.length)
  }
}
