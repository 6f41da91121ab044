"""Free GPUs per region (a stock): with none left a job waits PENDING and, past ``stockout_after_s``,
fails with Vertex AI's stockout error, unless GPUs free up (a job ends, or the stock is raised at
runtime) first; a FLEX_START job waits for its own stock up to ``max_wait_duration`` (``0s``: for ever)
instead. Through the stock clients, gRPC and REST."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from capacity_support import A100, admin, client_for, gpu_job, service_lines, wait_until
from google.cloud.aiplatform_v1 import CustomJob

from vertex_emulator.core.config import Capacity
from vertex_emulator.testing import PARENT, running_emulator, wait_for_state

STOCKOUT = (
    "Resources are insufficient in region: us-central1. "
    "Try a different region or use a different accelerator."
)


def _hold(flag: Path) -> str:
    return f"import os, time\nwhile not os.path.exists({str(flag)!r}): time.sleep(0.02)"


def _create(client: Any, body: dict[str, Any]) -> Any:
    return client.create_custom_job(parent=PARENT, custom_job=CustomJob.from_json(json.dumps(body)))


def _waiting_line(em: Any, name: str) -> dict[str, Any]:
    lines = wait_until(
        "the job's waiting line",
        lambda: [
            r
            for r in service_lines(em, name)
            if r.get("labels", {}).get("ml.googleapis.com/job_state") == "PENDING"
        ],
    )
    return dict(lines[0])


@pytest.mark.parametrize("transport", ["grpc", "rest"])
@pytest.mark.parametrize("strategy", [None, "SPOT"])
def test_no_free_gpus_is_the_stockout_after_the_wait(
    tmp_path: Path, transport: str, strategy: str | None
) -> None:
    none_left = {"us-central1": {A100: 0}}
    capacity = Capacity(stockout_after_s=0.3)
    if strategy == "SPOT":
        capacity.spot_stock = none_left
    else:
        capacity.stock = none_left
    with running_emulator(tmp_path, capacity=capacity) as em, client_for(em, transport) as client:
        job = _create(client, gpu_job("stocked-out", strategy=strategy))
        line = _waiting_line(em, job.name)
        assert line["m"].startswith(
            f"No free {'Spot ' if strategy else ''}capacity in us-central1 for 1 {A100}"
        )
        failed = wait_for_state(client, job.name, ["JOB_STATE_FAILED"])
        assert (failed.error.code, failed.error.message) == (8, STOCKOUT)
        assert not failed.start_time  # it never ran
        # the service log is written as the job ends, just after its state: read it once it is there
        errors = wait_until(
            "the stockout's ERROR line",
            lambda: [r["m"] for r in service_lines(em, job.name) if r.get("sev") == "ERROR"],
        )
        assert errors == [STOCKOUT]
        # the other provisioning model's stock is unlimited: not stocked out
        other = _create(client, gpu_job("other-model", strategy=None if strategy else "SPOT"))
        assert wait_for_state(client, other.name, ["JOB_STATE_SUCCEEDED"]).error.code == 0


def test_gpus_freed_before_the_stockout_start_the_waiting_job(tmp_path: Path) -> None:
    flag = tmp_path / "release"
    capacity = Capacity(stock={"us-central1": {A100: 2}}, stockout_after_s=60)
    with running_emulator(tmp_path, capacity=capacity) as em, client_for(em, "grpc") as client:
        first = _create(client, gpu_job("holds-two", _hold(flag), gpus=2))
        wait_for_state(client, first.name, ["JOB_STATE_RUNNING"])
        second = _create(client, gpu_job("needs-one"))
        _waiting_line(em, second.name)
        assert client.get_custom_job(name=second.name).state.name == "JOB_STATE_PENDING"
        stock = admin(em, "GET", "/emulator/stats")[1]["gpus"]["stock"]
        assert stock == [
            {
                "region": "us-central1",
                "accelerator": A100,
                "provisioning": "standard",
                "limit": 2,
                "in_use": 2,
                "peak": 2,
                "waiting": [second.name],
            }
        ]
        flag.touch()
        assert wait_for_state(client, second.name, ["JOB_STATE_SUCCEEDED"]).error.code == 0


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_stock_raised_at_runtime_starts_the_pending_job(tmp_path: Path, transport: str) -> None:
    capacity = Capacity(stock={"us-central1": {A100: 0}}, stockout_after_s=60)
    with running_emulator(tmp_path, capacity=capacity) as em, client_for(em, transport) as client:
        job = _create(client, gpu_job("waits-for-stock"))
        _waiting_line(em, job.name)
        status, settings = admin(em, "PUT", "/emulator/capacity", {"stock": {"us-central1": {A100: 1}}})
        assert status == 200 and settings["stock"] == {"us-central1": {A100: 1}}
        assert wait_for_state(client, job.name, ["JOB_STATE_SUCCEEDED"]).error.code == 0


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_flex_start_waits_up_to_max_wait_duration(tmp_path: Path, transport: str) -> None:
    """FLEX_START waits for capacity instead of failing with the stockout (stockout_after_s is 0 here),
    up to its max_wait_duration; ``0s`` waits for ever, until capacity is granted."""
    capacity = Capacity(flex_start_stock={"us-central1": {A100: 0}}, stockout_after_s=0)
    with running_emulator(tmp_path, capacity=capacity) as em, client_for(em, transport) as client:
        limited = _create(client, gpu_job("flex-1s", strategy="FLEX_START", max_wait="0.3s"))
        line = _waiting_line(em, limited.name)
        assert "Dynamic Workload Scheduler (FLEX_START) waits up to 0.3s" in line["m"]
        failed = wait_for_state(client, limited.name, ["JOB_STATE_FAILED"])
        assert failed.error.code == 8
        assert failed.error.message == (
            "The requested resources were not provisioned within scheduling.max_wait_duration (0.3s): "
            "Dynamic Workload Scheduler (FLEX_START) found no capacity in region: us-central1."
        )

        forever = _create(client, gpu_job("flex-forever", strategy="FLEX_START", max_wait="0s"))
        line = _waiting_line(em, forever.name)
        assert "waits for ever (max_wait_duration 0s)" in line["m"]
        assert client.get_custom_job(name=forever.name).state.name == "JOB_STATE_PENDING"
        admin(em, "PUT", "/emulator/capacity", {"flex_start_stock": {"us-central1": {A100: 1}}})
        assert wait_for_state(client, forever.name, ["JOB_STATE_SUCCEEDED"]).error.code == 0


def test_a_cancel_ends_the_wait_and_frees_the_line(tmp_path: Path) -> None:
    capacity = Capacity(stock={"us-central1": {A100: 0}}, stockout_after_s=60)
    with running_emulator(tmp_path, capacity=capacity) as em, client_for(em, "grpc") as client:
        job = _create(client, gpu_job("cancelled-while-waiting"))
        _waiting_line(em, job.name)
        client.cancel_custom_job(name=job.name)
        assert wait_for_state(client, job.name, ["JOB_STATE_CANCELLED"]).error.code == 1
        stock = admin(em, "GET", "/emulator/stats")[1]["gpus"]["stock"]
        assert [(row["in_use"], row["waiting"]) for row in stock] == [(0, [])]
