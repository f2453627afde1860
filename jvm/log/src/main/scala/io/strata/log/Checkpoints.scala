package io.strata.log

import com.fasterxml.jackson.databind.JsonNode
import com.fasterxml.jackson.databind.node.{JsonNodeFactory, ObjectNode}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.parquet.example.data.Group
import org.apache.parquet.example.data.simple.SimpleGroupFactory
import org.apache.parquet.example.data.simple.convert.GroupRecordConverter
import org.apache.parquet.HadoopReadOptions
import org.apache.parquet.hadoop.{ParquetFileReader, ParquetFileWriter}
import org.apache.parquet.hadoop.example.ExampleParquetWriter
import org.apache.parquet.hadoop.metadata.CompressionCodecName
import org.apache.parquet.hadoop.util.{HadoopInputFile, HadoopOutputFile}
import org.apache.parquet.io.ColumnIOFactory
import org.apache.parquet.schema.{GroupType, LogicalTypeAnnotation, MessageType, MessageTypeParser, Type}
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName._

import scala.jdk.CollectionConverters._

/**
 * Classic Parquet checkpoints (PROTOCOL.md, "Checkpoints"): one row per action, one struct column per action type.
 * Rows are converted to and from the same JSON objects the commit files hold, so one codec ([[ActionCodec]])
 * decides what an action means, whichever file it came from.
 */
object Checkpoints {
  private val nodes = JsonNodeFactory.instance

  /**
   * What a failure `e` reading checkpoint file `file` means, wherever it is read (the driver's replay, a task of the
   * distributed state): a malformed action or an unreadable file is a corrupt log naming the file; any other Strata
   * error stands as it is.
   */
  def readFailure(file: Path, e: Throwable): StrataException = e match {
    case m: MalformedActionException => CorruptLogException("STRATA_CORRUPT_LOG",
      s"Checkpoint file $file holds a malformed action: ${m.messageText}.", m)
    case s: StrataException => s
    case other => CorruptLogException("STRATA_CORRUPT_LOG", s"Checkpoint file $file is unreadable: $other.", other)
  }

  /** The action columns of a checkpoint; everything else in a checkpoint file is ignored on read. */
  val ActionColumns: Seq[String] = Seq("txn", "add", "remove", "metaData", "protocol", "domainMetadata")
  /** Read too: a V2 checkpoint's `sidecar` rows (their files hold its adds and removes, [[V2Checkpoints]]). */
  private val ReadColumns: Seq[String] = ActionColumns :+ V2Checkpoints.SidecarKey

  private val stringMap = "optional group %s (MAP) { repeated group key_value { required binary key (STRING); " +
    "optional binary value (STRING); } }"
  private val stringList = "optional group %s (LIST) { repeated group list { optional binary element (STRING); } }"
  private val deletionVector = "optional group deletionVector { optional binary storageType (STRING); " +
    "optional binary pathOrInlineDv (STRING); optional int32 offset; optional int32 sizeInBytes; " +
    "optional int64 cardinality; optional int64 maxRowIndex; }"

  /** The checkpoint schema Strata writes: what delta-spark writes, minus columns for features Strata does not write. */
  val WriteSchema: MessageType = MessageTypeParser.parseMessageType(
    s"""message checkpoint {
       |  optional group txn { optional binary appId (STRING); optional int64 version; optional int64 lastUpdated; }
       |  optional group add { optional binary path (STRING); ${stringMap.format("partitionValues")}
       |    optional int64 size; optional int64 modificationTime; optional boolean dataChange;
       |    ${stringMap.format("tags")} $deletionVector optional binary stats (STRING); optional int64 baseRowId;
       |    optional int64 defaultRowCommitVersion; optional binary clusteringProvider (STRING); }
       |  optional group remove { optional binary path (STRING); optional int64 deletionTimestamp;
       |    optional boolean dataChange; optional boolean extendedFileMetadata; ${stringMap.format("partitionValues")}
       |    optional int64 size; ${stringMap.format("tags")} $deletionVector optional int64 baseRowId;
       |    optional int64 defaultRowCommitVersion; }
       |  optional group metaData { optional binary id (STRING); optional binary name (STRING);
       |    optional binary description (STRING);
       |    optional group format { optional binary provider (STRING); ${stringMap.format("options")} }
       |    optional binary schemaString (STRING); ${stringList.format("partitionColumns")}
       |    ${stringMap.format("configuration")} optional int64 createdTime; }
       |  optional group protocol { optional int32 minReaderVersion; optional int32 minWriterVersion;
       |    ${stringList.format("readerFeatures")} ${stringList.format("writerFeatures")} }
       |  optional group domainMetadata { optional binary domain (STRING); optional binary configuration (STRING);
       |    optional boolean removed; }
       |}""".stripMargin)

  /**
   * Columns of a checkpoint's add/remove that are no action fields (PROTOCOL.md, "Checkpoint Schema": typed copies of
   * `stats` and `partitionValues`). Not even read ([[withoutTypedCopies]]), so that an entry re-emitted into a JSON
   * commit (RESTORE, a new deletion vector) carries only protocol fields, never a `stats_parsed` contradicting its
   * new `stats`.
   */
  private val CheckpointOnlyFields = Seq("stats_parsed", "partitionValues_parsed")

  /** Fields as a Java list with constant-time `get` (Parquet's GroupType indexes its fields on every value read). */
  private def arrayList(fields: Iterable[Type]): java.util.List[Type] = new java.util.ArrayList[Type](fields.asJavaCollection)

  /**
   * An action column without the checkpoint-only typed copies (not read: `stats_parsed` can be most bytes), except
   * add's `stats_parsed` when `keepParsedStats`: some add rows have no JSON `stats` ([[CheckpointRows]] then takes
   * their statistics from it).
   */
  private def withoutTypedCopies(t: Type, keepParsedStats: Boolean): Type = t match {
    case g: GroupType if g.getFields.asScala.exists(f => CheckpointOnlyFields.contains(f.getName)) =>
      def dropped(name: String) =
        CheckpointOnlyFields.contains(name) && !(keepParsedStats && g.getName == "add" && name == "stats_parsed")
      g.withNewFields(arrayList(g.getFields.asScala.filterNot(f => dropped(f.getName))))
    case other => other
  }

  /**
   * Whether some add row of the file may lack JSON `stats`: the column is missing, or a row group's `add.stats`
   * chunk has more nulls than its `add.path` chunk (or does not say how many). Delta-spark writes such files with
   * `delta.checkpoint.writeStatsAsJson=false`.
   */
  private def addRowsMayLackStats(footer: org.apache.parquet.hadoop.metadata.ParquetMetadata): Boolean = {
    val stats = "add.stats"; val path = "add.path"
    footer.getBlocks.asScala.exists { block =>
      val chunks = block.getColumns.asScala.map(c => c.getPath.toDotString -> c).toMap
      (chunks.get(stats), chunks.get(path)) match {
        case (None, Some(_)) => true
        case (Some(s), Some(p)) =>
          def nulls(c: org.apache.parquet.hadoop.metadata.ColumnChunkMetaData): Long = {
            val st: org.apache.parquet.column.statistics.Statistics[_] = c.getStatistics
            if (st == null || !st.isNumNullsSet) -1L else st.getNumNulls
          }
          val (sn, pn) = (nulls(s), nulls(p))
          sn < 0 || pn < 0 || sn > pn
        case _ => false
      }
    }
  }

  /**
   * The actions of one checkpoint file (one part of a multi-part checkpoint), read a row group at a time as the
   * iterator is consumed (a million-file checkpoint is never all in memory as actions). `add` rows are decoded
   * straight from their Parquet fields; the other, rarer rows go through their JSON form.
   */
  def read(path: Path, conf: Configuration): Iterator[Action] = read(path, conf, ReadColumns)

  /**
   * As [[read]], reading only the action columns named in `columns` (a subset of [[ActionColumns]] and `sidecar`): the others are
   * not even decoded from Parquet (a table's protocol and metadata without its million `add` rows, or only its
   * file actions for a distributed replay).
   */
  def read(path: Path, conf: Configuration, columns: Seq[String]): Iterator[Action] = {
    // Read options from `conf` itself: ParquetFileReader.open(file) alone builds a fresh Hadoop Configuration and
    // parses its default XML resources on every call (tens of milliseconds per checkpoint read).
    val reader = ParquetFileReader.open(HadoopInputFile.fromPath(path, conf), HadoopReadOptions.builder(conf).build())
    try {
      val fileSchema = reader.getFooter.getFileMetaData.getSchema
      val keepParsedStats = addRowsMayLackStats(reader.getFooter)
      val wanted = fileSchema.getFields.asScala.filter(f => columns.contains(f.getName))
        .map(withoutTypedCopies(_, keepParsedStats)).toSeq
      val projection = new MessageType(fileSchema.getName, arrayList(wanted))
      reader.setRequestedSchema(projection)
      val addColumn = wanted.indexWhere(_.getName == "add")
      val addRows = if (addColumn < 0) null else new CheckpointRows(projection.getType(addColumn).asGroupType)
      new RowGroupActions(reader, projection, fileSchema, wanted.map(_.getName).toArray, addColumn, addRows)
    } catch { case e: Throwable => reader.close(); throw e }
  }

  /** The actions of a checkpoint's rows, in order, one row at a time; closes the file after the last (or on an error). */
  private final class RowGroupActions(reader: ParquetFileReader, projection: MessageType, fileSchema: MessageType,
                                      columns: Array[String], addColumn: Int,
                                      addRows: CheckpointRows) extends Iterator[Action] with AutoCloseable {
    private var records: org.apache.parquet.io.RecordReader[Group] = null
    private var rowsLeft = 0L
    private var pending: Action = null // a row holds one action (a row of several gives them in column order)
    private val more = scala.collection.mutable.Queue.empty[Action]
    private var done = false

    def hasNext: Boolean = {
      try {
        while (pending == null && more.isEmpty && !done) {
          if (rowsLeft == 0) {
            val rowGroup = reader.readNextRowGroup()
            if (rowGroup == null) { done = true; reader.close() }
            else {
              records = new ColumnIOFactory().getColumnIO(projection, fileSchema)
                .getRecordReader(rowGroup, new GroupRecordConverter(projection))
              rowsLeft = rowGroup.getRowCount
            }
          } else {
            rowsLeft -= 1
            decode(records.read())
          }
        }
      } catch { case e: Throwable => done = true; reader.close(); throw e }
      pending != null || more.nonEmpty
    }

    /** Closes the file early (a reader that stops before the end). */
    def close(): Unit = if (!done) { done = true; reader.close() }

    def next(): Action = {
      if (!hasNext) throw new NoSuchElementException("checkpoint exhausted")
      if (pending != null) { val a = pending; pending = null; a } else more.dequeue()
    }

    private def decode(row: Group): Unit = {
      var c = 0
      while (c < columns.length) {
        if (row.getFieldRepetitionCount(c) > 0) {
          val g = row.getGroup(c, 0)
          val a = if (c == addColumn) addRows.add(g)
            else ActionCodec.fromJson(columns(c), groupToJson(g).asInstanceOf[ObjectNode])
          if (pending == null) pending = a else more.enqueue(a)
        }
        c += 1
      }
    }
  }

  /**
   * How a checkpoint's rows are written: the typed copies of add's statistics and partition values
   * (`delta.checkpoint.writeStatsAsStruct`), and whether the JSON `stats` column is filled
   * (`delta.checkpoint.writeStatsAsJson`; when not, it stays null).
   */
  final case class Format(structs: Option[CheckpointStructs] = None, statsAsJson: Boolean = true, v2: Boolean = false) {
    lazy val schema: MessageType = {
      val base = structs.filter(_.fields.nonEmpty) match {
        case None => WriteSchema
        case Some(s) => new MessageType(WriteSchema.getName, arrayList(WriteSchema.getFields.asScala.map { f =>
          if (f.getName != "add") f else f.asGroupType.withNewFields(arrayList(f.asGroupType.getFields.asScala ++ s.fields))
        }))
      }
      // A V2-spec checkpoint (PROTOCOL.md, "V2 Spec") also has its checkpointMetadata row.
      if (!v2) base else new MessageType(base.getName, arrayList(base.getFields.asScala :+ CheckpointMetadataType))
    }
  }
  private val CheckpointMetadataType: Type = MessageTypeParser.parseMessageType(
    s"message m { optional group ${V2Checkpoints.MetadataKey} { optional int64 version; ${stringMap.format("tags")} } }")
    .getType(0)
  object Format { val Default: Format = Format() }

  /** Writes `actions` as one checkpoint file at `path` (which must not exist). Returns its size in bytes. */
  def write(path: Path, actions: Iterator[Action], conf: Configuration, format: Format = Format.Default): Long = {
    val schema = format.schema
    val factory = new SimpleGroupFactory(schema)
    val writer = ExampleParquetWriter.builder(HadoopOutputFile.fromPath(path, conf))
      .withType(schema).withConf(conf).withCompressionCodec(CompressionCodecName.SNAPPY)
      .withWriteMode(ParquetFileWriter.Mode.CREATE).build()
    val columns = (ActionColumns :+ V2Checkpoints.MetadataKey).filter(schema.containsField)
      .map(k => k -> schema.getType(schema.getFieldIndex(k)).asGroupType).toMap
    val adds = new AddRows(columns("add"), format)
    val addColumn = schema.getFieldIndex("add")
    try actions.foreach {
      case add: AddFile => // nearly every row: straight into its fields, no JSON tree
        val row = factory.newGroup()
        adds.fill(row.addGroup(addColumn), add)
        writer.write(row)
      case a =>
        val key = ActionCodec.key(a)
        columns.get(key).foreach { t =>
          val row = factory.newGroup()
          fillGroup(row.addGroup(key), t, ActionCodec.toJson(a))
          writer.write(row)
        }
    } finally writer.close()
    path.getFileSystem(conf).getFileStatus(path).getLen
  }

  /** Writes add actions into the `add` column `t` as [[fillGroup]] would write their JSON form. */
  private final class AddRows(t: GroupType, format: Format) {
    private val Seq(path, partitionValues, size, mtime, dataChange, tags, dv, stats) =
      Seq("path", "partitionValues", "size", "modificationTime", "dataChange", "tags", "deletionVector", "stats")
        .map(t.getFieldIndex)
    private val dvType = t.getType(dv).asGroupType
    /** Fields a commit's add may carry that Strata does not model (row tracking, clustering): kept from `extra`. */
    private val extraFields = Seq("baseRowId", "defaultRowCommitVersion", "clusteringProvider")
      .filter(t.containsField).map(n => n -> t.getFieldIndex(n))

    def fill(g: Group, a: AddFile): Unit = {
      g.add(path, a.path)
      val pv = g.addGroup(partitionValues)
      a.partitionValues.foreach { case (k, v) => val kv = pv.addGroup(0); kv.add(0, k); v.foreach(kv.add(1, _)) }
      g.add(size, a.size); g.add(mtime, a.modificationTime); g.add(dataChange, a.dataChange)
      if (a.tags.nonEmpty) {
        val m = g.addGroup(tags)
        a.tags.foreach { case (k, v) => val kv = m.addGroup(0); kv.add(0, k); kv.add(1, v) }
      }
      a.deletionVector.foreach(d => fillGroup(g.addGroup(dv), dvType, d.toJson))
      if (format.statsAsJson) a.stats.foreach(g.add(stats, _))
      a.extra.foreach { e =>
        extraFields.foreach { case (name, f) =>
          val v = e.get(name)
          if (v != null && !v.isNull) {
            if (t.getType(f).asPrimitiveType.getPrimitiveTypeName == INT64) g.add(f, v.asLong)
            else g.add(f, v.asText)
          }
        }
      }
      format.structs.foreach(_.fill(g, t, a))
    }
  }

  // ---- Parquet group <-> JSON ------------------------------------------------------------------------------------

  private def isMap(t: GroupType) =
    t.getLogicalTypeAnnotation == LogicalTypeAnnotation.mapType() ||
      t.getOriginalType == org.apache.parquet.schema.OriginalType.MAP_KEY_VALUE
  private def isList(t: GroupType) = t.getLogicalTypeAnnotation == LogicalTypeAnnotation.listType()

  private[log] def groupToJson(g: Group): JsonNode = {
    val t = g.getType
    if (isMap(t)) {
      val o = nodes.objectNode()
      (0 until g.getFieldRepetitionCount(0)).foreach { i =>
        val kv = g.getGroup(0, i)
        val k = kv.getString(0, 0)
        if (kv.getFieldRepetitionCount(1) > 0) o.set[JsonNode](k, valueToJson(kv, 1, 0)) else o.putNull(k)
      }
      o
    } else if (isList(t)) {
      val a = nodes.arrayNode()
      (0 until g.getFieldRepetitionCount(0)).foreach { i =>
        val rep = t.getType(0)
        if (rep.isPrimitive) a.add(valueToJson(g, 0, i)) // two-level legacy list
        else {
          val elem = g.getGroup(0, i)
          if (elem.getFieldRepetitionCount(0) > 0) a.add(valueToJson(elem, 0, 0)) else a.addNull()
        }
      }
      a
    } else {
      val o = nodes.objectNode()
      (0 until t.getFieldCount).foreach { f =>
        if (g.getFieldRepetitionCount(f) > 0) o.set[JsonNode](t.getFieldName(f), valueToJson(g, f, 0))
      }
      o
    }
  }

  private def valueToJson(g: Group, field: Int, index: Int): JsonNode = {
    val t: Type = g.getType.getType(field)
    if (!t.isPrimitive) groupToJson(g.getGroup(field, index))
    else t.asPrimitiveType.getPrimitiveTypeName match {
      case BINARY | FIXED_LEN_BYTE_ARRAY => nodes.textNode(g.getString(field, index))
      case INT32 => nodes.numberNode(g.getInteger(field, index))
      case INT64 => nodes.numberNode(g.getLong(field, index))
      case BOOLEAN => nodes.booleanNode(g.getBoolean(field, index))
      case DOUBLE => nodes.numberNode(g.getDouble(field, index))
      case FLOAT => nodes.numberNode(g.getFloat(field, index))
      case INT96 => nodes.nullNode()
    }
  }

  private def fillGroup(g: Group, t: GroupType, json: JsonNode): Unit = {
    if (isMap(t)) {
      json.properties.asScala.foreach { e =>
        val kv = g.addGroup(0)
        kv.add(0, e.getKey)
        if (!e.getValue.isNull) kv.add(1, e.getValue.asText)
      }
    } else if (isList(t)) {
      json.elements.asScala.foreach { v =>
        val elem = g.addGroup(0)
        if (!v.isNull) elem.add(0, v.asText)
      }
    } else {
      (0 until t.getFieldCount).foreach { f =>
        val v = json.get(t.getFieldName(f))
        if (v != null && !v.isNull) {
          val ft = t.getType(f)
          if (!ft.isPrimitive) fillGroup(g.addGroup(f), ft.asGroupType, v)
          else ft.asPrimitiveType.getPrimitiveTypeName match {
            case BINARY => g.add(f, v.asText)
            case INT32 => g.add(f, v.asInt)
            case INT64 => g.add(f, v.asLong)
            case BOOLEAN => g.add(f, v.asBoolean)
            case other => throw new IllegalStateException(s"checkpoint schema has unexpected type $other")
          }
        }
      }
    }
  }
}
