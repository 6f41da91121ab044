"""The capacity ladder's parts that need no emulator: what the operator checks when the task is built
(the ladder planned, a FLEX_START wait without limit in a scheduled DAG, ``gpu_pool``'s slots), the
rung trigger (serialization round trip, its pending-limit verdict), the walk's state and its tables."""

from __future__ import annotations

import asyncio
import warnings
from datetime import datetime, timezone
from typing import Any

import pytest
from airflow._shared.module_loading import import_string
from airflow.models.trigger import Trigger
from airflow.sdk import DAG
from airflow.serialization.decoders import smart_decode_trigger_kwargs

from airflow_vertex_dist.operators.ladder import LadderState, ladder_table, prices_table
from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.operators.tuning import VertexTuningOperator
from airflow_vertex_dist.specs import (
    CapacityLadder,
    Container,
    DistributedTrainingJob,
    HyperparameterTuningJob,
    Machine,
    MachineOverride,
    Metric,
    PoolOverride,
    Rung,
    Study,
    WorkerPool,
)
from airflow_vertex_dist.specs.capacity import plan_ladder
from airflow_vertex_dist.specs.parameters import IntegerParameter
from airflow_vertex_dist.triggers.rung import VertexRungTrigger

START = datetime(2024, 1, 1, tzinfo=timezone.utc)
A100 = Machine(machine_type="a2-highgpu-1g", accelerator_type="NVIDIA_TESLA_A100", accelerator_count=1)
L4 = MachineOverride(machine_type="g2-standard-8", accelerator_type="NVIDIA_L4", accelerator_count=1)


def spec(**extra: Any) -> DistributedTrainingJob:
    pool = WorkerPool(machine=A100, container=Container(image_uri="python:3.11"))
    return DistributedTrainingJob(display_name="t", primary=pool, workers=pool, **extra)


def test_the_ladder_is_planned_when_the_task_is_built() -> None:
    bad = [Rung(), Rung(name="half-l4", machine=MachineOverride(machine_type="g2-standard-8"))]
    with pytest.raises(ValueError, match=r"capacity.rungs\[1\] \(half-l4\): the rung makes an invalid spec"):
        VertexTrainingOperator(task_id="t", spec=spec(), capacity=bad)
    over = CapacityLadder(max_price_per_hour=1.0, rungs=(Rung(),))
    with pytest.raises(ValueError, match="is above max_price_per_hour=1"):
        VertexTrainingOperator(task_id="t", spec=spec(), capacity=over, location="us-central1")
    # no region known yet (the connection's): the ceiling waits for the task to run
    task = VertexTrainingOperator(task_id="t", spec=spec(), capacity=over)
    assert task.capacity == over


def test_capacity_takes_a_ladder_a_list_of_rungs_or_a_dict() -> None:
    rungs = [Rung(name="a"), Rung(name="b", machine=L4)]
    from_list = VertexTrainingOperator(task_id="t", spec=spec(), capacity=rungs).capacity
    from_dict = VertexTrainingOperator(
        task_id="t", spec=spec(), capacity={"rungs": [r.model_dump() for r in rungs]}
    ).capacity
    assert from_list == from_dict == CapacityLadder(rungs=tuple(rungs))
    with pytest.raises(TypeError, match="capacity: expected a CapacityLadder"):
        VertexTrainingOperator(task_id="t", spec=spec(), capacity=3)  # type: ignore[arg-type]


def test_gpu_pool_admits_the_task_by_its_largest_rungs_gpus() -> None:
    ladder = [Rung(), Rung(machine=L4, pools={"workers": PoolOverride(replica_count=3)})]
    task = VertexTrainingOperator(task_id="t", spec=spec(), capacity=ladder, gpu_pool="a100-quota")
    assert (task.pool, task.pool_slots) == ("a100-quota", 4)  # rung 2: 1 + 3 GPUs
    plain = VertexTrainingOperator(task_id="t", spec=spec(), gpu_pool="gpus")
    assert (plain.pool, plain.pool_slots) == ("gpus", 2)
    explicit = VertexTrainingOperator(task_id="t", spec=spec(), gpu_pool="gpus", pool_slots=8)
    assert explicit.pool_slots == 8
    tuning = HyperparameterTuningJob(
        trial_job=spec(),
        study=Study(
            metrics=(Metric(metric_id="loss", goal="MINIMIZE"),),
            parameters=(IntegerParameter(parameter_id="x", min_value=1, max_value=4),),
        ),
        max_trial_count=4,
        parallel_trial_count=2,
    )
    assert VertexTuningOperator(task_id="t", spec=tuning, gpu_pool="gpus").pool_slots == 4
    with pytest.raises(ValueError, match="gpu_pool: give pool or gpu_pool, not both"):
        VertexTrainingOperator(task_id="t", spec=spec(), gpu_pool="gpus", pool="other")
    named = spec().model_dump(mode="json")
    named["display_name"] = "t-{{ ds }}"  # Jinja where the spec takes it: the GPUs are known already
    assert VertexTrainingOperator(task_id="t", spec=named, gpu_pool="gpus").pool_slots == 2
    sized = spec().model_dump(mode="json")
    sized["workers"]["replica_count"] = "{{ params.workers }}"  # the GPUs are known once rendered
    with pytest.raises(ValueError, match="gpu_pool: the spec's machines or replica counts hold Jinja"):
        VertexTrainingOperator(task_id="t", spec=sized, gpu_pool="gpus")
    explicit_sized = VertexTrainingOperator(task_id="t", spec=sized, gpu_pool="gpus", pool_slots=6)
    assert (explicit_sized.pool, explicit_sized.pool_slots) == ("gpus", 6)


def test_an_unbounded_flex_start_wait_in_a_scheduled_dag_warns() -> None:
    flex = spec(scheduling={"strategy": "FLEX_START", "max_wait_duration": 0})
    with DAG("flex_daily", schedule="@daily", start_date=START), pytest.warns(UserWarning) as caught:
        VertexTrainingOperator(task_id="t", spec=flex)
    assert "scheduling.max_wait_duration is 0 with strategy FLEX_START" in str(caught[0].message)
    with DAG("flex_rung_daily", schedule="@daily", start_date=START), pytest.warns(UserWarning):
        VertexTrainingOperator(
            task_id="t",
            spec=spec(),
            capacity=[Rung(strategy="FLEX_START", max_wait_duration=0, accepts_restarts_from_zero=True)],
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with DAG("flex_manual", schedule=None, start_date=START):
            VertexTrainingOperator(task_id="t", spec=flex)  # not scheduled: no warning
        with DAG("flex_bounded", schedule="@daily", start_date=START):
            VertexTrainingOperator(
                task_id="t", spec=spec(scheduling={"strategy": "FLEX_START", "max_wait_duration": 3600})
            )


NAME = "projects/p/locations/us-central1/customJobs/123"
TRIGGER_CASES: list[dict[str, Any]] = [
    {"job_name": NAME},
    {
        "job_name": NAME,
        "conn_id": "my_vertex",
        "poll_interval": 2.5,
        "timeout": 3600,
        "pending_limit": 90.0,
        "strategy": "FLEX_START",
        "rung": 3,
        "job_created": "2024-01-01T00:00:00.123456Z",
    },
]


@pytest.mark.parametrize("kwargs", TRIGGER_CASES)
def test_the_rung_trigger_round_trips_through_airflow_trigger_storage(kwargs: dict[str, Any]) -> None:
    trigger = VertexRungTrigger(**kwargs)
    classpath, stored = trigger.serialize()
    assert classpath == "airflow_vertex_dist.triggers.rung.VertexRungTrigger"
    assert import_string(classpath)(**stored).serialize() == (classpath, stored)
    for key, value in kwargs.items():
        assert stored[key] == value
    row = Trigger.from_object(trigger)
    decrypted = Trigger._decrypt_kwargs(row.encrypted_kwargs)
    inflated = import_string(row.classpath)(
        **{k: smart_decode_trigger_kwargs(v) for k, v in decrypted.items()}  # type: ignore[no-untyped-call]
    )
    assert inflated.serialize() == trigger.serialize()


def test_the_rung_trigger_refuses_bad_kwargs() -> None:
    with pytest.raises(ValueError, match="pending_limit"):
        VertexRungTrigger(job_name=NAME, pending_limit=0)
    with pytest.raises(ValueError, match="rung"):
        VertexRungTrigger(job_name=NAME, rung=0)
    with pytest.raises(ValueError):
        VertexRungTrigger(job_name=NAME, job_created="yesterday")


def test_the_rung_trigger_ends_the_wait_past_the_pending_limit_without_cancelling() -> None:
    trigger = VertexRungTrigger(job_name=NAME, pending_limit=60, rung=2)
    trigger.begin_wait()
    pending: Any = {"name": NAME, "state": "JOB_STATE_PENDING", "createTime": "2024-01-01T00:00:00Z"}
    event = asyncio.run(trigger.decide(pending))
    assert event is not None and event["status"] == "error"
    assert event["message"].startswith(f"job {NAME} (rung 2): stockout: stayed PENDING for")
    assert event["job"] is not None and event["job"]["state"] == "JOB_STATE_PENDING"  # not cancelled
    running: Any = {**pending, "state": "JOB_STATE_RUNNING", "startTime": "2024-01-01T00:00:01Z"}
    assert asyncio.run(trigger.decide(running)) is None
    no_limit = VertexRungTrigger(job_name=NAME)
    no_limit.begin_wait()
    assert asyncio.run(no_limit.decide(pending)) is None


def test_the_rung_trigger_deadline_is_the_pending_limit_from_the_jobs_creation() -> None:
    import time

    created = datetime.fromtimestamp(time.time() - 50, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    trigger = VertexRungTrigger(job_name=NAME, pending_limit=60, job_created=created, timeout=3600)
    now = time.monotonic()
    deadline = trigger.deadline(now)
    assert deadline is not None and 5 < deadline - now < 15  # 60 s from a creation 50 s ago
    assert VertexRungTrigger(job_name=NAME, timeout=100).deadline(now) == pytest.approx(now + 99, abs=1)


def test_the_walks_state_and_tables() -> None:
    state = LadderState()
    state.steps.append(
        {
            "rung": 1,
            "name": "a100",
            "region": "us-central1",
            "job": "projects/p/locations/us-central1/customJobs/77",
            "outcome": "stockout",
            "reason": "no capacity",
            "seconds": 12.5,
        }
    )
    state.retries[1] = 1
    assert LadderState.from_json(state.to_json()).to_json() == state.to_json()
    table = ladder_table(state.steps)
    assert table.splitlines()[0].split() == ["rung", "name", "region", "job", "left", "because", "seconds"]
    assert table.splitlines()[2].split()[:4] == ["1", "a100", "us-central1", "77"]
    plans = plan_ladder(
        spec(), CapacityLadder(rungs=(Rung(name="a100"), Rung(name="l4", machine=L4))), location="us-central1"
    )
    prices = prices_table(plans, "us-central1")
    assert "8.45 (on-demand)" in prices  # 2 x a2-highgpu-1g, the catalog's us-central1 price
    assert "1x g2-standard-8 1xNVIDIA_L4" in prices


def test_job_cost_is_the_price_times_the_hours_it_ran() -> None:
    from airflow_vertex_dist.jobs.outputs import job_cost

    ran = {"startTime": "2024-01-01T00:00:00Z", "endTime": "2024-01-01T01:30:00Z"}
    assert job_cost(ran, 2.0, "on-demand") == {
        "usd_per_hour": 2.0,
        "basis": "on-demand",
        "hours": 1.5,
        "estimated_usd": 3.0,
    }
    never_started = {"createTime": "2024-01-01T00:00:00Z", "endTime": "2024-01-01T00:05:00Z"}
    assert job_cost(never_started, 2.0, "on-demand")["estimated_usd"] == 0.0
    running = {"startTime": "2024-01-01T00:00:00Z"}
    assert job_cost(running, 2.0, "on-demand")["hours"] is None
    assert job_cost(ran, None, "no price")["estimated_usd"] is None
    study = {
        "parallelTrialCount": 2,
        "endTime": "2024-01-01T03:00:00Z",
        "trials": [
            {"startTime": "2024-01-01T00:00:00Z", "endTime": "2024-01-01T00:30:00Z"},
            {"startTime": "2024-01-01T00:00:00Z", "endTime": "2024-01-01T01:00:00Z"},
        ],
    }
    cost = job_cost(study, 4.0, "on-demand")  # 4 USD/hour for 2 trials at once: 2 a trial
    assert (cost["hours"], cost["estimated_usd"]) == (1.5, 3.0)


def test_a_rungs_job_that_will_not_end_after_its_cancel_fails_the_task() -> None:
    """Leaving a rung: Cancel (cancel_on_kill=False too), then wait for the end; a job still not ended
    after CANCEL_WAIT_S (10 minutes) fails the task rather than let a second job start."""
    from airflow_vertex_dist._compat import AirflowException
    from airflow_vertex_dist.operators.ladder import CANCEL_WAIT_S

    class StuckHook:
        def __init__(self) -> None:
            self.cancelled: list[str] = []
            self.waited: list[float] = []

        def get_job(self, name: str) -> dict[str, Any]:
            return {"name": name, "state": "JOB_STATE_PENDING"}

        def cancel_job(self, name: str) -> None:
            self.cancelled.append(name)

        def wait_until_ended(self, name: str, *, timeout_s: float) -> dict[str, Any]:
            self.waited.append(timeout_s)
            return {"name": name, "state": "JOB_STATE_CANCELLING"}

    task = VertexTrainingOperator(task_id="t", spec=spec(), capacity=[Rung()], cancel_on_kill=False)
    hook = StuckHook()
    task.__dict__["hook"] = hook  # the cached hook
    assert task.ladder_walk is not None
    with pytest.raises(AirflowException, match=r"job j1 is still CANCELLING 600s after it was cancelled"):
        task.ladder_walk.end_job("j1", reason="stockout on rung 1")
    assert hook.cancelled == ["j1"] and hook.waited == [CANCEL_WAIT_S] == [600.0]
