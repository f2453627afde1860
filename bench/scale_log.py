"""The metadata-scale set's synthetic table (bench/scale.py): a Delta log of F live files, written by Python.

Commit 0 (`_delta_log/00000000000000000000.json`, streamed line by line, never held in memory):

  commitInfo  operation WRITE (a blind append), engineInfo naming this generator
  protocol    (1, 2)
  metaData    schema id LONG, v STRING, p INT; partitioned by p; no table properties
  add x F     file n (0 <= n < F) in partition p = n % 1000, path `p=<p>/part-<n:05d>-<uuid>.c000.snappy.parquet`;
              statistics for id and v: numRecords, minValues, maxValues, nullCount (0)

File n holds the ids [n R, n R + rows) (R = ROWS_PER_FILE, the same for every file, so id ranges never overlap) and
v = "v-" + id as 12 zero-padded digits (so v's string order is id's). Data files need not exist for what the set
measures, and most do not: their log entries say `rows` = R records and a size of 32-128 MiB (pseudo-random, fixed
seed: the same log on every run). The F/1000 files of partition p = POINT_PARTITION do exist (real Parquet written
by Spark, REAL_ROWS rows each, so that the point query has rows to count), and their entries carry their real sizes
and statistics. Then Strata writes a checkpoint at version 0 (bench/scale_app.py); both engines read that checkpoint.
UUIDs, sizes and times are derived from a fixed seed, so a regenerated log is the same log.
"""
from __future__ import annotations

import json
import os
import random
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

Json = dict[str, Any]
GENERATOR = "strata-bench-scale/1"  # bump when the generated log changes: cached logs of another generator are rebuilt
PARTITIONS = 1000
ROWS_PER_FILE = 1_000_000  # nominal records of a file that does not exist
REAL_ROWS = 1000  # records of each existing file (partition POINT_PARTITION)
POINT_PARTITION = 5
MISSING_PARTITION = -1
MIN_SIZE, MAX_SIZE = 32 * 2**20, 128 * 2**20
CREATED_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: commit 0's time; file n's modificationTime is this + n ms
SCHEMA = {"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "v", "type": "string", "nullable": True, "metadata": {}},
    {"name": "p", "type": "integer", "nullable": True, "metadata": {}}]}
DDL = "id BIGINT, v STRING, p INT"


@dataclass(frozen=True)
class Operation:
    key: str
    title: str
    big: bool  # on the generated table (else on an empty table of the same schema)


# What each engine's application times, in this order (bench/scale_app.py); `big` ones on the generated table.
LATER_APPENDS = 9  # appends after the first, per table: their median is reported (bench/scale_app.py)
OPERATIONS = (
    Operation("cold", f"cold load + count, p = {MISSING_PARTITION}", True),
    Operation("warm", f"warm load + count, p = {MISSING_PARTITION}", True),
    Operation("input_files", f"inputFiles() of p = {POINT_PARTITION}", True),
    Operation("point", f"point query count, p = {POINT_PARTITION} and id = X", True),
    Operation("count", "count(*) of the whole table", True),
    Operation("append_1", "one-row append (1st)", True),
    Operation("empty_append_1", "one-row append to an empty table (1st)", False),
    # appends 2 to 1 + LATER_APPENDS alternate between the two tables (bench/scale_app.py later_appends)
    Operation("append_2", f"one-row appends 2 to {1 + LATER_APPENDS}, median", True),
    Operation("empty_append_2", f"one-row appends 2 to {1 + LATER_APPENDS} to an empty table, median", False),
)
APPENDS = (("append_1", "empty_append_1"), ("append_2", "empty_append_2"))


def value(i: int) -> str:
    """Column v of the row with id i."""
    return f"v-{i:012d}"


@dataclass(frozen=True)
class RealFile:
    """An existing data file of partition POINT_PARTITION: its log path and true size."""
    n: int
    path: str
    size: int


class Names:
    """File n's name: UUIDs, sizes from one seeded generator, drawn in file order (so the same for any caller)."""

    def __init__(self, files: int) -> None:
        self.files = files
        self.rng = random.Random(f"{GENERATOR}/{files}")
        self.table_id = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def __iter__(self) -> Iterator[tuple[int, str, int]]:
        """(n, path, nominal size) of every file, in order."""
        for n in range(self.files):
            u = uuid.UUID(int=self.rng.getrandbits(128), version=4)
            size = self.rng.randrange(MIN_SIZE, MAX_SIZE)
            yield n, f"p={n % PARTITIONS}/part-{n:05d}-{u}.c000.snappy.parquet", size


def check_files(files: int) -> None:
    if files < PARTITIONS or files % PARTITIONS:
        raise ValueError(f"F = {files}: must be a multiple of {PARTITIONS} (F / {PARTITIONS} files per partition)")


def real_files(files: int) -> list[tuple[int, str]]:
    """(n, log path) of the files that exist: those of partition POINT_PARTITION."""
    return [(n, path) for n, path, _ in Names(files) if n % PARTITIONS == POINT_PARTITION]


def point_id() -> int:
    """The point query's id: in the first file of partition POINT_PARTITION (n = POINT_PARTITION), no other file."""
    return POINT_PARTITION * ROWS_PER_FILE + REAL_ROWS // 2


def expected(files: int) -> Json:
    """What a reader of the generated table must answer (before any append)."""
    real = files // PARTITIONS
    return {"cold": 0, "warm": 0, "input_files": real, "point": 1, "point_files": 1,
            "partition_files": real, "count": (files - real) * ROWS_PER_FILE + real * REAL_ROWS}


def stats(n: int, rows: int) -> str:
    lo, hi = n * ROWS_PER_FILE, n * ROWS_PER_FILE + rows - 1
    return json.dumps({"numRecords": rows, "minValues": {"id": lo, "v": value(lo)},
                       "maxValues": {"id": hi, "v": value(hi)}, "nullCount": {"id": 0, "v": 0}},
                      separators=(",", ":"))


def write_commit0(table: Path, files: int, real: dict[int, RealFile]) -> Json:
    """Streams commit 0 (protocol, metaData, `files` adds) into `table`/_delta_log; `real`: the existing files."""
    check_files(files)
    log = table / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    names = Names(files)
    start = time.perf_counter()
    target = log / f"{0:020d}.json"
    tmp = log / f".{target.name}.tmp"
    header: list[Json] = [
        {"commitInfo": {"timestamp": CREATED_MS, "operation": "WRITE",
                        "operationParameters": {"mode": "Append", "partitionBy": "[\"p\"]"},
                        "isBlindAppend": True, "engineInfo": GENERATOR}},
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {"metaData": {"id": names.table_id, "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps(SCHEMA, separators=(",", ":")), "partitionColumns": ["p"],
                      "configuration": {}, "createdTime": CREATED_MS}}]
    with open(tmp, "w", buffering=4 * 2**20) as out:
        for action in header:
            out.write(json.dumps(action, separators=(",", ":")) + "\n")
        for n, path, size in names:
            rows = ROWS_PER_FILE
            if n in real:
                if real[n].path != path:
                    raise RuntimeError(f"file {n}: generated {path}, written {real[n].path}")
                size, rows = real[n].size, REAL_ROWS
            add = {"path": path, "partitionValues": {"p": str(n % PARTITIONS)}, "size": size,
                   "modificationTime": CREATED_MS + n, "dataChange": True, "stats": stats(n, rows)}
            out.write(json.dumps({"add": add}, separators=(",", ":")) + "\n")
    if len(real) != files // PARTITIONS:
        raise RuntimeError(f"{len(real)} existing files, expected {files // PARTITIONS}")
    os.replace(tmp, target)
    return {"json_bytes": target.stat().st_size, "json_s": time.perf_counter() - start}


def log_bytes(table: Path) -> Json:
    """Sizes of the log's files (commit JSON, checkpoint Parquet, _last_checkpoint)."""
    return {f.name: f.stat().st_size for f in sorted((table / "_delta_log").iterdir()) if f.is_file()}
