"""What the sections of latest.md for one workload (report_zorder, report_streaming) start with."""
from __future__ import annotations

from typing import Any

Json = dict[str, Any]


def workload_intro(record: Json, key: str) -> list[str] | None:
    """The opening lines (title and definition) of workload `key`'s section; None if the run did not run it."""
    w = next((w for w in record["workloads"] if w["key"] == key), None)
    if w is None:
        return None
    return [f"## {w['title']}", "", w["definition"] + ".", ""]
