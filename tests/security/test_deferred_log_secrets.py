"""Finding 2 of issue 37: a secret printed by a replica was masked in a task that waited in its worker,
and written in clear in a deferred task's log: the triggerer never learned the value.

The task hands the trigger where its job carries the values its masker hides (``mask_spans``:
JSON pointers and character spans, never the values, which would be stored in the metadata
database); the trigger reads them from the job it polls, teaches them to its own masker before its
stream writes a line, and masks every line it writes. The trigger runs here in Airflow's own
``TriggerRunner.run_trigger`` (the triggerer's coroutine) against the emulator, with a secrets masker
that, like a triggerer's, never saw the value the worker rendered into the job.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog.testing
from airflow.jobs.triggerer_job_runner import TriggerRunner
from airflow.sdk.log import _secrets_masker, mask_secret
from stack.figures import Figures

from airflow_vertex_dist._compat import redact
from airflow_vertex_dist.hooks.connection import RetryPolicy
from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
from airflow_vertex_dist.logs.masking import secret_spans
from airflow_vertex_dist.triggers.jobs import VertexJobTrigger
from vertex_emulator import testing
from vertex_emulator.app import Emulator

SECRET = "tok-3f9a1c7e5b2d"  # a value from a sensitive Variable, rendered into the job's spec
PRINTS = "import os; print('token=' + os.environ['API_TOKEN']); print('done')"


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    with testing.running_emulator(Path(tmp_path_factory.mktemp("emulator"))) as running:
        yield running


@pytest.fixture
def em(emulator: Emulator, monkeypatch: pytest.MonkeyPatch) -> Emulator:
    extra = {"project": "test-project", "location": "us-central1", "api_endpoint": emulator.grpc_target}
    extra["emulator"] = True  # type: ignore[assignment]
    monkeypatch.setenv(
        "AIRFLOW_CONN_VERTEX_DIST_DEFAULT", json.dumps({"conn_type": "vertex_dist", "extra": extra})
    )
    monkeypatch.setenv("AIRFLOW__VERTEX_DIST__LOG_SETTLE_SECONDS", "0")
    monkeypatch.setenv("AIRFLOW_DISABLE_GREENBACK_PORTAL", "true")
    return emulator


def message(entry: dict[str, Any]) -> str:
    """A captured log call's text, its %-arguments put in as the log pipeline would."""
    args = entry.get("positional_args")
    return str(entry["event"]) % tuple(args) if args else str(entry["event"])


def worker_creates_job() -> tuple[dict[str, Any], list[str]]:
    """The worker's side: the secret is known to its masker; the job carries it; the spans are taken."""
    mask_secret(SECRET)
    body = testing.container_job("secret-printer", PRINTS)
    body["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["env"] = [{"name": "API_TOKEN", "value": SECRET}]
    hook = VertexJobsHook(retry_policy=RetryPolicy(initial_s=0.01, maximum_s=0.05, deadline_s=20.0))
    try:
        job = hook.create_custom_job(body)
    finally:
        hook.close()
    spans = secret_spans(job)
    assert spans and SECRET not in json.dumps(spans)  # positions only, never the value
    return job, spans


def test_a_deferred_tasks_log_masks_a_secret_its_replica_prints(em: Emulator) -> None:
    job, spans = worker_creates_job()
    _secrets_masker().reset_masker()  # the triggerer's process: it never read the Variable
    assert redact(f"token={SECRET}") == f"token={SECRET}"
    trigger = VertexJobTrigger(
        job_name=str(job["name"]), poll_interval=0.05, stream_logs="all", mask_spans=spans
    )
    rebuilt = VertexJobTrigger(**trigger.serialize()[1])  # as the triggerer builds it from the database
    assert SECRET not in json.dumps(trigger.serialize()[1])
    runner = TriggerRunner()
    runner.triggers[1] = {"task": None, "name": "secret", "events": 0, "is_watcher": False}

    async def run() -> None:
        await asyncio.wait_for(runner.run_trigger(1, rebuilt), timeout=120)

    try:
        with structlog.testing.capture_logs() as captured:  # what the trigger hands its log
            asyncio.run(run())
    finally:
        _secrets_masker().reset_masker()
    messages = [message(entry) for entry in captured]
    (entry,) = list(runner.events)
    assert entry.event.payload["status"] == "success"
    printed = [m for m in messages if "token=" in m]
    assert printed and all("token=***" in m for m in printed), messages
    assert not any(SECRET in m for m in messages), messages
    Figures.record(
        "security_probes",
        "deferred_log_secret",
        {
            "input": "a replica prints a sensitive Variable's value, its task deferred "
            "(Airflow's TriggerRunner, a masker that never read the Variable)",
            "answer": f"{printed[0]} (was the value in clear); the trigger's kwargs hold positions only",
        },
    )
