"""FLEX_START and SPOT jobs consume no reservation ("Use reservations with training"): the specs refuse
one when the DAG file is parsed, naming the pool's field and the rule, as the emulator does at Create."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from airflow_vertex_dist.specs import DistributedTrainingJob, ReservationAffinity, Scheduling

from ._helpers import pool

SPECIFIC = {
    "reservation_affinity_type": "SPECIFIC_RESERVATION",
    "key": "compute.googleapis.com/reservation-name",
    "values": ["projects/p/zones/us-central1-a/reservations/r"],
}


def _job(strategy: str, affinity: dict[str, Any], *, workers: bool = False) -> DistributedTrainingJob:
    gpu: dict[str, Any] = {"accelerator_type": "NVIDIA_TESLA_A100", "accelerator_count": 1}
    reserved = ReservationAffinity(**affinity)
    primary = pool("a2-highgpu-1g", reservation_affinity=reserved, **gpu)
    return DistributedTrainingJob(
        display_name="x",
        primary=primary,
        workers=pool("a2-highgpu-1g", 2, reservation_affinity=reserved, **gpu) if workers else None,
        scheduling=Scheduling(strategy=strategy),
    )


@pytest.mark.parametrize("strategy", ["FLEX_START", "SPOT"])
@pytest.mark.parametrize("affinity", [{"reservation_affinity_type": "ANY_RESERVATION"}, SPECIFIC])
def test_flex_start_and_spot_refuse_a_reservation(strategy: str, affinity: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as info:
        _job(strategy, affinity, workers=True)
    assert f"primary.machine.reservation_affinity: {strategy} cannot consume a reservation" in str(info.value)


@pytest.mark.parametrize(
    ("strategy", "affinity"),
    [
        ("FLEX_START", {"reservation_affinity_type": "NO_RESERVATION"}),
        ("SPOT", {"reservation_affinity_type": "NO_RESERVATION"}),
        ("STANDARD", {"reservation_affinity_type": "ANY_RESERVATION"}),
        ("STANDARD", SPECIFIC),
    ],
)
def test_what_stays_allowed(strategy: str, affinity: dict[str, Any]) -> None:
    assert _job(strategy, affinity).to_api()["jobSpec"]["scheduling"]["strategy"] == strategy
