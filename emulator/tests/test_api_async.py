"""The stock JobServiceAsyncClient over asyncio gRPC against the emulator: both job kinds."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import aiplatform_v1

from vertex_emulator.testing import PARENT, container_job, tuning_job

SLEEP = "import time; time.sleep(60)"


async def _wait(getter: Any, name: str, state: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        job = await getter(name=name)
        if job.state.name == state:
            return job
        if time.monotonic() > deadline:
            raise TimeoutError(f"{name} still {job.state.name}")
        await asyncio.sleep(0.05)


async def test_custom_job_over_async_grpc(async_grpc_client: Any) -> None:
    client = async_grpc_client
    body = aiplatform_v1.CustomJob.from_json(json.dumps(container_job("async", SLEEP, labels={"k": "v"})))
    created = await client.create_custom_job(parent=PARENT, custom_job=body)
    assert created.name.startswith(f"{PARENT}/customJobs/")
    got = await client.get_custom_job(name=created.name)
    assert got.labels["k"] == "v"

    pager = await client.list_custom_jobs(request={"parent": PARENT, "filter": "labels.k:*"})
    assert [job.name async for job in pager] == [created.name]

    with pytest.raises(gexc.FailedPrecondition, match="only a finished job can be deleted"):
        await client.delete_custom_job(name=created.name)
    await client.cancel_custom_job(name=created.name)
    cancelled = await _wait(client.get_custom_job, created.name, "JOB_STATE_CANCELLED")
    assert cancelled.error.code == 1
    with pytest.raises(gexc.FailedPrecondition, match="already in state JOB_STATE_CANCELLED"):
        await client.cancel_custom_job(name=created.name)
    operation = await client.delete_custom_job(name=created.name)
    await operation.result()
    with pytest.raises(gexc.NotFound):
        await client.get_custom_job(name=created.name)
    with pytest.raises(gexc.InvalidArgument, match="invalid filter"):
        await client.list_custom_jobs(request={"parent": PARENT, "filter": "state=NOPE"})


async def test_tuning_job_over_async_grpc(async_grpc_client: Any) -> None:
    client = async_grpc_client
    body = aiplatform_v1.HyperparameterTuningJob.from_json(json.dumps(tuning_job("async-study", SLEEP)))
    created = await client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=body)
    assert created.name.startswith(f"{PARENT}/hyperparameterTuningJobs/")
    pager = await client.list_hyperparameter_tuning_jobs(parent=PARENT)
    assert [job.name async for job in pager] == [created.name]
    await client.cancel_hyperparameter_tuning_job(name=created.name)
    await _wait(client.get_hyperparameter_tuning_job, created.name, "JOB_STATE_CANCELLED")
    await (await client.delete_hyperparameter_tuning_job(name=created.name)).result()
    with pytest.raises(gexc.NotFound):
        await client.get_hyperparameter_tuning_job(name=created.name)


async def test_job_succeeds_over_async_grpc(async_grpc_client: Any) -> None:
    client = async_grpc_client
    body = aiplatform_v1.CustomJob.from_json(json.dumps(container_job("async-ok", "print('ok')", workers=1)))
    created = await client.create_custom_job(parent=PARENT, custom_job=body)
    done = await _wait(client.get_custom_job, created.name, "JOB_STATE_SUCCEEDED", timeout=60)
    assert done.error.code == 0 and done.end_time >= done.start_time
