"""TPU VM jobs through the stock clients (gRPC and REST): the machine types and topologies of Google's TPU
slice tables (TPU v5e ``ct5lp-hightpu-*``, v6e ``ct6e-standard-*``; the catalog derives them from
``catalog/configure_compute_page.json``), and the refusal of a topology the tables do not give the
machine type. A TPU job runs on the host as any job does: the TPU is validated, not provided."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.api_core import exceptions
from google.cloud.aiplatform_v1.types import CustomJob

from vertex_emulator.app import Emulator
from vertex_emulator.testing import PARENT, container_job, wait_for_state


def tpu_job(machine_type: str, topology: str | None, **machine: Any) -> CustomJob:
    body = container_job("tpu", "print('on a TPU VM, locally')")
    spec = body["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]
    spec["machineType"] = machine_type
    spec.update(machine)
    if topology is not None:
        spec["tpuTopology"] = topology
    return CustomJob.from_json(json.dumps(body))


GOOD = [
    ("ct6e-standard-8t", "2x4"),
    ("ct6e-standard-4t", "2x2"),
    ("ct6e-standard-1t", "1x1"),
    ("ct6e-standard-4t", None),
    ("ct5lp-hightpu-4t", "2x2"),
]
BAD = [
    ("ct6e-standard-8t", "4x4", "tpu_topology", 'TPU topology "4x4" is not supported for machine type'),
    ("ct6e-standard-4t", "2x4", "tpu_topology", "Supported topologies: 2x2, 4x4, 4x8, 8x8, 8x16, 16x16."),
    ("ct5lp-hightpu-1t", "2x2", "tpu_topology", "Supported topologies: 1x1."),
    ("ct6e-standard-2t", None, "machine_type", 'Machine type "ct6e-standard-2t" is not supported.'),
]


@pytest.mark.parametrize(("machine_type", "topology"), GOOD)
def test_a_tpu_vm_job_of_googles_tables_runs_through_grpc(
    emulator: Emulator, grpc_client: Any, machine_type: str, topology: str | None
) -> None:
    job = grpc_client.create_custom_job(parent=PARENT, custom_job=tpu_job(machine_type, topology))
    assert job.job_spec.worker_pool_specs[0].machine_spec.machine_type == machine_type
    assert job.job_spec.worker_pool_specs[0].machine_spec.tpu_topology == (topology or "")
    wait_for_state(emulator, job.name, {"JOB_STATE_SUCCEEDED"}, timeout=60)


@pytest.mark.parametrize(("machine_type", "topology", "field", "text"), BAD)
@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_topology_or_machine_type_outside_the_tables_is_refused(
    request: pytest.FixtureRequest,
    transport: str,
    machine_type: str,
    topology: str | None,
    field: str,
    text: str,
) -> None:
    client = request.getfixturevalue(f"{transport}_client")
    # gRPC's INVALID_ARGUMENT is InvalidArgument; REST's HTTP 400 is BadRequest, its base class
    with pytest.raises(exceptions.BadRequest) as info:
        client.create_custom_job(parent=PARENT, custom_job=tpu_job(machine_type, topology))
    message = str(info.value.message)
    assert f"Field: job_spec.worker_pool_specs[0].machine_spec.{field}; Message: " in message
    assert text in message


def test_a_v6e_machine_names_no_accelerator(grpc_client: Any) -> None:
    """The v1 AcceleratorType has no TPU v6e value: naming another TPU on a v6e machine is refused."""
    body = tpu_job("ct6e-standard-4t", "2x2", acceleratorType="TPU_V5_LITEPOD", acceleratorCount=4)
    with pytest.raises(exceptions.InvalidArgument) as info:
        grpc_client.create_custom_job(parent=PARENT, custom_job=body)
    assert 'Machine type "ct6e-standard-4t" does not support accelerators.' in str(info.value.message)
