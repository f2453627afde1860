package io.strata.log

import com.fasterxml.jackson.databind.node.ArrayNode

import scala.jdk.CollectionConverters._

/**
 * Liquid clustering in the log (PROTOCOL.md, "Clustered Table"): the writer feature `clustering` (it needs
 * `domainMetadata`), the system domain `delta.clustering` holding the clustering columns as delta-spark writes it,
 * `{"clusteringColumns":[["col"],["s","nested"]]}` (each column a path of physical names; PROTOCOL.md's example
 * spells a column as one string, which is read too), and the `clusteringProvider` of files a clustering wrote.
 */
object Clustering {
  val Feature = "clustering"
  val Domain = "delta.clustering"
  /** delta-spark's provider name: its OPTIMIZE reclusters only files with this provider or none (PROTOCOL.md). */
  val Provider = "liquid"
  /**
   * delta-spark's ZCube tags on a file a clustering wrote: the cube (one OPTIMIZE job's output) it belongs to, the
   * logical clustering column names it was clustered by (a JSON array, as Spark's `FieldReference` prints them:
   * `s.a`, `` `a b` ``), and the curve. Its incremental OPTIMIZE leaves large cubes of the current columns alone.
   * delta-spark 4.x writes no curve tag (it reads none either; it lays cubes of two or more columns out by the
   * Hilbert curve); Strata writes the curve it used in the tag delta-spark defines for it: `hilbert`, or `zorder`
   * for one column.
   */
  val CubeIdTag = "ZCUBE_ID"
  val CubeColumnsTag = "ZCUBE_ZORDER_BY"
  val CubeCurveTag = "ZCUBE_ZORDER_CURVE"

  /** The protocol a clustered table needs at least (writer version 7 with both features). */
  val protocol: Protocol = Protocol(1, 7, None, Some(Set(Feature, DomainWrites.Feature)))

  def supported(p: Protocol): Boolean = TableFeatures.ClusteringFeature.supportedBy(p)

  /** The clustering columns (physical paths) of a table; None when it has no clustering domain. */
  def columns(domains: Map[String, DomainMetadata]): Option[Seq[Seq[String]]] =
    domains.get(Domain).filterNot(_.removed).map(d => decode(d.configuration))

  def columns(snapshot: Snapshot): Seq[Seq[String]] = columns(snapshot.domains).getOrElse(Nil)

  def decode(configuration: String): Seq[Seq[String]] = {
    val node = ActionCodec.mapper.readTree(configuration).get("clusteringColumns")
    if (node == null || node.isNull) Nil
    else node.elements().asScala.map { c =>
      if (c.isArray) c.elements().asScala.map(_.asText).toSeq else Seq(c.asText)
    }.toSeq
  }

  def encode(columns: Seq[Seq[String]]): String = {
    val root = ActionCodec.mapper.createObjectNode()
    val cols = root.putArray("clusteringColumns")
    columns.foreach(c => c.foldLeft(cols.addArray())((a: ArrayNode, part) => a.add(part)))
    ActionCodec.mapper.writeValueAsString(root)
  }

  def domain(columns: Seq[Seq[String]]): DomainMetadata = DomainMetadata(Domain, encode(columns), removed = false)

  /**
   * `add` as written into cube `cubeId` by a clustering by `names` (logical) along `curve` (`hilbert`, `zorder`):
   * provider `liquid` and the cube tags.
   */
  def clustered(add: AddFile, cubeId: String, names: Seq[String], curve: String): AddFile = {
    val extra = add.extra.map(_.deepCopy()).getOrElse(ActionCodec.mapper.createObjectNode())
    extra.put("clusteringProvider", Provider)
    add.copy(extra = Some(extra), tags = add.tags ++ Map(CubeIdTag -> cubeId,
      CubeColumnsTag -> ActionCodec.mapper.writeValueAsString(names.toArray), CubeCurveTag -> curve))
  }

  def provider(add: AddFile): Option[String] =
    add.extra.flatMap(e => Option(e.get("clusteringProvider"))).filterNot(_.isNull).map(_.asText)

  /** The cube `add` belongs to and the logical column names it was clustered by; None when not in a cube. */
  def cube(add: AddFile): Option[(String, Seq[String])] = for {
    id <- add.tags.get(CubeIdTag)
    json <- add.tags.get(CubeColumnsTag)
    names <- scala.util.Try(ActionCodec.mapper.readTree(json)).toOption.filter(_.isArray)
  } yield (id, names.elements().asScala.map(_.asText).toSeq)
}
