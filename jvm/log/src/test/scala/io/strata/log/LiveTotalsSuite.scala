package io.strata.log

import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import scala.util.Random

/**
 * What a snapshot knows without visiting its files (count, bytes, deletion vectors, files by partition) is kept
 * commit by commit ([[LiveTotals]], [[RowGroups]]); after every commit it must equal what a fresh replay of the whole
 * log from version 0 computes, through adds, removes, re-adds of a removed path, deletion vectors put on and taken
 * off, runs of new entries merged, and compactions into a new base.
 */
class LiveTotalsSuite extends AnyFunSuite {
  private val table = new Path("file:/data/t")
  private val seg = LogSegment(0L, None, Nil, Nil, 0L)
  private val meta = Metadata(id = "t", schemaString = "{}", partitionColumns = Seq("p"))

  private def addOf(i: Int, part: Int, dv: Option[DeletionVectorDescriptor] = None) =
    AddFile(f"p=$part/part-$i%06d.parquet", Map("p" -> Some(part.toString)), 100L + i, 1000L + i, dataChange = true,
      Some(s"""{"numRecords":$i}"""), deletionVector = dv)
  private def dv(n: Int) = DeletionVectorDescriptor("u", f"ab$n%06d" + "x" * 14, Some(1), 10, 1L)

  /** Everything the incremental facts answer, from `s`, in comparable form. */
  private def facts(s: Snapshot) = (s.numFiles, s.sizeInBytes, s.hasDeletionVectors,
    s.filesByPartition.map { case (pv, fs) => pv -> fs.toSet }.toMap, s.filesByPartition.map(_._2.size).sum)

  private def fresh(commits: Seq[Seq[Action]], v: Long): Snapshot = {
    val r = new Snapshot.Replay(table)
    (Seq(Protocol(1, 2), meta) +: commits).flatten.foreach(r.apply)
    r.result(v, seg)
  }

  test("after every commit, the incremental facts equal a fresh replay's, and compactions happen on the way") {
    val rnd = new Random(7)
    val first = (0 until 1500).map(i => addOf(i, i % 13))
    val commits = scala.collection.mutable.ArrayBuffer[Seq[Action]](first)
    var snap = fresh(commits.toSeq, 0L)
    var live = first.map(f => f.path -> f).toMap
    var gone = Map.empty[String, AddFile]
    var next = 1500
    var (merges, compactions) = (0, 0)
    (1 to 40).foreach { v =>
      val touched = scala.collection.mutable.Set.empty[String]
      def pick(m: Map[String, AddFile]) = m.values.filterNot(f => touched(f.path)).toIndexedSeq match {
        case IndexedSeq() => None
        case fs => Some(fs(rnd.nextInt(fs.size)))
      }
      // Every 10th commit is big (a tail past its limit is compacted into a new base); the others small.
      val n = if (v % 10 == 0) 2600 else rnd.nextInt(30)
      // Commit 35 removes most files: removed rows outnumber the live ones, and the set is compacted.
      val purge = if (v != 35) Nil else live.values.toSeq.sortBy(_.path).take(live.size * 3 / 4).map { f =>
        touched += f.path; live -= f.path; gone += f.path -> f; f.remove(v.toLong) }
      val actions = purge ++ (0 until n).flatMap { _ =>
        rnd.nextInt(6) match {
          case 0 | 1 => next += 1; val f = addOf(next, rnd.nextInt(20)); touched += f.path; live += f.path -> f; Seq(f)
          case 2 => pick(live).toSeq.flatMap { f => touched += f.path; live -= f.path; gone += f.path -> f
            Seq(f.remove(v.toLong)) }
          case 3 => pick(live).toSeq.flatMap { f => // a deletion vector put on, or taken off (a rewrite)
            touched += f.path
            val g = f.copy(deletionVector = if (f.deletionVector.isEmpty) Some(dv(next + v)) else None)
            live += f.path -> g
            Seq(f.remove(v.toLong), g) }
          case 4 => pick(gone).toSeq.flatMap { f => // a removed path comes back (RESTORE)
            touched += f.path; gone -= f.path; live += f.path -> f; Seq(f) }
          case _ => next += 1; val f = addOf(next, 3); touched += f.path; live += f.path -> f; Seq(f)
        }
      }
      commits += actions
      val replay = Snapshot.Replay.from(snap)
      actions.foreach(replay.apply)
      val (tailBefore, removedBefore) = (snap.fileSet.tailLength, snap.fileSet.removedRows)
      snap = replay.result(v.toLong, seg.copy(version = v.toLong))
      if (snap.fileSet.removedRows < removedBefore) compactions += 1
      else if (snap.fileSet.tailLength < tailBefore + actions.count(_.isInstanceOf[AddFile])) merges += 1
      val expected = fresh(commits.toSeq, v.toLong)
      assert(facts(snap) == facts(expected), s"version $v")
      assert(snap.numFiles == live.size && snap.sizeInBytes == live.values.map(_.size).sum, s"version $v")
      assert(snap.hasDeletionVectors == live.values.exists(_.deletionVector.isDefined), s"version $v")
      // Tombstones keep their own totals the same way.
      assert(snap.tombstones.size == expected.tombstones.size && snap.tombstones.toSet == expected.tombstones.toSet)
    }
    assert(merges >= 3 && compactions >= 1, s"the test must cross merges ($merges) and compactions ($compactions)")
  }

  test("deletion vectors: the snapshot knows it has some exactly while a live file carries one") {
    val s0 = fresh(Seq((0 until 10).map(i => addOf(i, 0))), 0L)
    assert(!s0.hasDeletionVectors)
    val withDv = addOf(3, 0, Some(dv(1)))
    val s1 = { val r = Snapshot.Replay.from(s0); r(addOf(3, 0).remove(1L)); r(withDv); r.result(1L, seg) }
    assert(s1.hasDeletionVectors && !s0.hasDeletionVectors)
    val s2 = { val r = Snapshot.Replay.from(s1); r(withDv.remove(2L)); r.result(2L, seg) }
    assert(!s2.hasDeletionVectors && s2.numFiles == 9 && s1.numFiles == 10)
    assert(s2.sizeInBytes == (0 until 10).filter(_ != 3).map(100L + _).sum)
  }

  test("a partition emptied by removes is no longer listed, and comes back with its next file") {
    val s0 = fresh(Seq(Seq(addOf(1, 1), addOf(2, 2))), 0L)
    val s1 = { val r = Snapshot.Replay.from(s0); r(addOf(1, 1).remove(1L)); r.result(1L, seg) }
    assert(s1.filesByPartition.map(_._1) == Seq(Map("p" -> Some("2"))))
    val s2 = { val r = Snapshot.Replay.from(s1); r(addOf(9, 1)); r.result(2L, seg) }
    assert(s2.filesByPartition.map { case (pv, fs) => pv -> fs.map(_.path) }.toSet ==
      Set(Map("p" -> Some("1")) -> Seq(addOf(9, 1).path), Map("p" -> Some("2")) -> Seq(addOf(2, 2).path)))
  }
}
