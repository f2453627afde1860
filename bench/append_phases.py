"""Reads the collapsed wall-clock stacks bench/append_probe.py --profile wrote: where the driver's writing thread spent
the append, as the share of its samples under each frame (inclusive), for the frames that name a phase.

    .venv/bin/python bench/append_phases.py DIR/'append 3 (F files).collapsed' [--top 40] [--match REGEX]

The writing thread is the one whose stacks hold DataFrameWriter.save. Frames are shown by class and method (no
package), the ones of Strata (io/strata) and of Spark's write and scheduling paths by default.
"""
from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

DEFAULT = r"io/strata|DataFrameWriter\.save|FileFormatWriter\.write|DAGScheduler\.runJob|SparkContext\.runJob|" \
          r"QueryExecution\.|SparkPlan\.execute|JobWaiter\.awaitResult|SaveIntoDataSourceCommand|Analyzer\.|" \
          r"Optimizer|SparkOptimizer|CacheManager|FileSystem\.|LocalFileSystem|RawLocalFileSystem|ParquetFileReader"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", type=Path, nargs="+")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--match", default=DEFAULT)
    args = ap.parse_args()
    pattern = re.compile(args.match)
    for f in args.files:
        stacks: list[tuple[list[str], int]] = []
        for line in f.read_text().splitlines():
            frames, _, n = line.rpartition(" ")
            stacks.append((frames.split(";"), int(n)))
        writer = {s[0] for s, _ in stacks if any("DataFrameWriter.save" in x for x in s)}
        mine = [(s, n) for s, n in stacks if s[0] in writer]
        total = sum(n for _, n in mine)
        inclusive: Counter[str] = Counter()
        for s, n in mine:
            for frame in dict.fromkeys(short(x) for x in s[1:] if pattern.search(x)):
                inclusive[frame] += n
        print(f"== {f.name}: {total} samples of the writing thread {sorted(writer)}")
        for frame, n in inclusive.most_common(args.top):
            print(f"{100 * n / max(total, 1):6.1f}%  {n:6d}  {frame}")


def short(frame: str) -> str:
    """`a/b/C$D.m_[j]` → `C$D.m`."""
    frame = re.sub(r"_\[[a-z0-9]\]$", "", frame)
    return frame.rsplit("/", 1)[-1]


if __name__ == "__main__":
    main()
