"""Labels as the service's own error text bounds them, and reservations as "Use reservations with
training" and "Use Spot VMs with training" allow them, through the stock JobServiceClient over gRPC and
REST (rules/labels.py, rules/scheduling.py)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import aiplatform_v1

from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.rules import check_create
from vertex_emulator.testing import PARENT, container_job

REFUSED = (gexc.InvalidArgument, gexc.BadRequest)


@pytest.fixture(params=["grpc", "rest"])
def client(request: pytest.FixtureRequest, emulator: Emulator) -> Iterator[Any]:
    made = testing.grpc_client(emulator) if request.param == "grpc" else testing.rest_client(emulator)
    yield made
    made.transport.close()


def _custom(body: dict[str, Any]) -> aiplatform_v1.CustomJob:
    return aiplatform_v1.CustomJob.from_json(json.dumps(body))


@pytest.mark.parametrize(
    ("labels", "field", "message"),
    [
        ({"k" * 64: "v"}, "labels", "must be less than 64 characters in length"),
        ({"team": "v" * 64}, "labels.team", "must be less than 64 characters in length"),
        ({"team": "日" * 43}, "labels.team", "less than 128 bytes in length when encoded in UTF-8"),
        ({"日" * 43: "v"}, "labels", "less than 128 bytes in length when encoded in UTF-8"),
        ({"_team": "v"}, "labels", "must start with a letter or number"),
        ({f"k{i}": "v" for i in range(65)}, "labels", "no more than 64 labels"),
    ],
)
def test_labels_the_service_refuses(client: Any, labels: dict[str, str], field: str, message: str) -> None:
    with pytest.raises(REFUSED) as info:
        client.create_custom_job(parent=PARENT, custom_job=_custom(container_job("x", labels=labels)))
    assert f"Field: {field};" in str(info.value) and message in str(info.value)


def test_labels_the_service_takes(client: Any) -> None:
    labels = {"k" * 63: "v" * 63, "9lives": "x", "team": "日" * 42, "équipe": "é" * 63}
    job = client.create_custom_job(parent=PARENT, custom_job=_custom(container_job("x", labels=labels)))
    assert dict(job.labels) == labels
    with contextlib.suppress(gexc.FailedPrecondition):  # clean-up: the job may have ended already
        client.cancel_custom_job(name=job.name)


def _gpu_job(strategy: str, affinity: str) -> dict[str, Any]:
    machine: dict[str, Any] = {
        "machineType": "g2-standard-4",
        "acceleratorType": "NVIDIA_L4",
        "acceleratorCount": 1,
        "reservationAffinity": {"reservationAffinityType": affinity},
    }
    if affinity == "SPECIFIC_RESERVATION":
        machine["reservationAffinity"].update(
            key="compute.googleapis.com/reservation-name",
            values=["projects/p/zones/us-central1-a/reservations/r"],
        )
    pool = {"machineSpec": machine, "replicaCount": "1", "containerSpec": {"imageUri": "python:3.11"}}
    return {
        "displayName": "x",
        "jobSpec": {"workerPoolSpecs": [pool], "scheduling": {"strategy": strategy}},
    }


@pytest.mark.parametrize("strategy", ["FLEX_START", "SPOT"])
@pytest.mark.parametrize("affinity", ["ANY_RESERVATION", "SPECIFIC_RESERVATION"])
def test_flex_start_and_spot_do_not_consume_reservations(client: Any, strategy: str, affinity: str) -> None:
    with pytest.raises(REFUSED) as info:
        client.create_custom_job(parent=PARENT, custom_job=_custom(_gpu_job(strategy, affinity)))
    text = str(info.value)
    assert "Field: job_spec.worker_pool_specs[0].machine_spec.reservation_affinity;" in text
    assert f"{strategy} cannot consume a reservation" in text


@pytest.mark.parametrize(
    ("strategy", "affinity"),
    [("FLEX_START", "NO_RESERVATION"), ("SPOT", "NO_RESERVATION"), ("STANDARD", "ANY_RESERVATION")],
)
def test_reservations_that_stay_allowed(strategy: str, affinity: str) -> None:
    assert check_create("customJobs", _custom(_gpu_job(strategy, affinity)), "us-central1") == []
