"""dags/scenarios/gpu-quota-backfill.yaml through the command: a backfill of 20 weeks of the
capacity-ladder example in five Airflow processes (10 GPUs asked for at once) against a quota of 8
A100s. Every figure checked is derived from the scenario file and the DAG's spec, not from a run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from airflow_vertex_dist.cli import main
from airflow_vertex_dist.rehearse.report import peak_gpus

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "dags" / "scenarios" / "gpu-quota-backfill.yaml"
GPUS_PER_JOB = 2  # the example's primary and worker, one A100 each
WEEKS = 20  # 2026-01-04 to 2026-05-17, the @weekly schedule's logical dates


def _night() -> tuple[float, int, float]:
    """The scenario's compression, its on-demand A100 quota and how long each played job runs (s)."""
    from vertex_emulator.scenario.model import parse_time

    night = yaml.safe_load(SCENARIO.read_text())
    [quota] = [
        e["quota"]["count"]
        for e in night["timeline"]
        if (e.get("quota") or {}).get("accelerator") == "NVIDIA_TESLA_A100"
    ]
    [outcome] = [e["job_outcome"] for e in night["timeline"] if "job_outcome" in e]
    assert outcome["state"] == "SUCCEEDED"
    return float(night["compression"]), int(quota), parse_time(outcome["after"])


@pytest.mark.timeout(900)
def test_a_backfill_of_20_weeks_never_holds_more_than_the_quota_of_8_gpus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], vertex_rehearsal_db_cache: Path
) -> None:
    compression, quota, run_s = _night()
    out = tmp_path / "out"
    code = main(
        [
            "rehearse",
            str(ROOT / "dags" / "capacity_ladder.py"),
            "--scenario",
            str(SCENARIO),
            "--start-date",
            "2026-01-04",
            "--end-date",
            "2026-05-17",
            "--parallel",
            "5",
            "--bucket",
            "vertex-dist-examples",
            "--env",
            "VERTEX_DIST_EXAMPLES_PENDING_LIMIT=43200",
            # the played jobs write no replica lines: no settle window for late ones after each job's
            # end (2 real seconds by default, four runs one after another in each process)
            "--env",
            "AIRFLOW__VERTEX_DIST__LOG_SETTLE_SECONDS=0",
            "--out",
            str(out),
            "--db-cache",
            str(vertex_rehearsal_db_cache),
        ]
    )
    printed, said = capsys.readouterr()
    report = json.loads((out / "report.json").read_text())
    assert code == 0, said  # every run succeeded: the command says nothing on stderr
    assert "did not succeed" not in said
    runs = report["runs"]
    assert len(runs) == WEEKS and all(r["state"] == "success" for r in runs)
    # one job per run, its own (a display name per week), trained once on the first rung
    jobs: list[dict[str, Any]] = [job for run in runs for job in run["jobs"]]
    assert [len(r["jobs"]) for r in runs] == [1] * WEEKS
    assert {(j["rung"], j["state"], j["accelerators"]) for j in jobs} == {
        ("a100-reserved", "JOB_STATE_SUCCEEDED", GPUS_PER_JOB)
    }
    assert len({j["job"] for j in jobs}) == WEEKS and report["jobs_outside_runs"] == 0
    assert report["totals"]["jobs"] == WEEKS
    # each job ran as long as the night says, within the clock's resolution (a real second)
    for job in jobs:
        assert run_s - 0.002 <= job["run_seconds"] <= run_s + compression, job
    hours = WEEKS * GPUS_PER_JOB * run_s / 3600
    assert hours <= report["totals"]["gpu_hours"] <= hours * (1 + compression / run_s)
    # never more than the quota in use: by the emulator's books, and by the jobs' own RUNNING times
    [peak] = report["peaks"]
    assert (peak["region"], peak["accelerator"], peak["preemptible"]) == (
        "us-central1",
        "NVIDIA_TESLA_A100",
        False,
    )
    assert peak["quota"] == quota and peak["quota_in_use"] <= quota
    running = [{**j, "created_s": j["started_s"]} for j in jobs]
    assert peak_gpus(running)[0]["gpus"] <= quota
    print(f"asked {peak['gpus']} GPUs at once, {peak['quota_in_use']} in use; {report['real_seconds']} s")
    assert f"us-central1  NVIDIA_TESLA_A100  on demand  {peak['gpus']}" in printed
