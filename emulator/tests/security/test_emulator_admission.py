"""Admission under load: quota refusals that cannot be raced, and GPU waits that hold no host slots.

* ``--over-quota refuse`` with a quota of 8 GPUs: of 50 concurrent one-GPU Creates through the stock
  clients (gRPC and REST at once), exactly 8 are accepted and 42 refused with the service's
  RESOURCE_EXHAUSTED naming the metric (the check and the reservation are one step of the quota book:
  capacity/ledger.py, ``GpuCapacity.admit``). Before, 32-44 were accepted and waited QUEUED.
* A FLEX_START job waiting for GPUs gives its replica slots back for the wait (runtime/admission.py):
  with room for one replica, a CPU-only job created behind it starts and succeeds while it waits.
  Before, the CPU-only job waited QUEUED behind it for ever.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from capacity_support import A100, admin, gpu_job, service_lines, wait_until
from google.api_core import exceptions
from google.cloud.aiplatform_v1 import CustomJob
from probes import PARENT, record

from vertex_emulator import testing
from vertex_emulator.core.config import Capacity

QUOTA = 8
CREATES = 50
METRIC = "aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus"
DEADLINE_S = 60.0


def _hold(flag: Path) -> str:
    return (
        "import os, time\n"
        "end = time.time() + 120\n"
        f"while not os.path.exists({str(flag)!r}) and time.time() < end:\n"
        "    time.sleep(0.05)\n"
    )


@pytest.fixture
def clients(tmp_path: Path) -> Iterator[tuple[Any, list[Any], Path]]:
    capacity = Capacity(quota={"us-central1": {A100: QUOTA}}, over_quota="refuse")
    with testing.running_emulator(tmp_path / "state", capacity=capacity, max_replica_processes=64) as em:
        pair = [testing.grpc_client(em), testing.rest_client(em)]
        try:
            yield em, pair, tmp_path / "release"
        finally:
            for client in pair:
                client.transport.close()


def test_concurrent_creates_over_a_refusing_quota_accept_exactly_what_fits(
    clients: tuple[Any, list[Any], Path],
) -> None:
    em, pair, flag = clients
    body = CustomJob.from_json(json.dumps(gpu_job("burst", _hold(flag))))

    def create(i: int) -> Any:
        try:
            return pair[i % 2].create_custom_job(parent=PARENT, custom_job=body, timeout=DEADLINE_S)
        except exceptions.GoogleAPICallError as exc:
            return exc

    with ThreadPoolExecutor(CREATES) as pool:
        results = list(pool.map(create, range(CREATES)))
    accepted = [r for r in results if isinstance(r, CustomJob)]
    refused = [r for r in results if not isinstance(r, CustomJob)]
    record(
        "quota_admission_race",
        f"{CREATES} concurrent one-GPU Creates (gRPC and REST), quota {QUOTA}, --over-quota refuse",
        f"{len(accepted)} accepted, {len(refused)} refused RESOURCE_EXHAUSTED (was 49 accepted)",
    )
    try:
        assert len(accepted) == QUOTA, [type(r).__name__ for r in results]
        # RESOURCE_EXHAUSTED: gRPC's code, HTTP 429 through REST (the stock REST client's TooManyRequests)
        assert all(isinstance(r, (exceptions.ResourceExhausted, exceptions.TooManyRequests)) for r in refused)
        assert all(METRIC in str(r.message) for r in refused)
        for job in accepted:  # each accepted job runs: its quota was taken at Create
            testing.wait_for_state(em, job.name, ["JOB_STATE_RUNNING"], timeout=DEADLINE_S)
    finally:
        flag.touch()
    for job in accepted:
        testing.wait_for_state(em, job.name, ["JOB_STATE_SUCCEEDED"], timeout=DEADLINE_S)
    (row,) = [r for r in admin(em, "GET", "/emulator/stats")[1]["gpus"]["quota"] if r["accelerator"] == A100]
    assert (row["peak"], row["in_use"]) == (QUOTA, 0)
    # the quota freed by the jobs that ended admits the next Create
    after = pair[0].create_custom_job(parent=PARENT, custom_job=body, timeout=DEADLINE_S)
    testing.wait_for_state(em, after.name, ["JOB_STATE_SUCCEEDED"], timeout=DEADLINE_S)


def test_a_job_waiting_for_gpus_holds_no_replica_slot(tmp_path: Path) -> None:
    capacity = Capacity(flex_start_stock={"us-central1": {A100: 0}})
    with testing.running_emulator(tmp_path, capacity=capacity, max_replica_processes=1) as em:
        client = testing.grpc_client(em)
        try:
            flex = client.create_custom_job(
                parent=PARENT,
                custom_job=CustomJob.from_json(
                    json.dumps(gpu_job("flex", strategy="FLEX_START", max_wait="0s"))
                ),
            )
            wait_until(
                "the flex-start job waiting for GPUs",
                lambda: any(
                    "Dynamic Workload Scheduler" in line["m"] for line in service_lines(em, flex.name)
                ),
            )
            cpu = client.create_custom_job(
                parent=PARENT, custom_job=CustomJob.from_json(json.dumps(testing.container_job("cpu")))
            )
            try:
                done = testing.wait_for_state(client, cpu.name, ["JOB_STATE_SUCCEEDED"], timeout=DEADLINE_S)
            except TimeoutError:
                record(
                    "gpu_wait_slots",
                    "room for 1 replica; a FLEX_START job waiting for GPUs, then a CPU-only job",
                    "the CPU-only job waited QUEUED behind it",
                )
                raise
            record(
                "gpu_wait_slots",
                "room for 1 replica; a FLEX_START job waiting for GPUs, then a CPU-only job",
                "the CPU-only job ran and SUCCEEDED while the GPU job waited PENDING (was QUEUED for ever)",
            )
            assert done.error.code == 0
            assert client.get_custom_job(name=flex.name).state.name == "JOB_STATE_PENDING"
            # GPUs free up: the flex-start job takes its slot again and runs
            status, _ = admin(
                em, "PUT", "/emulator/capacity", {"flex_start_stock": {"us-central1": {A100: 1}}}
            )
            assert status == 200
            testing.wait_for_state(client, flex.name, ["JOB_STATE_SUCCEEDED"], timeout=DEADLINE_S)
        finally:
            client.transport.close()
