package io.strata.read.streaming

import java.util.Optional

import io.strata.config.StreamReadOptions
import io.strata.log.{AddFile, Metadata, TableLog}
import io.strata.read.SnapshotReader
import io.strata.table.TableSchema
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReaderFactory}
import org.apache.spark.sql.connector.read.streaming.{CompositeReadLimit, MicroBatchStream, Offset, ReadAllAvailable,
  ReadLimit, ReadMaxFiles, ReportsSourceMetrics, SupportsAdmissionControl, SupportsTriggerAvailableNow}
import org.apache.spark.sql.types.StructType

import scala.jdk.CollectionConverters._

/** A micro-batch may take at most this many bytes of files (option maxBytesPerTrigger; at least one file). */
final case class ReadMaxBytes(bytes: Long) extends ReadLimit

/**
 * Strata's streaming source: the rows a table's commits append, in commit order, micro-batch by micro-batch
 * ([[TableAppends]] decides which files each batch takes; this class is the Spark side). Offsets are
 * [[SourceOffset]]s; a batch reads its files through Spark's Parquet scan, with deletion vectors when the files
 * have them. Trigger.AvailableNow reads up to the version that was latest when the trigger started. The stream's
 * start is worked out once per run and, from its first micro-batch on, kept in the checkpoint ([[StreamStartRecord]]).
 */
final class StrataMicroBatchStream(log: TableLog, tableName: String, metadata: Metadata, metadataVersion: Long,
                                   options: StreamReadOptions, start: StreamStart, startRecord: StreamStartRecord)
    extends MicroBatchStream with SupportsAdmissionControl with SupportsTriggerAvailableNow with ReportsSourceMetrics {
  private val table = TableSchema.of(metadata)
  private val schema: StructType = table.schema
  private val dataSchema = StructType(schema.fields.filterNot(f => table.partitionColumns.contains(f.name)))
  private val appends = new TableAppends(log, tableName, metadata, options.skipChangeCommits,
    new ColumnChangeGuard(tableName, metadata, metadataVersion, options))
  /** Set by Trigger.AvailableNow: read nothing committed after this version. */
  @volatile private var lastVersionAllowed: Option[Long] = None
  @volatile private var latestSeen: Option[Long] = None
  @volatile private var lastBatch: Option[(Int, Long)] = None
  /**
   * The start [[initialOffset]] gave. Spark asks for it on every trigger until a first micro-batch is planned, and
   * again to run that batch; worked out anew each time, "latest" (or the current rows' snapshot) would move past
   * every commit that lands meanwhile, and batch 0 could read other files than it was planned with.
   */
  @volatile private var resolvedStart: Option[SourceOffset] = None

  private def index(files: Seq[AddFile], version: Long, deletionVectors: Boolean) = SnapshotReader.filesIndex(
    SparkSession.active, log.tablePath, metadata, version, files, deletionVectors)

  private lazy val readerFactory: PartitionReaderFactory = StreamScans.readerFactory(SparkSession.active,
    dv => index(Nil, -1L, dv), schema, dataSchema)

  override def initialOffset(): Offset = synchronized {
    resolvedStart.getOrElse {
      val s = startRecord.read().getOrElse(appends.startOffset(start))
      resolvedStart = Some(s)
      s
    }
  }
  override def deserializeOffset(json: String): Offset = SourceOffset.fromJson(json)
  override def commit(end: Offset): Unit = appends.committed(offset(end))
  override def stop(): Unit = ()

  override def latestOffset(): Offset = throw new UnsupportedOperationException(
    "Strata's streaming source takes a read limit: latestOffset(start, limit)")

  override def getDefaultReadLimit: ReadLimit = {
    val files = options.maxFilesPerTrigger.map(_.toLong)
      .orElse(if (options.maxBytesPerTrigger.isEmpty) Some(StreamReadOptions.DefaultMaxFiles.toLong) else None)
    (files.map(n => ReadLimit.maxFiles(n.toInt)).toSeq ++ options.maxBytesPerTrigger.map(ReadMaxBytes)) match {
      case Seq(one) => one
      case both => ReadLimit.compositeLimit(both.toArray)
    }
  }

  override def prepareForTriggerAvailableNow(): Unit = lastVersionAllowed = Some(appends.latestVersion())

  /** The end of the next micro-batch, or null when no file (and no skippable commit) is new. */
  override def latestOffset(startOffset: Offset, limit: ReadLimit): Offset = {
    val from = offset(startOffset)
    val latest = appends.latestVersion()
    latestSeen = Some(latest)
    val end = appends.advance(from, admission(limit), lastVersionAllowed.fold(latest)(math.min(_, latest)))
    if (end == from) null else {
      // The first batch: Spark logs its end next, and after a restart runs it again from initialOffset().
      if (resolvedStart.contains(from)) startRecord.record(from)
      end
    }
  }

  override def planInputPartitions(start: Offset, end: Offset): Array[InputPartition] = {
    val to = offset(end)
    val files = appends.filesBetween(offset(start), to)
    lastBatch = Some(files.size -> files.iterator.map(_.size).sum)
    if (files.isEmpty) Array.empty else StreamScans.partitions(SparkSession.active,
      index(files, to.version, files.exists(_.deletionVector.isDefined)), schema, dataSchema)
  }

  override def createReaderFactory(): PartitionReaderFactory = readerFactory

  /** In StreamingQueryProgress.sources(i).metrics. */
  override def metrics(latestConsumedOffset: Optional[Offset]): java.util.Map[String, String] = {
    val consumed = Option(latestConsumedOffset.orElse(null)).map(offset)
    (consumed.map(o => "tableVersion" -> (if (o.initial || o.index > 0) o.version else o.version - 1).toString) ++
      latestSeen.map(v => "latestTableVersion" -> v.toString) ++
      lastBatch.toSeq.flatMap { case (n, bytes) => Seq("numFiles" -> n.toString, "numBytes" -> bytes.toString) } ++
      Seq("numChangeCommitsSkipped" -> appends.changeCommitsSkipped.toString)).toMap.asJava
  }

  override def toString: String = s"StrataSource[$tableName]"

  private def offset(o: Offset): SourceOffset = o match {
    case s: SourceOffset => s
    case other => SourceOffset.fromJson(other.json())
  }

  private def admission(limit: ReadLimit): AdmissionLimit = limit match {
    case _: ReadAllAvailable => AdmissionLimit.Unlimited
    case f: ReadMaxFiles => AdmissionLimit(Some(f.maxFiles().toLong), None)
    case ReadMaxBytes(b) => AdmissionLimit(None, Some(b))
    case c: CompositeReadLimit => c.getReadLimits.map(admission).foldLeft(AdmissionLimit.Unlimited) { (a, b) =>
      AdmissionLimit(a.maxFiles.orElse(b.maxFiles), a.maxBytes.orElse(b.maxBytes))
    }
    case other => throw new IllegalArgumentException(s"Strata's streaming source cannot apply read limit $other")
  }
}
