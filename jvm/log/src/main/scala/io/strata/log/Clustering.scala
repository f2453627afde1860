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
   * Strata's tag on a file its OPTIMIZE clustered: the clustering columns (domain JSON) it was clustered by, so a
   * CLUSTER BY change makes the file eligible again. A `liquid` file without it (delta-spark's) counts as clustered
   * by the current columns.
   */
  val ColumnsTag = "strata.clusteringColumns"

  /** The protocol a clustered table needs at least (writer version 7 with both features). */
  val protocol: Protocol = Protocol(1, 7, None, Some(Set(Feature, DomainWrites.Feature)))

  def supported(p: Protocol): Boolean = p.writerFeatures.exists(_(Feature))

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

  /** `add` as written by a clustering by `columns`: provider `liquid` and Strata's columns tag. */
  def clustered(add: AddFile, columns: Seq[Seq[String]]): AddFile = {
    val extra = add.extra.map(_.deepCopy()).getOrElse(ActionCodec.mapper.createObjectNode())
    extra.put("clusteringProvider", Provider)
    add.copy(extra = Some(extra), tags = add.tags + (ColumnsTag -> encode(columns)))
  }

  def provider(add: AddFile): Option[String] =
    add.extra.flatMap(e => Option(e.get("clusteringProvider"))).filterNot(_.isNull).map(_.asText)

  /**
   * Whether `add` is already clustered by `columns`: written by a `liquid` clustering, by these columns when Strata
   * wrote it (its tag), or by delta-spark (no tag: it keeps no record of the columns, and reclusters such files only
   * when asked for a full OPTIMIZE).
   */
  def clusteredBy(add: AddFile, columns: Seq[Seq[String]]): Boolean =
    provider(add).contains(Provider) && add.tags.get(ColumnsTag).forall(t => decode(t) == columns)

}
