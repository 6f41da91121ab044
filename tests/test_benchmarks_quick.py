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
from typing import Any

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
    "## 6. Capacity under a stockout",
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
        "--only", "parse,wait,backfill,emulator,logs",  # capacity: its own test below
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

    backfill = {b["impl"]: b for b in raw["backfill"]}
    assert set(backfill) == {"ours", "ours-worker"}
    for b in backfill.values():
        assert b["error"] is None
        assert b["created"] == [4, 0]  # the retry wave re-attaches to every job
        assert b["jobs"] == 4 and b["duplicates"] == 0
        assert b["calls"][1] == {"ListCustomJobs": 4}
    # a deferrable operator's first try is its Create alone; one waiting in its worker Lists after it
    assert backfill["ours"]["calls"][0] == {"CreateCustomJob": 4}
    assert backfill["ours-worker"]["calls"][0] == {"CreateCustomJob": 4, "ListCustomJobs": 4}

    emulator = raw["emulator"]
    assert emulator["errors"] == [] and emulator["replicas"] == 21
    assert len(emulator["to_all_replicas_running_s"]) == 1
    assert {k: len(v) for k, v in emulator["get_latency_s"].items()} == {"grpc": 5, "rest": 5, "hook_ours": 5}

    (logs,) = raw["logs"]
    assert logs["jobs"] == 3 and logs["error"] is None and logs["cycles"] == 2
    assert logs["read_calls"] >= 2 and logs["lines"] > 0
    assert raw["capacity"] == [] and "## 6. Capacity under a stockout\n\nNot run." in text


def _capacity_tables(text: str) -> list[list[list[str]]]:
    return [t for t in _tables(text) if t[0][2:3] == ["task start → first replica RUNNING (median, min–max)"]]


@pytest.mark.slow
def test_quick_capacity_section_climbs_the_ladder_past_the_stockout(tmp_path: Path) -> None:
    """Section 6 alone, as ``python -m benchmarks --quick --only capacity --no-anchor``: both of our
    waits leave the stocked-out rung for the next one and reach a RUNNING replica there."""
    out, raw_path = tmp_path / "report.md", tmp_path / "raw.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    argv = [
        sys.executable, "-m", "benchmarks", "--quick", "--only", "capacity", "--no-anchor",
        "--out", str(out), "--raw", str(raw_path), "--stockout-after", "0.5",
    ]  # fmt: skip
    result = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=280, check=False)
    assert result.returncode == 0, result.stderr[-4000:]
    text = out.read_text()
    assert "## 6. Capacity under a stockout" in text and "no ratios" in text
    assert "error:" not in text.lower(), text
    [table] = _capacity_tables(text)
    header, _rule, *rows = table
    assert [row[0] for row in rows] == ["ours, deferred (`VertexRungTrigger`)", "ours, waiting in the worker"]
    assert all(len(row) == len(header) and "never" not in row[2] for row in rows), rows

    raw = json.loads(raw_path.read_text())
    assert [(r["impl"], r["deferrable"], r["error"]) for r in raw["capacity"]] == [
        ("ours", True, None),
        ("ours-worker", False, None),
    ]
    for side in raw["capacity"]:
        [sub] = side["submissions"]
        assert sub["state"] == "success", sub
        stocked_out, ran = sub["jobs"]
        assert (stocked_out["region"], stocked_out["accelerator"], stocked_out["rung"]) == (
            "us-central1", "NVIDIA_TESLA_A100", "r1",
        )  # fmt: skip
        assert stocked_out["state"] == "JOB_STATE_FAILED" and stocked_out["started"] is None
        assert stocked_out["error"].startswith("Resources are insufficient in region: us-central1.")
        assert (ran["region"], ran["accelerator"], ran["rung"], ran["state"]) == (
            "us-east1", "NVIDIA_L4", "r2", "JOB_STATE_SUCCEEDED",
        )  # fmt: skip
        assert ran["created"] >= stocked_out["ended"]  # one live job at a time
        assert sub["started"] <= stocked_out["created"] and ran["started"] is not None
        assert sub["rung"]["number"] == 2 and [s["outcome"] for s in sub["rung"]["left"]] == ["stockout"]
        assert sub["calls"]["CreateCustomJob"] == 2


def _capacity_result(impl: str, deferrable: bool, *, ran: bool) -> Any:
    from benchmarks.capacity import CapacityResult, JobSeen, Submission

    stockout = "Resources are insufficient in region: us-central1."
    rung = "r1" if impl != "provider" else None
    a100 = "NVIDIA_TESLA_A100"
    failed = JobSeen("us-central1", a100, rung, "JOB_STATE_FAILED", 100.0, None, 101.0, stockout)
    jobs = [failed]
    if ran:
        jobs.append(JobSeen("us-east1", "NVIDIA_L4", "r2", "JOB_STATE_SUCCEEDED", 103.0, 103.5, 104.0, None))
    sub = Submission(
        run=0, started=99.5, ended=105.0 if ran else 101.5, state="success" if ran else "failed", jobs=jobs,
        calls={"CreateCustomJob": len(jobs), "GetCustomJob": 3},
        error=None if ran else "RuntimeError: Resources are insufficient in region: us-central1.",
        rung={"number": 2, "left": [{"outcome": "stockout"}]} if ran else None,
    )  # fmt: skip
    return CapacityResult(impl, 1, 2.0, 10.0, deferrable, [sub])


def test_the_capacity_section_says_never_for_a_task_that_never_ran() -> None:
    """A provider that never reached RUNNING reads 'never' (no ratio), ours its time; the raw results
    render the same after a JSON round trip (``--from-json``)."""
    import dataclasses

    from benchmarks.capacity import CapacityResult
    from benchmarks.capacity_report import capacity_ratio_rows, capacity_section
    from benchmarks.report import RunInfo

    results = [
        _capacity_result("ours", True, ran=True),
        _capacity_result("ours-worker", False, ran=True),
        _capacity_result("provider", False, ran=False),
    ]
    assert math.isinf(results[2].submissions[0].to_running_s)
    assert results[0].submissions[0].to_running_s == 4.0
    assert results[0].submissions[0].stockout_to_next_create_s == 2.0
    [row] = capacity_ratio_rows(results)
    assert row[1] == "n/a"
    assert row[2] == (
        "4.00 s (deferred) / 4.00 s (in the worker) vs never (the provider's task ended after 2.00 s)"
    )
    info = RunInfo("quick", "2026-01-01 00:00 UTC", 1.0, {}, {}, {})
    text = "\n".join(capacity_section(info, results))
    [table] = _capacity_tables(text)
    _header, _rule, ours, worker, provider = table
    assert provider[2] == "never" and provider[4] == "—" and provider[7] == "1 of 1 tasks failed"
    assert provider[5] == "us-central1 A100 FAILED (1 of 1)"
    assert ours[2] == "4.00 s" and ours[5] == "us-central1 A100 FAILED → us-east1 L4 SUCCEEDED (1 of 1)"
    assert ours[7] == "1 of 1 tasks succeeded (1 on rung 2)"
    assert "`RuntimeError: Resources are insufficient in region: us-central1.` (1 of 1)" in text
    again = [CapacityResult(**json.loads(json.dumps(dataclasses.asdict(r)))) for r in results]
    assert capacity_section(info, again) == capacity_section(info, results)
    assert capacity_ratio_rows(again) == [row]


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


def _report(date: str, load: tuple[float, float], rows: dict[str, tuple[str, str]]) -> str:
    table = "\n".join(f"| {m} | {r} | {f} |" for m, (r, f) in rows.items())
    return (
        f"# Benchmarks\n\nGenerated by `make bench` on {date} in 700 s (full mode).\n\n"
        "## Machine and versions\n\n"
        f"- Load average (1 min), shared with other work: {load[0]} at the start, {load[1]} at the end\n\n"
        "## 3. Backfill submission\n\ntext\n\n## Ratios (ours / anchor, same run)\n\n"
        f"| measure | ours / anchor | ours vs anchor |\n|---|---|---|\n{table}\n"
    )


def test_before_and_after_sets_each_ratio_beside_the_replaced_reports() -> None:
    from benchmarks.before_after import RATIOS_HEADING, ratio_rows, with_before_and_after

    before = _report(
        "2026-12-02 12:33 UTC",
        (4.05, 2.55),
        {"backfill wall time, first try": ("2.21×", "3.31 s vs 1.50 s"), "gone": ("1.00×", "1 vs 1")},
    )
    after = _report(
        "2026-12-04 18:35 UTC",
        (0.96, 0.17),
        {"backfill wall time, first try": ("1.89×", "1.24 s vs 0.66 s"), "new": ("0.5×", "1 vs 2")},
    )
    assert ratio_rows(after) == {
        "backfill wall time, first try": ("1.89×", "1.24 s vs 0.66 s"),
        "new": ("0.5×", "1 vs 2"),
    }
    text = with_before_and_after(before, after)
    section = text.split("## Before and after", 1)[1].split(RATIOS_HEADING, 1)[0]
    assert "2026-12-02 12:33 UTC (host load 4.05 → 2.55)" in section
    assert "2026-12-04 18:35 UTC (host load 0.96 → 0.17)" in section
    assert (
        "| backfill wall time, first try | 2.21× (3.31 s vs 1.50 s) | 1.89× (1.24 s vs 0.66 s) |" in section
    )
    assert "| new | — | 0.5× (1 vs 2) |" in section and "| gone | 1.00× (1 vs 1) | — |" in section
    assert text.index("## Before and after") < text.index(RATIOS_HEADING)
    # nothing to set side by side: the same run again, or no earlier report
    assert with_before_and_after(after, after) == after
    assert with_before_and_after(None, after) == after
