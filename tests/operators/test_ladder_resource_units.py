"""The pending limit a rung on a persistent resource shares between the resource and its job
(``LadderState.waited``, ``plan_of``), kept across a deferral as plain JSON."""

from __future__ import annotations

from datetime import timedelta

from airflow_vertex_dist.operators.ladder_parts import LadderState
from airflow_vertex_dist.specs import (
    CapacityLadder,
    Container,
    DistributedTrainingJob,
    Machine,
    Rung,
    WorkerPool,
)
from airflow_vertex_dist.specs.capacity import plan_ladder

SPEC = DistributedTrainingJob(
    display_name="x",
    primary=WorkerPool(
        machine=Machine(machine_type="n1-standard-4"), container=Container(image_uri="python:3.11")
    ),
)
PLANS = plan_ladder(SPEC, CapacityLadder(rungs=(Rung(pending_limit=600), Rung())), location="us-central1")


def test_the_resource_wait_is_taken_off_the_job_limit_and_survives_a_deferral() -> None:
    state = LadderState(waited={1: 420.0, 2: 30.0})
    again = LadderState.from_json(state.to_json())
    assert again.waited == {1: 420.0, 2: 30.0}
    assert again.plan_of(PLANS, 1).rung.pending_limit == timedelta(seconds=180)
    assert again.plan_of(PLANS, 2) is PLANS[1]  # no limit: nothing to take off


def test_a_limit_spent_on_the_resource_leaves_the_job_a_millisecond() -> None:
    state = LadderState(waited={1: 900.0})
    assert state.plan_of(PLANS, 1).rung.pending_limit == timedelta(milliseconds=1)


def test_a_state_without_waits_keeps_its_json_shape() -> None:
    assert LadderState().to_json() == {"steps": [], "retries": {}}
    assert LadderState().plan_of(PLANS, 1) is PLANS[0]
