package io.strata.log

import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import scala.collection.mutable
import scala.util.Random

/**
 * The column-wise file state: log replay over it gives exactly what a map of actions keyed by (absolute path,
 * deletion vector id) gives, snapshots replayed from one another never see each other's changes, and a file costs
 * the bytes the state promises.
 */
class FileSetSuite extends AnyFunSuite {
  private val table = new Path("file:/data/t")
  private val seg = LogSegment(0L, None, Nil, Nil, 0L)
  private val protocol = Protocol(1, 2)
  private val meta = Metadata(id = "t", schemaString = "{}", partitionColumns = Seq("p"))

  private def addOf(i: Int, dv: Option[DeletionVectorDescriptor] = None) =
    AddFile(f"p=${i % 7}/part-$i%05d.parquet", Map("p" -> Some((i % 7).toString)), 100L + i, 1000L + i,
      dataChange = true, Some(s"""{"numRecords":$i}"""), deletionVector = dv)

  /** What replay must give: the reference map PROTOCOL.md describes, keyed by absolute path and dv id. */
  private final class Reference {
    val files = mutable.LinkedHashMap.empty[(String, String), AddFile]
    val tombstones = mutable.LinkedHashMap.empty[(String, String), RemoveFile]
    private def key(path: String, dv: String) = (Snapshot.absolutePath(table, path).toString, dv)
    def apply(a: Action): Unit = a match {
      case f: AddFile => tombstones.remove(key(f.path, f.dvId)); files.put(key(f.path, f.dvId), f.copy(dataChange = false))
      case r: RemoveFile => files.remove(key(r.path, r.dvId)); tombstones.put(key(r.path, r.dvId), r.copy(dataChange = false))
      case _ =>
    }
  }

  private def same(s: Snapshot, ref: Reference): Unit = {
    assert(s.numFiles == ref.files.size)
    assert(s.files.toSet == ref.files.values.toSet)
    assert(s.tombstones.toSet == ref.tombstones.values.toSet)
    assert(s.sizeInBytes == ref.files.values.map(_.size).sum)
  }

  test("replayed commit by commit from a shared base, every version equals the reference and stays unchanged") {
    val rnd = new Random(42)
    val ref = new Reference
    val first = (0 until 3000).map(i => addOf(i))
    first.foreach(ref.apply)
    var snap = Snapshot.of(table, 0L, seg, protocol, meta, first)
    same(snap, ref)
    val kept = mutable.ArrayBuffer.empty[(Snapshot, Set[AddFile], Set[RemoveFile])]
    var next = 3000
    (1 to 60).foreach { v =>
      val replay = Snapshot.Replay.from(snap)
      val live = ref.files.values.toIndexedSeq
      val actions = Seq.fill(rnd.nextInt(80)) {
        rnd.nextInt(5) match {
          case 0 | 1 => next += 1; addOf(next)
          case 2 if live.nonEmpty => live(rnd.nextInt(live.size)).remove(v.toLong)
          case 3 if live.nonEmpty => // a new deletion vector on a live file: remove the old entry, add the new
            val f = live(rnd.nextInt(live.size))
            val dv = DeletionVectorDescriptor("u", f"ab${rnd.nextInt(1000)}%03d" + "x" * 17, Some(1), 10, 1L)
            Seq(f.remove(v.toLong), f.copy(deletionVector = Some(dv)))
          case _ if ref.tombstones.nonEmpty => // a removed path comes back (RESTORE)
            val r = ref.tombstones.values.toIndexedSeq(rnd.nextInt(ref.tombstones.size))
            addOf(r.path.drop(r.path.indexOf("part-") + 5).take(5).toInt).copy(deletionVector = r.deletionVector)
          case _ => next += 1; addOf(next)
        }
      }.flatMap {
        case s: Seq[_] => s.asInstanceOf[Seq[Action]]
        case a: Action => Seq(a)
      }
      actions.foreach { a => ref.apply(a); replay.apply(a) }
      snap = replay.result(v.toLong, seg.copy(version = v.toLong))
      same(snap, ref)
      kept += ((snap, ref.files.values.toSet, ref.tombstones.values.toSet))
    }
    // Older snapshots were not touched by the replays that followed them (the base is shared, never changed).
    kept.foreach { case (s, files, tombstones) => assert(s.files.toSet == files && s.tombstones.toSet == tombstones) }
  }

  test("two snapshots replayed from the same one do not see each other's commits") {
    val base = Snapshot.of(table, 0L, seg, protocol, meta, (0 until 2000).map(i => addOf(i)))
    val a = { val r = Snapshot.Replay.from(base); r(addOf(1).remove(1L)); r(addOf(5000)); r.result(1L, seg) }
    val b = { val r = Snapshot.Replay.from(base); r(addOf(2).remove(1L)); r(addOf(6000)); r.result(1L, seg) }
    assert(base.numFiles == 2000)
    assert(a.files.map(_.path).toSet == base.files.map(_.path).toSet - addOf(1).path + addOf(5000).path)
    assert(b.files.map(_.path).toSet == base.files.map(_.path).toSet - addOf(2).path + addOf(6000).path)
  }

  test("relative, absolute and URI-encoded spellings of one file are one key; files elsewhere keep theirs") {
    def key(p: String) = FileSet.key(table, p, "")
    assert(key("p=1/a.parquet") == key("file:/data/t/p=1/a.parquet"))
    assert(key("p=1/a.parquet") == key("/data/t/p=1/a.parquet"))
    assert(key("p=1/a.parquet") == key("file:///data/t/p=1/a.parquet"))
    assert(key("p=a%20b/x.parquet") == key("file:/data/t/p=a%20b/x.parquet"))
    assert(key("p=a%20b/x.parquet") == key("p=a b/x.parquet"))
    assert(key("/other/x") == key("file:/other/x") && key("/other/x") != key("other/x"))
    assert(key("/data/tt/x") != key("tt/x"), "a sibling directory with a longer name is not under the table")
    assert(FileSet.key(table, "a.parquet", "u1") != key("a.parquet"))
  }

  test("a file costs under 200 bytes of state without its statistics") {
    val n = 100000
    val s = Snapshot.of(table, 0L, seg, protocol, meta, (0 until n).map(i => addOf(i)))
    val (all, withoutStats) = s.stateHeapBytes
    info(f"${all.toDouble / n}%.0f bytes a file, ${withoutStats.toDouble / n}%.0f without statistics")
    assert(withoutStats / n < 200)
    assert(all > withoutStats)
  }
}
