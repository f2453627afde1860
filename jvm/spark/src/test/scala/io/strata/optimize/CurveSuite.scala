package io.strata.optimize

import io.strata.log.AddFile
import org.scalatest.funsuite.AnyFunSuite

/**
 * The curves and the cube rules without Spark: the Hilbert index walks every cell of small grids exactly once in
 * steps to a neighbouring cell; Z-order is the interleaving; [[ZCubes]] chooses files as delta-spark's
 * `ClusteringStrategy` does, with and without OPTIMIZE FULL.
 */
class CurveSuite extends AnyFunSuite {
  /** Every point of the grid of `dims` coordinates of `bits` bits, in row-major order. */
  private def grid(dims: Int, bits: Int): Seq[Array[Int]] =
    (0 until (1 << (dims * bits))).map(c => Array.tabulate(dims)(d => (c >>> (d * bits)) & ((1 << bits) - 1)))

  test("the Hilbert index is a bijection onto 0 until 2^(dims * bits) whose consecutive cells are neighbours") {
    for (dims <- 2 to 4; bits <- 1 to (if (dims == 4) 3 else 4)) {
      val points = grid(dims, bits)
      val byIndex = points.map(p => Curve.Hilbert.index(p, bits) -> p.toSeq).toMap
      assert(byIndex.size == points.size && byIndex.keySet == (0L until points.size).toSet, (dims, bits))
      (1L until points.size).foreach { i =>
        val (a, b) = (byIndex(i - 1), byIndex(i))
        val steps = a.zip(b).map { case (x, y) => math.abs(x - y) }
        assert(steps.sum == 1, s"dims $dims, bits $bits: index ${i - 1} is $a, $i is $b")
      }
      assert(byIndex(0L).forall(_ == 0), (dims, bits)) // starts in the corner
    }
    // Z-order has no such steps: its 2 x 2 grid jumps diagonally from (0, 1) to (1, 0).
    val z = grid(2, 1).map(p => Curve.ZOrder.index(p, 1) -> p.toSeq).toMap
    assert(z(1L) == Seq(0, 1) && z(2L) == Seq(1, 0))
    // The production sizes: 6 columns of 10 bits fit a long, the input untouched, one column is its own range id.
    val ids = Array(1023, 0, 512, 7, 1, 999)
    assert(Curve.Hilbert.index(ids, 10) >= 0 && ids.toSeq == Seq(1023, 0, 512, 7, 1, 999))
    assert(Curve.Hilbert.index(Array(37), 10) == 37L && Curve.ZOrder.index(Array(37), 10) == 37L)
    assert(Curve.forClustering(1) == Curve.ZOrder && Curve.forClustering(2) == Curve.Hilbert)
    assert(Curve.Hilbert.name == "hilbert" && Curve.ZOrder.name == "zorder")
  }

  private def file(path: String, size: Long, cube: Option[(String, Seq[String])] = None,
                   provider: Option[String] = Some("liquid")): AddFile = {
    val add = AddFile(path, Map.empty, size, 1, dataChange = false)
    cube match {
      case Some((id, names)) =>
        val c = io.strata.log.Clustering.clustered(add, id, names, "hilbert")
        provider.fold(c.copy(extra = None))(p => if (p == "liquid") c else {
          val extra = c.extra.get.deepCopy(); extra.put("clusteringProvider", p); c.copy(extra = Some(extra)) })
      case None => add
    }
  }

  test("ZCubes: new files and small cubes of the current columns; FULL also the cubes of other columns") {
    val ab = Seq("a", "b")
    val fresh = file("f1", 10)
    val stable = Seq(file("s1", 60, Some("c1" -> ab)), file("s2", 60, Some("c1" -> ab)))
    val small = Seq(file("m1", 10, Some("c2" -> ab)), file("m2", 10, Some("c3" -> ab)))
    val oldStable = Seq(file("o1", 200, Some("c0" -> Seq("b"))))
    val oldSmall = Seq(file("o2", 5, Some("c4" -> Seq("b"))))
    val other = file("x1", 5, Some("c5" -> ab), provider = Some("other"))
    val all = Seq(fresh) ++ stable ++ small ++ oldStable ++ oldSmall :+ other
    def paths(fs: Seq[AddFile]) = fs.map(_.path)
    // Incremental: stable cubes (>= 100 bytes) stay, other columns' and other providers' files are left alone.
    assert(paths(ZCubes.candidates(all, ab, 100, full = false)) == Seq("f1", "m1", "m2"))
    assert(paths(ZCubes.candidates(all, ab, 100, full = true)) == Seq("f1", "m1", "m2", "o1", "o2", "x1"))
    // One small cube alone: nothing to do, unless FULL has files of other columns to recluster.
    val one = stable ++ small.take(1) ++ oldStable
    assert(ZCubes.candidates(one, ab, 100, full = false).isEmpty)
    assert(paths(ZCubes.candidates(one, ab, 100, full = true)) == Seq("m1", "o1"))
    assert(ZCubes.candidates(stable ++ small.take(1), ab, 100, full = true).isEmpty) // FULL keeps stable cubes
    assert(paths(ZCubes.candidates(stable ++ small, ab, 1000, full = false)) == Seq("s1", "s2", "m1", "m2"))
  }
}
