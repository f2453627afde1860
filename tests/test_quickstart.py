"""examples/quickstart.py (what `make demo` runs) works and prints the table's history."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_quickstart_prints_history(tmp_path: Path) -> None:
    table = tmp_path / "sales"
    table.mkdir()
    (table / "leftover.txt").write_text("the quickstart cleans its table folder first")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py"), str(table)],
        cwd=tmp_path, env=dict(os.environ, PYSPARK_PYTHON=sys.executable),
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = proc.stdout
    assert f"Table {table}, version 3:" in out
    history = re.findall(r"^\s*(\d+)\s+(\w+)\s+(\w+)\s+(\d+)\s*$", out.split("History:")[1], re.MULTILINE)
    assert history == [("0", "WRITE", "Append", "5"), ("1", "WRITE", "Append", "2"),
                       ("2", "WRITE", "Append", "4"), ("3", "WRITE", "Overwrite", "3")]
    # the latest version holds only the overwrite's rows; version 2 has all three countries
    assert re.findall(r"^\|\s*(\d+)\|\s*(\w+)\|", out, re.MULTILINE) == [("100", "ES"), ("101", "ES"), ("102", "ES")]
    assert re.findall(r"^\|\s*(\w\w)\|\s*(\d+)\|$", out, re.MULTILINE) == [("DE", "2"), ("FR", "5"), ("IT", "4")]
    assert not (table / "leftover.txt").exists()
