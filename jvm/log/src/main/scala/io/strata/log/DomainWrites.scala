package io.strata.log

/**
 * The writer rules of PROTOCOL.md, "Domain Metadata", checked on the actions a commit stages: a domain may be written
 * only when the protocol lists the `domainMetadata` writer feature, at most once per commit, and never a
 * system-controlled (`delta.`) domain other than those of features Strata writes ([[Clustering.Domain]]). Domains a commit does
 * not name are kept as they are: replay carries them, and checkpoints write them ([[Snapshot.checkpointActions]]).
 */
private[log] object DomainWrites {
  val Feature = "domainMetadata"

  def validate(actions: Seq[Action], protocol: Protocol, table: String): Unit = {
    val domains = actions.collect { case d: DomainMetadata => d }
    if (domains.isEmpty) return
    if (!TableFeatures.DomainMetadata.supportedBy(protocol)) throw UnsupportedProtocolException(
      "STRATA_UNSUPPORTED_PROTOCOL",
      s"Table $table: writing metadata domain(s) ${domains.map(_.domain).distinct.mkString(", ")} needs the writer " +
        s"feature $Feature in the table's protocol; set the table property delta.feature.$Feature = 'supported'.")
    domains.groupBy(_.domain).collectFirst { case (d, ds) if ds.size > 1 => d }.foreach { d =>
      throw new IllegalArgumentException(s"Metadata domain '$d' appears twice in one commit of $table.")
    }
    // System domains of the features Strata writes: allowed only where the protocol has their feature.
    domains.find(d => d.domain == Clustering.Domain && !Clustering.supported(protocol)).foreach { d =>
      throw UnsupportedProtocolException("STRATA_UNSUPPORTED_PROTOCOL", s"Table $table: writing metadata domain " +
        s"${d.domain} needs the writer feature ${Clustering.Feature}; cluster the table with CLUSTER BY instead.")
    }
    domains.find(d => d.domain.startsWith("delta.") && d.domain != Clustering.Domain).foreach { d =>
      throw new IllegalArgumentException(s"Metadata domain '${d.domain}' of $table is system-controlled (the " +
        "'delta.' prefix belongs to table features): Strata does not write it; use a domain name of your own.")
    }
  }
}
