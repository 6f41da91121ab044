"""The provider's own waits pass at the pace of the scenario an emulator plays (hooks/service_clock.py).

A night played 600 times faster writes the night's times into its jobs (docs/emulator.md,
"Scenarios"); a rung's ``pending_limit`` counts from the job's ``createTime`` on the service's clock.
Here no A100 is free all night and a job waits PENDING ten hours before its stockout: the ladder's
first rung gives up after its one-hour limit -- six real seconds -- and the job runs on the second
rung, in the worker and in the triggerer alike. Read on the host's clock instead, the limit would
last an hour: the hang guard fails the test long before.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import DAG

from airflow_vertex_dist.common.rfc3339 import rfc3339_nanos
from airflow_vertex_dist.specs import CapacityLadder, Rung
from vertex_emulator import testing
from vertex_emulator.scenario.loader import parse_scenario

from .harness import CONN_ENV, connection_env, dag_xcom, run_dag, ti_state
from .test_capacity import L4, START, Training, live_jobs_watch, spec, task_jobs

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]

NIGHT = """version: 1
compression: 600
timeline:
  - at: 0
    stockout_after_s: 36000
  - at: 0
    until: "10:00"
    stock: {region: us-central1, accelerator: NVIDIA_TESLA_A100, count: 0}
"""


#: service seconds a wait may run past its limit: 10 real seconds of a loaded machine at x600
_SLACK_S = 6000


@pytest.mark.timeout(300)  # an hour's pending_limit on the host's clock would pass it
@pytest.mark.parametrize("deferrable", [False, True], ids=["worker", "triggerer"])
def test_a_rung_pending_limit_passes_at_the_scenario_pace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, deferrable: bool
) -> None:
    with testing.running_emulator(tmp_path, scenario=parse_scenario(NIGHT)) as em:
        monkeypatch.setenv(CONN_ENV, connection_env(em))
        ladder = CapacityLadder(
            rungs=(Rung(name="a100", pending_limit=timedelta(hours=1)), Rung(name="l4", machine=L4))
        )
        with DAG(f"ladder_paced_{deferrable}", schedule=None, start_date=START) as dag:
            Training(
                task_id="train",
                spec=spec("print('ok')"),
                capacity=ladder,
                deferrable=deferrable,
                poll_interval=60,  # service seconds: a tenth of a real second at this pace (0.25 s at least)
            )
        with live_jobs_watch(em) as most:
            dr = run_dag(dag)
        assert ti_state(dr, "train") == "success"
        jobs = task_jobs(em)
        assert len(jobs) == 2, [(j["state"], j["labels"].get("airflow-rung")) for j in jobs]
        first, second = jobs
        assert (first["state"], first["labels"]["airflow-rung"]) == ("JOB_STATE_CANCELLED", "r1")
        assert (second["state"], second["labels"]["airflow-rung"]) == ("JOB_STATE_SUCCEEDED", "r2")
        # the first job waited its hour of service time and not much more: past the limit, a poll (60
        # service seconds) and the real seconds the triggerer and the Cancel take, 600 service seconds
        # each (a fresh-clone make test beside make check took 1.3 s). On the host's clock the limit
        # would have lasted an hour of real time: 600 hours of service time.
        waited_s = (rfc3339_nanos(first["endTime"]) - rfc3339_nanos(first["createTime"])) / 1e9
        assert 3600 <= waited_s < 3600 + _SLACK_S, waited_s
        left: dict[str, Any]
        [left] = dag_xcom(dr, "train")["rung"]["left"]
        assert (left["outcome"], left["job"]) == ("stockout", first["name"])
        assert "pending_limit of 3600s" in left["reason"]
        assert 3600 <= left["seconds"] < 3600 + _SLACK_S
        assert most[0] == 1


FAST_NIGHT = """version: 1
compression: 3600
timeline:
  - at: 0
    delays: {queued_s: 0}
"""


@pytest.mark.timeout(300)
def test_a_plain_jobs_poll_interval_passes_at_the_scenario_pace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ladder, in the worker (operators/job_wait.py): a ten-minute ``poll_interval`` of service time
    is a sixth of a real second at 3,600 times (0.25 s, the floor), so a job whose replica runs 8 real
    seconds is read at least every quarter second. Counted on the host's clock, the backoff from 1 s
    reads it five or six times in all."""
    with testing.running_emulator(tmp_path, scenario=parse_scenario(FAST_NIGHT)) as em:
        monkeypatch.setenv(CONN_ENV, connection_env(em))
        with DAG("plain_paced", schedule=None, start_date=START) as dag:
            Training(
                task_id="train",
                spec=spec("import time; time.sleep(8)"),
                deferrable=False,
                poll_interval=600,
            )
        before = em.call_counts().get("GetCustomJob", 0)
        dr = run_dag(dag)
        gets = em.call_counts().get("GetCustomJob", 0) - before
        assert ti_state(dr, "train") == "success"
        assert gets >= 16, gets  # 8 s of polls 0.25 s apart
