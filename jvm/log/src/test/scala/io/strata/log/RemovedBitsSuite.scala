package io.strata.log

import org.scalatest.funsuite.AnyFunSuite

import scala.util.Random

/** Removed-row bits shared between forks: each side sees its own bits only, across chunk boundaries. */
class RemovedBitsSuite extends AnyFunSuite {
  test("forks share chunks until they write, and never see each other's bits") {
    val rnd = new Random(3)
    val n = 300000 // several chunks of 65,536 bits
    val base = new RemovedBits()
    val baseRef = new java.util.BitSet()
    (0 until 2000).foreach { _ => val i = rnd.nextInt(n); base.set(i); baseRef.set(i) }
    val frozen = base.fork()
    val (a, b) = (frozen.fork(), frozen.fork())
    val (aRef, bRef) = (baseRef.clone().asInstanceOf[java.util.BitSet], baseRef.clone().asInstanceOf[java.util.BitSet])
    (0 until 500).foreach { _ =>
      val i = rnd.nextInt(n + 70000); a.set(i); aRef.set(i)
      val j = rnd.nextInt(n); b.set(j); bRef.set(j)
    }
    base.set(5); base.set(n - 1) // the builder that made `frozen` writing on: copies, never touches the fork
    for ((bits, ref) <- Seq(frozen -> baseRef, a -> aRef, b -> bRef); i <- 0 until n + 70000) {
      assert(bits.get(i) == ref.get(i), s"bit $i")
    }
    assert((0 until 1000).map(i => a.nextClearBit(i)) == (0 until 1000).map(i => aRef.nextClearBit(i)))
  }

  test("anySet says whether a range holds a set bit, across words and chunks, as a scan of each bit does") {
    val bits = new RemovedBits()
    val ref = new java.util.BitSet()
    Seq(0, 63, 64, 127, 65535, 65536, 200001).foreach { i => bits.set(i); ref.set(i) }
    val rnd = new Random(7)
    val edges = Seq(0, 1, 62, 63, 64, 65, 126, 127, 128, 65534, 65535, 65536, 65537, 131072, 200000, 200001, 200002,
      300000)
    val ranges = (for (a <- edges; b <- edges if a <= b) yield (a, b)) ++
      (0 until 300).map { _ => val a = rnd.nextInt(210000); (a, a + rnd.nextInt(70000)) }
    ranges.foreach { case (from, until) =>
      val expected = { val k = ref.nextSetBit(from); k >= 0 && k < until }
      assert(bits.anySet(from, until) == expected, s"$from until $until")
    }
    assert(!new RemovedBits().anySet(0, 1000000))
  }
}
