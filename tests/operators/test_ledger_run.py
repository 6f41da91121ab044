"""The cost ledger of a real ladder run (dag.test(), the emulator's capacity model, real replica
processes): rung 1 (A100, on demand) stocks out, rung 2 (L4, Spot) runs, is preempted once, restarts
and succeeds. The task's XCom ``ledger`` has both jobs with the emulator's own times: rung 1 queued and
never ran (0 USD), rung 2's GPU-hours and its upper-bound price, and the run its preemption cost, read
from the job's service log."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import DAG

from airflow_vertex_dist.common.rfc3339 import rfc3339_nanos
from airflow_vertex_dist.jobs.ledger import AT_MOST
from airflow_vertex_dist.specs import CapacityLadder, Rung
from airflow_vertex_dist.specs.prices import price_per_hour
from vertex_emulator import Capacity, testing
from vertex_emulator.app import Emulator

from .harness import CONN_ENV, connection_env, dag_xcom, logged, poll, run_dag, ti_state
from .test_capacity import L4, Training, spec, task_jobs

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]

START = datetime(2024, 1, 1, tzinfo=timezone.utc)
NO_A100 = {"us-central1": {"NVIDIA_TESLA_A100": 0}}


@pytest.fixture
def no_a100(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    """No A100 free in us-central1 (a job asking for one stocks out after 1 s); Spot notice 0.2 s."""
    capacity = Capacity(stock=NO_A100, spot_stock=NO_A100, stockout_after_s=1.0, spot_notice_s=0.2)
    with testing.running_emulator(tmp_path, capacity=capacity) as em:
        monkeypatch.setenv(CONN_ENV, connection_env(em))
        yield em


def _trainer(marker: Path) -> str:
    """The first start marks the file and waits to be preempted; the restart finishes."""
    return (
        "import pathlib, sys, time\n"
        f"m = pathlib.Path({str(marker)!r})\n"
        "if m.exists():\n    time.sleep(0.3); print('trained'); sys.exit(0)\n"
        "m.write_text('started')\n"
        "time.sleep(120)\n"
    )


def _preempt_rung_two(em: Emulator, marker: Path) -> None:
    def running_spot_job() -> str | None:
        for job in task_jobs(em):
            if job["labels"].get("airflow-rung") == "r2" and job["state"] == "JOB_STATE_RUNNING":
                return str(job["name"]) if marker.exists() else None
        return None

    name = poll(running_spot_job, timeout=120, what="rung 2's job running its first start")
    gpus = em.service.gpus
    assert gpus is not None
    gpus.preempt(name, "workerpool0-0")


def test_the_ledger_of_a_ladder_whose_first_rung_stocks_out(
    no_a100: Emulator, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "started"
    ladder = CapacityLadder(
        rungs=(
            Rung(name="a100"),
            Rung(
                name="l4-spot",
                machine=L4,
                strategy="SPOT",
                on_preemption="retry",
                accepts_restarts_from_zero=True,
            ),
        )
    )
    with DAG("ledger_ladder", schedule=None, start_date=START) as dag:
        Training(
            task_id="train", spec=spec(_trainer(marker)), capacity=ladder, deferrable=False, poll_interval=0.2
        )
    preempter = threading.Thread(target=_preempt_rung_two, args=(no_a100, marker), daemon=True)
    preempter.start()
    dr = run_dag(dag)
    preempter.join(timeout=10)
    assert ti_state(dr, "train") == "success"
    stocked, ran = task_jobs(no_a100)
    assert stocked["state"] == "JOB_STATE_FAILED" and "startTime" not in stocked
    assert ran["state"] == "JOB_STATE_SUCCEEDED"

    ledger: dict[str, Any] = dag_xcom(dr, "train")["ledger"]
    first, second = ledger["jobs"]
    assert (first["job"], first["rung"], first["strategy"]) == (stocked["name"], "a100", "STANDARD")
    seconds = (rfc3339_nanos(stocked["endTime"]) - rfc3339_nanos(stocked["createTime"])) / 1e9
    assert first["queued_seconds"] == pytest.approx(seconds, abs=0.002) and first["queued_seconds"] >= 1.0
    assert (first["run_seconds"], first["gpu_hours"], first["usd"]) == (0.0, 0.0, 0.0)  # never ran: free
    assert (first["accelerator_type"], first["accelerators"]) == ("NVIDIA_TESLA_A100", 1)

    assert (second["job"], second["rung"], second["strategy"]) == (ran["name"], "l4-spot", "SPOT")
    assert (second["accelerator_type"], second["accelerators"], second["replicas"]) == ("NVIDIA_L4", 1, 1)
    run_s = (rfc3339_nanos(ran["endTime"]) - rfc3339_nanos(ran["startTime"])) / 1e9
    assert second["run_seconds"] == pytest.approx(run_s, abs=0.002)
    assert second["gpu_hours"] == pytest.approx(run_s / 3600, abs=1e-6)
    hourly = price_per_hour("g2-standard-8", "NVIDIA_L4", 1, "us-central1")
    assert hourly is not None
    assert second["usd"] == pytest.approx(hourly * run_s / 3600, abs=1e-5) and second["usd_basis"] == AT_MOST
    # one preemption, read from the job's service log: the first start's run, lost
    assert second["preemptions"] == 1 and second["preemption_basis"] == "the job's service log"
    assert 0 < second["preempted_seconds"] < second["run_seconds"]
    # the rung accepts restarts from zero: the task log says the run since the start was lost
    lost = re.search(
        r"Preemption of \d+ at \S+: the spec names no checkpoint directory: (\d+) s lost since the job "
        r"started",
        logged(capfd),
    )
    assert lost is not None and int(lost[1]) == round(second["preempted_seconds"])

    assert [r["rung"] for r in ledger["by_rung"]] == ["a100", "l4-spot"]
    totals = ledger["totals"]
    assert totals["jobs"] == 2 and totals["usd"] == pytest.approx(second["usd"], abs=1e-6)
    assert totals["queued_seconds"] == pytest.approx(
        first["queued_seconds"] + second["queued_seconds"], abs=0.01
    )
    assert totals["preemptions"] == 1 and totals["usd_basis"].startswith("at most")
