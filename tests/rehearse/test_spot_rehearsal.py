"""dags/scenarios/spot-preemptions-every-20-min.yaml rehearsed against dags/spot_checkpoints.py through the
command, the trainer running for real (an image map gives its command): the report must say what the
night dictates -- every preemption that fell while the Spot job ran is counted, the job trained on its
Spot rung (restarted by the service, not retried by the ladder), and each preemption cost at most an
epoch (the checkpoint interval) and the restart, never the run since the start."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pytest

from airflow_vertex_dist.cli import main

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "dags" / "scenarios" / "spot-preemptions-every-20-min.yaml"
#: the scenario's preemptions, seconds of the night: every 20 minutes from 00:20 to 02:40
PREEMPTIONS_S = [1200 * k for k in range(1, 9)]
COMPRESSION = 60
#: the least real seconds of an epoch (VERTEX_DIST_EXAMPLES_EPOCH_SECONDS): 8 minutes of the night
EPOCH_S = 8
EPOCHS = 6


def _image_map() -> str:
    command = ["env", f"PYTHONPATH={ROOT / 'dags'}", sys.executable, "-m", "trainers.ps_trainer"]
    return f"--image-map=example.com/ml/ps-trainer:1.0={shlex.join(command)}"


@pytest.mark.timeout(900)
def test_spot_preemptions_every_20_minutes_cost_at_most_an_epoch_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], vertex_rehearsal_db_cache: Path
) -> None:
    out = tmp_path / "out"
    code = main(
        [
            "rehearse",
            str(ROOT / "dags" / "spot_checkpoints.py"),
            "--scenario",
            str(SCENARIO),
            "--logical-date",
            "2026-01-04",
            "--bucket",
            "vertex-dist-examples",
            "--env",
            f"VERTEX_DIST_EXAMPLES_EPOCH_SECONDS={EPOCH_S}",
            f"--emulator-arg={_image_map()}",
            "--out",
            str(out),
            "--db-cache",
            str(vertex_rehearsal_db_cache),
        ]
    )
    printed, said = capsys.readouterr()
    assert (out / "report.json").exists(), said
    report = json.loads((out / "report.json").read_text())
    assert code == 0, printed
    assert report["scenario"]["compression"] == COMPRESSION
    [run] = report["runs"]
    assert run["state"] == "success"
    # one job, on the Spot rung: the service restarted it after each preemption, the ladder never left
    [job] = run["jobs"]
    assert [(t["rung"], t["outcome"]) for t in run["rungs_tried"]] == [("a100-spot", "ran")]
    assert (job["rung"], job["strategy"], job["state"]) == ("a100-spot", "SPOT", "JOB_STATE_SUCCEEDED")
    # the preemptions the night dictates: each one that fell while the job ran
    fell = [p for p in PREEMPTIONS_S if job["started_s"] < p < job["ended_s"]]
    assert len(fell) >= 2, job  # 6 epochs of 8 minutes and restarts: more than 40 minutes of run
    assert job["preemptions"] == len(fell)
    assert job["preemption_basis"] == "the job's service log and its checkpoints"
    # each preemption cost at most an epoch (the checkpoint interval) and the restart before the next
    # epoch's checkpoint: the trainer's start-up (a few real seconds, minutes of the night at x60)
    restart_s = 5 * COMPRESSION
    assert 0 < job["preempted_seconds"] <= len(fell) * (EPOCH_S * COMPRESSION + restart_s)
    # without checkpoints each would have cost the run since the job started
    from_zero = sum(p - job["started_s"] for p in fell)
    assert job["preempted_seconds"] < from_zero
    # the run trained its 6 epochs: at least 48 minutes of run, whatever the preemptions cost
    assert job["run_seconds"] >= EPOCHS * EPOCH_S * COMPRESSION
    # the text says the same
    assert re.search(
        rf"a100-spot\s+\d+\s+{len(fell)}\s+[\d.]+ min\s+the job's service log and its checkpoints", printed
    )
    # the task log names the checkpoint before each preemption, read from the checkpoint directory
    logs = "\n".join(p.read_text(errors="replace") for p in (out / "airflow").rglob("*.log"))
    lines = re.findall(r"Preemption of \d+ at \S+: (last checkpoint \S+ckpt-\d+\.json|no checkpoint)", logs)
    assert len(lines) == len(fell), lines
