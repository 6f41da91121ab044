"""TPU jobs through the stock clients (gRPC and REST): the machine types and topologies of the TPU tables
of Google's "Configure compute resources" page (TPU v5e ``ct5lp-hightpu-*``, v6e ``ct6e-standard-*``, 7x
``tpu7x-standard-4t``; the catalog derives them from ``catalog/configure_compute_page.json``), the
refusal of a topology the tables do not give the machine type, ``cloud-tpu``'s TPU v2 and v3 counts
(a single TPU or a Pod) and the page's pool rule (a single worker pool of one replica). A TPU job runs on
the host as any job does: the TPU is validated, not provided."""

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
    ("ct5lp-hightpu-4t", "4x4"),
    ("ct6e-standard-4t", "2x4"),
    ("tpu7x-standard-4t", "2x2x2"),
]
BAD = [
    ("ct6e-standard-8t", "4x4", "tpu_topology", 'TPU topology "4x4" is not supported for machine type'),
    ("tpu7x-standard-4t", "2x2", "tpu_topology", "Supported topologies: 2x2x1, 2x2x2, 2x2x4, 2x4x4, 4x4x4,"),
    ("ct5p-hightpu-4t", None, "machine_type", 'Machine type "ct5p-hightpu-4t" is not supported.'),
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


@pytest.mark.parametrize(("accelerator", "count"), [("TPU_V2", 8), ("TPU_V2", 64), ("TPU_V3", 40)])
def test_cloud_tpu_runs_a_single_tpu_or_a_pod(
    emulator: Emulator, grpc_client: Any, accelerator: str, count: int
) -> None:
    body = tpu_job("cloud-tpu", None, acceleratorType=accelerator, acceleratorCount=count)
    job = grpc_client.create_custom_job(parent=PARENT, custom_job=body)
    wait_for_state(emulator, job.name, {"JOB_STATE_SUCCEEDED"}, timeout=60)


@pytest.mark.parametrize(
    ("accelerator", "count", "counts"),
    [
        ("TPU_V2", 16, "8 (a single TPU), 32 or a multiple of 32 (a TPU Pod)"),
        ("TPU_V2", 48, "8 (a single TPU), 32 or a multiple of 32 (a TPU Pod)"),
        ("TPU_V3", 24, "8 (a single TPU), 32 or more (a TPU Pod)"),
    ],
)
@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_cloud_tpu_count_the_page_does_not_give_is_refused(
    request: pytest.FixtureRequest, transport: str, accelerator: str, count: int, counts: str
) -> None:
    client = request.getfixturevalue(f"{transport}_client")
    body = tpu_job("cloud-tpu", None, acceleratorType=accelerator, acceleratorCount=count)
    with pytest.raises(exceptions.BadRequest) as info:
        client.create_custom_job(parent=PARENT, custom_job=body)
    message = str(info.value.message)
    assert "Field: job_spec.worker_pool_specs[0].machine_spec.accelerator_count; Message: " in message
    assert (
        f'Accelerator count {count} is not supported for accelerator "{accelerator}" and machine' in message
    )
    assert f"Supported counts: {counts}." in message


@pytest.mark.parametrize("transport", ["grpc", "rest"])
@pytest.mark.parametrize("second_pool", [1, 3])
def test_a_tpu_job_with_a_second_worker_pool_is_refused(
    request: pytest.FixtureRequest, transport: str, second_pool: int
) -> None:
    """The page: "you must only use a single worker pool [...] and [...] only one replica"."""
    client = request.getfixturevalue(f"{transport}_client")
    body = json.loads(CustomJob.to_json(tpu_job("tpu7x-standard-4t", "2x2x1")))
    pools = body["jobSpec"]["workerPoolSpecs"]
    cpu = json.loads(json.dumps(pools[0]))
    cpu["machineSpec"] = {"machineType": "n1-standard-4"}
    pools.extend([{}] * (second_pool - 1) + [cpu])
    with pytest.raises(exceptions.BadRequest) as info:
        client.create_custom_job(parent=PARENT, custom_job=CustomJob.from_json(json.dumps(body)))
    message = str(info.value.message)
    assert f"Field: job_spec.worker_pool_specs[{second_pool}]; Message: " in message
    assert "a job on TPU VMs (tpu7x-standard-4t in worker pool 0) uses only a single worker pool" in message


@pytest.mark.parametrize(
    "machine",
    [
        {"machineType": "n4-standard-8"},
        {"machineType": "g4-standard-48", "acceleratorType": "NVIDIA_RTX_PRO_6000", "acceleratorCount": 1},
    ],
)
def test_the_pages_n4_and_g4_machines_run(
    emulator: Emulator, rest_client: Any, machine: dict[str, Any]
) -> None:
    body = container_job("n4-g4", "print('ok')")
    body["jobSpec"]["workerPoolSpecs"][0]["machineSpec"] = machine
    job = rest_client.create_custom_job(parent=PARENT, custom_job=CustomJob.from_json(json.dumps(body)))
    wait_for_state(emulator, job.name, {"JOB_STATE_SUCCEEDED"}, timeout=60)
