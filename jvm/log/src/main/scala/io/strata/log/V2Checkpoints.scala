package io.strata.log

import org.apache.hadoop.fs.Path

/**
 * Reading V2 checkpoints (PROTOCOL.md, "V2 Spec" and "Sidecar Files"): a UUID-named checkpoint
 * (`n.checkpoint.<uuid>.parquet` or `.json`), or a classic-named one in the V2 spec, holds the table's non-file
 * actions, a `checkpointMetadata` action and `sidecar` actions; each sidecar, a Parquet file under
 * `_delta_log/_sidecars`, holds some of its adds and removes. The checkpoint's actions are its own rows followed by
 * every sidecar's. A missing or unreadable sidecar makes the checkpoint unreadable (replay then starts from an older
 * starting point, or fails naming the file).
 */
private[log] object V2Checkpoints {
  val SidecarKey = "sidecar"
  val SidecarDir = "_sidecars"
  val MetadataKey = "checkpointMetadata"
  val PolicyKey = "delta.checkpointPolicy"

  /** Whether checkpoints of this table are written in the V2 spec: `delta.checkpointPolicy = v2` and the feature. */
  def writes(s: Snapshot): Boolean =
    TableFeatures.V2Checkpoint.isUsedBy(s.metadata) && TableFeatures.V2Checkpoint.supportedBy(s.protocol)

  /** The `checkpointMetadata` action of a V2 checkpoint of `version`. */
  def metadataAction(version: Long): Action =
    UnknownAction(MetadataKey, ActionCodec.mapper.createObjectNode().put("version", version))

  /** A UUID-named checkpoint file of `version`. */
  def uuidPath(logPath: Path, version: Long): Path =
    new Path(logPath, f"$version%020d.checkpoint.${java.util.UUID.randomUUID()}.parquet")

  /** A reader of one checkpoint file that also reads the sidecars it names. */
  def reader(store: LogStore, logPath: Path): Path => Iterator[Action] = path => {
    val top = if (path.getName.endsWith(".json")) store.read(path).iterator.map(ActionCodec.parse)
      else store.readCheckpoint(path)
    val sidecars = Vector.newBuilder[Path]
    val own = top.filter {
      case u: UnknownAction if u.key == SidecarKey => sidecars += sidecarPath(logPath, u); false
      case _ => true
    }
    // The top file is read to its end before the first sidecar is opened (the sidecar list is complete then).
    own ++ Iterator.single(()).flatMap(_ => sidecars.result().iterator.flatMap(store.readCheckpoint))
  }

  /** A sidecar action's file: its `path`, relative to `_delta_log/_sidecars` (or absolute). */
  private def sidecarPath(logPath: Path, sidecar: UnknownAction): Path = {
    val raw = Option(sidecar.json.get("path")).filter(_.isTextual).map(_.asText).getOrElse(
      throw MalformedActionException("STRATA_MALFORMED_ACTION", s"A sidecar action has no path: ${sidecar.json}"))
    val p = new Path(new java.net.URI(raw))
    if (p.isAbsolute || p.toUri.getScheme != null) p else new Path(new Path(logPath, SidecarDir), p)
  }
}
