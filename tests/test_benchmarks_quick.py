"""The benchmarks' quick mode still runs end to end and writes a well-formed report.

Tiny counts, no anchor venv (CI has none): this keeps the benchmarks working; it judges no timing.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SECTIONS = [
    "# Benchmarks",
    "## Machine and versions",
    "## 1. DAG parse cost",
    "## 2. Waiting at scale",
    "## 3. Backfill submission",
    "## 4. The emulator",
    "## 5. Replica logs in the task log",
    "## Ratios (ours / anchor, same run)",
]


def _tables(text: str) -> list[list[list[str]]]:
    tables: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            assert line.endswith("|"), f"table row not closed: {line!r}"
            current.append([cell.strip() for cell in line.strip("|").split("|")])
        elif current:
            tables.append(current)
            current = []
    return tables


@pytest.mark.slow
def test_quick_mode_writes_a_well_formed_report(tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env["AIRFLOW__VERTEX_DIST__LOG_SETTLE_SECONDS"] = "0"  # lines at once: two short cycles take some
    argv = [
        sys.executable, "-m", "benchmarks", "--quick", "--no-anchor",
        "--out", str(out), "--raw", str(tmp_path / "raw.json"),
        "--parse-runs", "1", "--wait-sizes", "4", "--interval", "0.3", "--backfill-runs", "4",
        "--threads", "2", "--launches", "1", "--gets", "5",
        "--log-sizes", "3", "--log-interval", "0.3", "--log-cycles", "2",
    ]  # fmt: skip
    result = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=280, check=False)
    assert result.returncode == 0, result.stderr[-4000:]
    text = out.read_text()

    positions = [text.find(heading) for heading in SECTIONS]
    assert all(p >= 0 for p in positions), [h for h, p in zip(SECTIONS, positions, strict=True) if p < 0]
    assert positions == sorted(positions), "sections out of order"
    assert "no ratios" in text  # no anchor in this run, and the report says so
    assert "error:" not in text.lower(), text

    tables = _tables(text)
    assert len(tables) >= 6
    for table in tables:
        header, rule, *rows = table
        assert all(re.fullmatch(r"-{3,}", cell) for cell in rule), rule
        assert rows, f"empty table under {header}"
        for row in rows:
            assert len(row) == len(header), (header, row)

    raw = json.loads((tmp_path / "raw.json").read_text())
    assert {v["key"] for v in raw["parse"]} == {"floor", "ours"}
    ours_parse = next(v for v in raw["parse"] if v["key"] == "ours")
    assert ours_parse["info"]["tasks"] == 2
    assert ours_parse["info"]["google_cloud_modules"] == 0  # a DAG file loads no google.cloud module
    assert len(ours_parse["over_floor_s"]) == 1

    (wait,) = raw["waiting"]
    assert wait["impl"] == "ours" and wait["jobs"] == 4 and wait["error"] is None
    assert wait["missing"] == 0 and wait["non_success"] == 0 and len(wait["delays_s"]) == 5
    assert set(wait["calls_by_method"]) <= {"ListCustomJobs", "GetCustomJob"}

    (backfill,) = raw["backfill"]
    assert backfill["error"] is None
    assert backfill["created"] == [4, 0]  # the retry wave re-attaches to every job
    assert backfill["jobs"] == 4 and backfill["duplicates"] == 0
    assert backfill["calls"][1] == {"ListCustomJobs": 4}

    emulator = raw["emulator"]
    assert emulator["errors"] == [] and emulator["replicas"] == 21
    assert len(emulator["to_all_replicas_running_s"]) == 1
    assert {k: len(v) for k, v in emulator["get_latency_s"].items()} == {"grpc": 5, "rest": 5, "hook_ours": 5}

    (logs,) = raw["logs"]
    assert logs["jobs"] == 3 and logs["error"] is None and logs["cycles"] == 2
    assert logs["read_calls"] >= 2 and logs["lines"] > 0


def test_replace_sections_swaps_only_the_measured_sections() -> None:
    from benchmarks.__main__ import replace_sections

    existing = "# B\n\nintro\n\n## 1. A\n\nold a\n\n## 5. Logs\n\nold logs\n\n## Ratios\n\nr\n"
    rendered = "# B\n\nnew intro\n\n## 1. A\n\nnew a\n\n## 5. Logs\n\nnew logs\n| x |\n\n## Ratios\n\nr2\n"
    assert replace_sections(existing, rendered, ["## 5. Logs"]) == (
        "# B\n\nintro\n\n## 1. A\n\nold a\n\n## 5. Logs\n\nnew logs\n| x |\n\n## Ratios\n\nr\n"
    )
    # a report without the section gets it before the ratios
    without = "# B\n\n## 1. A\n\nold a\n\n## Ratios\n\nr\n"
    assert replace_sections(without, rendered, ["## 5. Logs"]) == (
        "# B\n\n## 1. A\n\nold a\n\n## 5. Logs\n\nnew logs\n| x |\n\n## Ratios\n\nr\n"
    )


def test_a_job_whose_event_never_came_counts_as_never_in_the_percentiles() -> None:
    """The end -> event percentiles are over every job waited on: a trigger that delivered fewer than
    half its events has no p50 (its delivered events alone would have made it look fast)."""
    from benchmarks.waiting import WaitResult

    delivered = WaitResult(impl="ours", jobs=4, interval_s=4.0, delays_s=[1.0, 2.0, 3.0, 4.0])
    assert delivered.delay(50) == 2.5 and delivered.delay(0) == 1.0
    dropped = WaitResult(impl="provider", jobs=8, interval_s=4.0, delays_s=[0.5, 0.6, 0.7], missing=5)
    assert math.isinf(dropped.delay(50)) and dropped.delay(25) == pytest.approx(0.675)
    assert dropped.delay(50) > delivered.delay(50)
    # an error event (the trigger gave up at once) is not an end seen: never, not 0 s
    errored = WaitResult(impl="provider", jobs=4, interval_s=4.0, delays_s=[0.5], non_success=3)
    assert math.isinf(errored.delay(50))
