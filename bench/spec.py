"""What the benchmark measures: systems, workloads, sizes and the settings that make the systems comparable.

Shared by the driver (run.py), the Spark applications (app.py) and the report (report.py). Nothing here imports
Spark.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

# Peer versions (jars from Maven Central into bench/cache/jars; nothing of theirs is committed).
# The issue asked for delta-spark 4.4.1; Maven Central's newest io.delta:delta-spark_4.1_2.13 is 4.4.0 (checked with
# mvn against maven-metadata.xml: 4.1.0, 4.2.0, 4.3.0, 4.3.1, 4.4.0), so the benchmark uses 4.4.0.
DELTA_VERSION = "4.4.0"
DELTA_VERSION_REQUESTED = "4.4.1"
ICEBERG_VERSION = "1.11.0"
DELTA_JARS = (f"delta-spark_4.1_2.13-{DELTA_VERSION}.jar", f"delta-storage-{DELTA_VERSION}.jar")
ICEBERG_JARS = (f"iceberg-spark-runtime-4.1_2.13-{ICEBERG_VERSION}.jar",)

# The systems, each in its own Spark application. "noop" is the data-generation control (Spark's noop sink); it
# runs inside the parquet application.
SYSTEMS = ("parquet", "strata-v1", "strata-v2", "delta", "iceberg")
CONTROL = "noop"
LABELS = {
    "noop": "noop sink (data generation)",
    "parquet": "Spark Parquet",
    "strata-v1": "Strata V1",
    "strata-v2": "Strata V2",
    "delta": f"delta-spark {DELTA_VERSION}",
    "iceberg": f"Iceberg {ICEBERG_VERSION}",
}
STRATA = ("strata-v1", "strata-v2")
PEERS = ("delta", "iceberg")


@dataclass(frozen=True)
class Workload:
    key: str
    title: str
    definition: str
    # Systems that run it; any other system is reported with `not_applicable` (never silently missing).
    systems: tuple[str, ...]
    not_applicable: str | dict[str, str] = ""  # one reason for all, or one per system
    control: bool = False  # the noop control runs too
    dml: bool = False  # workloads 7 and 8: timed in the first `--dml-rounds` rounds only
    dv: bool = False  # workloads 8: deletion vectors / merge-on-read (bench/dml_dv.py)
    zorder: bool = False  # workload 9: Z-order OPTIMIZE (bench/zorder.py); timed in the `--dml-rounds` rounds
    streaming: bool = False  # workload 10: streaming sink (bench/streaming.py); timed in the `--dml-rounds` rounds
    # Where a run of this workload alone writes its results (bench/results/<results>/) unless --out says otherwise;
    # "" = bench/results itself.
    results: str = ""

    @property
    def few_rounds(self) -> bool:
        """Timed in the first `--dml-rounds` rounds only (each round costs much more than it shows)."""
        return self.dml or self.zorder or self.streaming


NO_LOG = "n/a: no transaction log"
DML_SYSTEMS = ("strata-v2", "delta", "iceberg")
# Strata's DML is SQL on the table, which Spark plans through the catalog (the V2 path) whichever writer built it:
# a Strata V1 row would run the very same statement as Strata V2.
NO_DML = {"parquet": "n/a: no row-level operations",
          "strata-v1": "n/a: DML runs through the catalog (V2 path): see Strata V2"}
DML_TABLE = ("on a fresh table of N rows (workload 1's data, ids ordered) in 100 files of N/100 consecutive ids, "
             "unpartitioned, copy-on-write; A = N/2 + N/200, so the range covers half of each of 2 files")
DV_MODES = ("Strata V2 and delta-spark with `delta.enableDeletionVectors=true`, Iceberg format version 2 with "
            "`write.delete.mode`, `write.update.mode`, `write.merge.mode` = merge-on-read")

WORKLOADS: tuple[Workload, ...] = (
    Workload("append", "1. Unpartitioned append",
             "append N rows (mixed schema) to an existing empty unpartitioned table", SYSTEMS, control=True),
    Workload("part100", "2a. Partitioned append, 100 partitions",
             "append N rows to an existing empty table partitioned by p = id % 100", SYSTEMS, control=True),
    Workload("part1000", "2b. Partitioned append, 1,000 partitions",
             "append N rows to an existing empty table partitioned by p = id % 1000", SYSTEMS, control=True),
    Workload("overwrite", "5. Overwrite one partition of a 100-partition table",
             "dynamic overwrite of partition p = 42 with N/100 new rows, on the table 2a just wrote", SYSTEMS),
    Workload("small_appends", "3. 50 sequential one-row appends",
             "50 one-row appends, each timed, into a table created empty just before", SYSTEMS[1:], NO_LOG),
    Workload("snapshot", "4. Snapshot load of a 1,000-commit table",
             "open a table of 1,000 commits (create + 999 one-row appends) and count its rows; "
             "parquet: a directory of 999 one-row files (listing, no log)", SYSTEMS),
    Workload("concurrent", "6. 4 concurrent writers x 25 appends",
             "4 writer processes per system (each its own Spark application, started before the workload's first "
             "round) get the same go and append 25 x 1,000 rows each to one new table", SYSTEMS[1:], NO_LOG),
    Workload("delete", "7a. DELETE 1%", f"`DELETE FROM t WHERE id >= A AND id < A + N/100` {DML_TABLE}",
             DML_SYSTEMS, NO_DML, dml=True),
    Workload("update", "7b. UPDATE 1%", "`UPDATE t SET s = concat('updated-', s), amt = amt + 1 WHERE id >= A AND "
             f"id < A + N/100` {DML_TABLE}", DML_SYSTEMS, NO_DML, dml=True),
    Workload("merge", "7c. MERGE 1% updates + 0.1% inserts",
             "`MERGE INTO t USING src ON t.id = src.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *` "
             "with src = the N/100 ids [A, A + N/100) with new values and N/1000 new ids [N, N + N/1000) (Parquet, "
             f"written untimed) {DML_TABLE}", DML_SYSTEMS, NO_DML, dml=True),
    Workload("delete_dv", "8a. DELETE 1%, merge-on-read",
             "7a's statement and table with deletion vectors (Strata, delta-spark) or position delete files "
             f"(Iceberg): {DV_MODES}", DML_SYSTEMS, NO_DML, dml=True, dv=True),
    Workload("update_dv", "8b. UPDATE 1%, merge-on-read", f"7b's statement and table, merge-on-read: {DV_MODES}",
             DML_SYSTEMS, NO_DML, dml=True, dv=True),
    Workload("merge_dv", "8c. MERGE 1% updates + 0.1% inserts, merge-on-read",
             f"7c's statement, source and table, merge-on-read: {DV_MODES}", DML_SYSTEMS, NO_DML, dml=True, dv=True),
    Workload("read_dv", "8d. Read after 10 changes with deletion vectors",
             "a full read (`count(*)`, sums of `id`, `k`, `x`, `amt`, `length(s)`, max of `d` and `ts`: every column "
             "of every live row) of 7's 100-file table with deletion vectors after 10 DELETEs of N/1000 ids each, "
             "in files 5, 15, ..., 95 (untimed), against the same read of a table without vectors holding the same "
             "live rows in the same 100-file layout (written untimed); each read 3 times per round, alternating, "
             "median", ("strata-v2",), dict(NO_DML, delta="n/a: Strata's read overhead of its own vectors",
                                            iceberg="n/a: Strata's read overhead of its own vectors"),
             dml=True, dv=True),
    Workload("zorder", "9. Z-order OPTIMIZE and a two-column point query",
             "a fresh unpartitioned table of N rows in 100 files (id; a, b: independent pseudo-random ints in "
             "[0, 1,000,000); s; x), written untimed; timed: `CALL strata.system.optimize(table => t, zorder_by => "
             "array('a', 'b'), target_file_size => T)` / delta-spark `OPTIMIZE t ZORDER BY (a, b)` with "
             "`spark.databricks.delta.optimize.maxFileSize = T`, T = the table's bytes / 100; files a point query "
             "`a = A AND b = B` reads (min/max skipping) before and after", ("strata-v2", "delta"),
             {"parquet": "n/a: no OPTIMIZE", "strata-v1": "n/a: a CALL procedure, path-independent: see Strata V2",
              "iceberg": "n/a: issue 15 compares with delta-spark's OPTIMIZE ZORDER BY"}, zorder=True,
             results="zorder"),
    Workload("streaming", "10. Streaming sink: 200 micro-batches of 1,000 rows",
             "a streaming query (file source over 200 Parquet files of 1,000 rows each, written untimed, "
             "`maxFilesPerTrigger=1`, `Trigger.AvailableNow`: exactly 200 micro-batches) appends to a path table "
             "created empty just before, with a fresh checkpoint: `writeStream.format(\"strata\")` / "
             "`format(\"delta\")` `.start(path)`; timed: start to the query's end (every batch committed); per "
             "batch: the query progress' `durationMs` (`addBatch`: the sink's write and commit; `triggerExecution`: "
             "the whole micro-batch)", ("strata-v1", "delta"),
             {"parquet": "n/a: no transaction log", "iceberg": "n/a: issue 16 compares with delta-spark's sink",
              "strata-v2": "n/a: path tables stream through the V1 sink (StreamSinkProvider): see Strata V1"},
             streaming=True, results="streaming"),
)
WORKLOAD_KEYS = tuple(w.key for w in WORKLOADS)
DML_KEYS = tuple(w.key for w in WORKLOADS if w.dml and not w.dv)
DV_KEYS = tuple(w.key for w in WORKLOADS if w.dv)
ZORDER_KEYS = tuple(w.key for w in WORKLOADS if w.zorder)
STREAMING_KEYS = tuple(w.key for w in WORKLOADS if w.streaming)
DEFAULT_DML_ROUNDS = 3


@dataclass(frozen=True)
class Sizes:
    """Row counts; `scale` multiplies the row counts of the bulk writes (1.0 = the issue's 20M rows)."""
    scale: float
    rows: int  # N: workloads 1 and 2
    overwrite_rows: int  # workload 5: N / 100, one partition's worth
    small_appends: int = 50
    snapshot_commits: int = 1000
    writers: int = 4
    writer_appends: int = 25
    writer_warmup_appends: int = 5  # workload 6's warm-up round: 4 x 5 appends (delta-spark: minutes per full round)
    writer_rows: int = 1000
    slices: int = 2  # input partitions of every bulk write (= cores): 2 write tasks without a shuffle
    dml_files: int = 100  # workloads 7: the table's files (input slices of its one append, N/100 ids each)
    stream_batches: int = 200  # workload 10: micro-batches (input files) per timed round
    stream_rows: int = 1000  # workload 10: rows per micro-batch (input file)
    stream_warmup_batches: int = 50  # workload 10's warm-up round (delta-spark: about 1 s per batch on 2 cores)

    @staticmethod
    def of(scale: float) -> Sizes:
        rows = max(1000, int(round(20_000_000 * scale)))
        return Sizes(scale=scale, rows=rows, overwrite_rows=max(10, rows // 100))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# Settings every application gets (the same data, codec, parallelism and memory for every system).
MASTER = "local[2]"
DRIVER_MEMORY = "4g"
WRITER_DRIVER_MEMORY = "1g"
COMMON_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.compression.codec": "snappy",
}
# V2 distribution, the same for Strata V2 and Iceberg (Strata's WriteConf key is Iceberg's name).
DISTRIBUTION = {False: "none", True: "hash"}
ICEBERG_TABLE_PROPERTIES = {
    "write.parquet.compression-codec": "snappy",  # Iceberg's default is zstd
    # Iceberg's default is 4 retries; Strata's is 100 (strata.commit.maxRetries) and delta-spark retries blind
    # appends without a practical limit. Equalized so that workload 6 measures throughput, not give-up policy.
    "commit.retry.num-retries": "100",
}
SETTINGS_NOTES = (
    f"Every system: Spark {{spark}} `{MASTER}`, driver memory {DRIVER_MEMORY} (concurrent writers {WRITER_DRIVER_MEMORY}), "
    "`spark.sql.shuffle.partitions=2` (AQE on, Spark's default), snappy, input DataFrame of 2 partitions "
    "(`spark.range(..., numPartitions=2)`), no file-size target below Iceberg's default 512 MiB "
    "(`write.target-file-size-bytes`): every write task writes one file per partition it holds.",
    "V1-path writers (Spark Parquet, Strata V1, delta-spark) get no distribution: each of the 2 tasks sorts its rows by "
    "the partition column and writes one file per partition (up to 2 files per partition). Strata V2 and Iceberg "
    "use `write.distribution-mode` = `none` (unpartitioned) / `hash` (partitioned): a shuffle, then about one file "
    "per partition. These are each path's defaults; both are set explicitly as table properties.",
    "Iceberg: `write.parquet.compression-codec=snappy` (its default is zstd), `commit.retry.num-retries=100` "
    "(default 4; Strata's default is 100), Hadoop catalog in a local warehouse with `cache-enabled=false`, "
    "format version, metrics mode and manifest merging at their defaults.",
    "delta-spark runs with its defaults, which include per-column statistics collected during the write "
    "(`delta.dataSkippingNumIndexedCols=32`: all columns here) and a checkpoint every 10 commits; Strata takes its "
    "statistics from the Parquet footers and also checkpoints every 10 commits (`delta.checkpointInterval`).",
    "Workload 4 opens the table cold in a warm JVM: delta-spark's DeltaLog cache is cleared "
    "(`DeltaLog.clearCache()`) and Iceberg's catalog cache is off before each open; Strata and Spark Parquet keep "
    "no snapshot cache between reads. The 1,000-commit tables are built once (setup, untimed) and cached in "
    "bench/cache keyed by system and version (Strata: the jar's SHA-256); Strata V1 and V2 read the same table.",
    "Workload 6 runs after the rounds of workloads 1-5, in its own warm-up round (4 x 5 appends, not 4 x 25: delta-spark's "
    "warm-up alone took 155 s in the 2026-11-23 run) plus timed rounds, systems interleaved as elsewhere: its 16 "
    "writer applications (4 per system) are started once before and stay up (idle when it is not their system's "
    "turn); its time runs from the go (one command to each writer, back to back) to the last append's end.",
    "Workloads 7 (DELETE, UPDATE, MERGE; bench/dml.py) run after workload 4 in the warm-up round and the first "
    f"`--dml-rounds` timed rounds (default {DEFAULT_DML_ROUNDS}, at most `--rounds`: each statement needs a fresh "
    "table, built untimed, which keeps the DML part of a default run short), on a fresh table per "
    "statement: created and filled untimed (one append of N rows from 100 input slices, no shuffle: 100 files of "
    "N/100 consecutive ids; the check requires exactly 100), then the one SQL statement is timed. Copy-on-write on "
    "every system: delta-spark `delta.enableDeletionVectors=false` (set explicitly), Iceberg "
    "`write.delete.mode`/`write.update.mode`/`write.merge.mode=copy-on-write` (its DML distribution modes at their "
    "defaults), Strata (copy-on-write only) as in the other V2 workloads. Each system skips files by its own "
    "min/max statistics (delta-spark: collected during the write; Iceberg: its default metrics; Strata: Parquet "
    "footers); Spark's runtime group filter (on by default) applies to Strata and Iceberg, which plan through "
    "Spark's row-level operations; delta-spark plans its own commands. The MERGE source is a 2-file Parquet "
    "table written untimed and read through a temporary view.",
    "Workloads 8a-8c (bench/dml_dv.py) repeat 7a-7c (same tables, statements, rounds, checks of rows) as "
    f"merge-on-read: {DV_MODES}; their check requires deletion vectors on the 2 changed files' entries (Strata, "
    "delta-spark) or delete files and no data file removed (Iceberg). 8d (Strata V2 only) times a full read of a "
    "100-file table with vectors after 10 one-file DELETEs of N/1000 ids against the same read of a table without "
    "vectors holding the same live rows in the same 100-file layout.",
)
