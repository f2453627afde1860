package io.strata.log

import org.scalatest.funsuite.AnyFunSuite

class RecentlyUsedSuite extends AnyFunSuite {
  test("the least recently used key leaves first, and only past the bound; a read counts as a use") {
    val evicted = scala.collection.mutable.Buffer.empty[Int]
    val m = new RecentlyUsed[String, Int](max = 2, evicted += _)
    assert(m.put("a", 1).isEmpty && m.put("b", 2).isEmpty)
    assert(evicted.isEmpty)
    assert(m.get("a").contains(1)) // "b" is now the least recently used
    assert(m.put("c", 3).isEmpty)
    assert(evicted == Seq(2))
    assert(!m.contains("b") && m.contains("a") && m.contains("c"))
    // Replacing a key hands the old value back to the caller instead of evicting it.
    assert(m.put("a", 10).contains(1))
    assert(evicted == Seq(2))
    m.putIf("a", 5)(_.exists(_ > 10)) // 10 is not above 10: kept
    assert(m.get("a").contains(10))
    m.putIf("a", 11)(_.forall(_ <= 10))
    assert(m.get("a").contains(11))
    m.putIf("a", 10)(_.forall(_ <= 10))
    assert(m.get("a").contains(11) && evicted == Seq(2))
    assert(m.remove("c").contains(3) && m.remove("c").isEmpty)
    assert(m.clear() == Seq(11) && m.get("a").isEmpty)
    assertThrows[IllegalArgumentException](new RecentlyUsed[String, Int](0))
  }
}
