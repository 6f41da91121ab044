"""GPU quota per region and accelerator, as Vertex AI applies it (vertex_emulator.capacity.gpus): a Create
over the quota by itself is RESOURCE_EXHAUSTED naming the quota metric; a job over the quota left beside
running jobs waits QUEUED until they free it (or is refused, with ``over_quota = "refuse"``); SPOT and
FLEX_START jobs count against the preemptible metric; a tuning job's trials are counted one by one.
Through the stock clients, gRPC and REST."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from capacity_support import (
    A100,
    admin,
    answer,
    client_for,
    gpu_job,
    gpu_tuning_job,
    service_lines,
    wait_until,
)
from google.api_core import exceptions as gexc
from google.cloud.aiplatform_v1 import CustomJob, HyperparameterTuningJob

from vertex_emulator.capacity.ledger import Key, Ledger
from vertex_emulator.core.config import Capacity
from vertex_emulator.testing import PARENT, container_job, running_emulator, wait_for_state

METRIC = "aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus"
PREEMPTIBLE = "aiplatform.googleapis.com/custom_model_training_preemptible_nvidia_a100_gpus"
QUOTA_TEXT = "The following quota metrics exceed quota limits: "
KEY: Key = ("us-central1", A100, "on-demand")


def _hold(flag: Path) -> str:
    """Replica code that runs until ``flag`` exists."""
    return f"import os, time\nwhile not os.path.exists({str(flag)!r}): time.sleep(0.02)"


def _create(client: Any, body: dict[str, Any], parent: str = PARENT) -> Any:
    return client.create_custom_job(parent=parent, custom_job=CustomJob.from_json(json.dumps(body)))


def _quota_row(em: Any, metric: str = METRIC) -> dict[str, Any]:
    rows = [row for row in admin(em, "GET", "/emulator/stats")[1]["gpus"]["quota"] if row["metric"] == metric]
    assert len(rows) == 1, rows
    return dict(rows[0])


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_create_over_the_quota_is_refused_naming_the_metric(tmp_path: Path, transport: str) -> None:
    capacity = Capacity(quota={"us-central1": {A100: 1}})
    with running_emulator(tmp_path, capacity=capacity) as em, client_for(em, transport) as client:
        with pytest.raises(gexc.TooManyRequests) as info:  # gRPC ResourceExhausted is its subclass
            _create(client, gpu_job("two-a100", gpus=2))
        assert answer(info.value) == QUOTA_TEXT + METRIC
        if transport == "grpc":
            assert isinstance(info.value, gexc.ResourceExhausted)
        assert list(client.list_custom_jobs(parent=PARENT)) == []  # nothing was created
        # within the quota: created and run; another region has no quota set: unlimited
        ok = _create(client, gpu_job("one-a100"))
        other = _create(
            client, gpu_job("two-elsewhere", gpus=2), parent="projects/test-project/locations/us-east1"
        )
        for name in (ok.name, other.name):
            assert wait_for_state(client, name, ["JOB_STATE_SUCCEEDED"]).error.code == 0


def test_spot_and_flex_start_count_against_the_preemptible_quota(tmp_path: Path) -> None:
    capacity = Capacity(quota={"us-central1": {A100: 0}}, preemptible_quota={"us-central1": {A100: 0}})
    with running_emulator(tmp_path, capacity=capacity) as em, client_for(em, "grpc") as client:
        for strategy, metric in [
            (None, METRIC),
            ("STANDARD", METRIC),
            ("SPOT", PREEMPTIBLE),
            ("FLEX_START", PREEMPTIBLE),
        ]:
            with pytest.raises(gexc.ResourceExhausted) as info:
                _create(client, gpu_job("refused", strategy=strategy))
            assert answer(info.value) == QUOTA_TEXT + metric, strategy
        # a job without accelerators counts against no GPU quota
        cpu = _create(client, container_job("cpu-only"))
        assert wait_for_state(client, cpu.name, ["JOB_STATE_SUCCEEDED"]).error.code == 0


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_job_over_the_quota_left_waits_queued_until_running_jobs_free_it(
    tmp_path: Path, transport: str
) -> None:
    """Vertex AI "keeps the job queued until you have sufficient quotas" (understanding-training-service)."""
    flag = tmp_path / "release"
    capacity = Capacity(quota={"us-central1": {A100: 2}})
    with running_emulator(tmp_path, capacity=capacity) as em, client_for(em, transport) as client:
        first = _create(client, gpu_job("holds-two", _hold(flag), gpus=2))
        wait_for_state(client, first.name, ["JOB_STATE_RUNNING"])
        second = _create(client, gpu_job("needs-one"))  # fits the quota alone, not beside the first
        line = wait_until(
            "the waiting job's service line",
            lambda: [r for r in service_lines(em, second.name) if r["m"].startswith("Waiting for quota")],
        )[0]
        assert line["labels"] == {"ml.googleapis.com/job_state": "QUEUED"}
        assert f"1 {A100} for {METRIC} (limit 2, 2 in use)" in line["m"]
        assert client.get_custom_job(name=second.name).state.name == "JOB_STATE_QUEUED"
        row = _quota_row(em)
        assert (row["limit"], row["in_use"], row["waiting"]) == (2, 2, [second.name])

        flag.touch()  # the first job ends and frees its GPUs
        wait_for_state(client, first.name, ["JOB_STATE_SUCCEEDED"])
        assert wait_for_state(client, second.name, ["JOB_STATE_SUCCEEDED"]).error.code == 0
        row = _quota_row(em)
        assert (row["in_use"], row["peak"], row["waiting"]) == (0, 2, [])


def test_over_quota_refuse_answers_the_create_instead(tmp_path: Path) -> None:
    """The reading users report (a 429 at Create while running jobs use the quota): ``over_quota``."""
    flag = tmp_path / "release"
    capacity = Capacity(quota={"us-central1": {A100: 2}}, over_quota="refuse")
    with running_emulator(tmp_path, capacity=capacity) as em, client_for(em, "rest") as client:
        first = _create(client, gpu_job("holds-two", _hold(flag), gpus=2))
        wait_for_state(client, first.name, ["JOB_STATE_RUNNING"])
        with pytest.raises(gexc.TooManyRequests) as info:
            _create(client, gpu_job("needs-one"))
        assert answer(info.value) == QUOTA_TEXT + METRIC
        flag.touch()
        wait_for_state(client, first.name, ["JOB_STATE_SUCCEEDED"])
        wait_until("the quota freed", lambda: _quota_row(em)["in_use"] == 0)
        later = _create(client, gpu_job("needs-one"))
        assert wait_for_state(client, later.name, ["JOB_STATE_SUCCEEDED"]).error.code == 0


def test_raising_the_quota_at_runtime_starts_the_waiting_job(tmp_path: Path) -> None:
    flag = tmp_path / "release"
    capacity = Capacity(quota={"us-central1": {A100: 1}})
    with running_emulator(tmp_path, capacity=capacity) as em, client_for(em, "grpc") as client:
        first = _create(client, gpu_job("holds-one", _hold(flag)))
        wait_for_state(client, first.name, ["JOB_STATE_RUNNING"])
        second = _create(client, gpu_job("waits", _hold(flag)))
        wait_until("the second job waiting", lambda: _quota_row(em)["waiting"] == [second.name])
        status, settings = admin(em, "PUT", "/emulator/capacity", {"quota": {"us-central1": {A100: 2}}})
        assert status == 200 and settings["quota"] == {"us-central1": {A100: 2}}
        wait_for_state(client, second.name, ["JOB_STATE_RUNNING"])
        assert client.get_custom_job(name=first.name).state.name == "JOB_STATE_RUNNING"  # both at once
        flag.touch()
        for name in (first.name, second.name):
            wait_for_state(client, name, ["JOB_STATE_SUCCEEDED"])


REPORT = (
    "import sys, time, hypertune\n"
    "time.sleep(0.5)\n"
    "x = float(sys.argv[-1].split('=')[1])\n"
    "hypertune.HyperTune().report_hyperparameter_tuning_metric("
    "hyperparameter_metric_tag='score', metric_value=x, global_step=1)\n"
)


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_a_tuning_job_is_counted_per_trial(tmp_path: Path, transport: str) -> None:
    """A trial over the quota by itself is refused at Create; parallel trials beyond the quota wait
    QUEUED, so no more GPUs than the quota run at once (the trials overlap when the quota allows)."""
    capacity = Capacity(quota={"us-central1": {A100: 1}})
    with running_emulator(tmp_path, capacity=capacity) as em, client_for(em, transport) as client:

        def create(body: dict[str, Any]) -> Any:
            job = HyperparameterTuningJob.from_json(json.dumps(body))
            return client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=job)

        with pytest.raises(gexc.TooManyRequests) as info:
            create(gpu_tuning_job("two-per-trial", REPORT, gpus=2))
        assert answer(info.value) == QUOTA_TEXT + METRIC

        job = create(gpu_tuning_job("one-per-trial", REPORT, gpus=1, trials=2, parallel=2))
        done = wait_for_state(client, job.name, ["JOB_STATE_SUCCEEDED"], timeout=60)
        assert [t.state.name for t in done.trials] == ["SUCCEEDED", "SUCCEEDED"]
        row = _quota_row(em)
        assert (row["peak"], row["in_use"]) == (1, 0)
        waited = [
            t.custom_job
            for t in done.trials
            if any(r["m"].startswith("Waiting for quota") for r in service_lines(em, t.custom_job))
        ]
        assert len(waited) == 1  # the second trial waited for the first one's GPU

        # the same tuning job with the quota it needs runs both trials at once
        admin(em, "PUT", "/emulator/capacity", {"quota": {"us-central1": {A100: 2}}})
        job = create(gpu_tuning_job("one-per-trial", REPORT, gpus=1, trials=2, parallel=2))
        wait_for_state(client, job.name, ["JOB_STATE_SUCCEEDED"], timeout=60)
        assert _quota_row(em)["peak"] == 2


def test_the_default_is_unlimited(tmp_path: Path) -> None:
    """No capacity settings: GPU jobs run as before (nothing refused, nothing waits)."""
    with running_emulator(tmp_path) as em, client_for(em, "grpc") as client:
        job = _create(client, gpu_job("eight", gpus=8, strategy="SPOT"))
        assert wait_for_state(client, job.name, ["JOB_STATE_SUCCEEDED"]).error.code == 0
        assert admin(em, "GET", "/emulator/stats")[1]["gpus"]["quota"][0]["limit"] is None


def test_the_books_grant_first_come_first_served_per_key() -> None:
    """A job in line is not passed over by one that arrived after it on the same key, even one that
    would fit; a job that needs more than a lowered limit holds the key's line until it is raised."""
    limits: dict[Key, int | None] = {KEY: 2}
    woken: list[str] = []
    books = Ledger(limits.get)

    def take(owner: str, count: int) -> list[Key]:
        return books.acquire(owner, {KEY: count}, lambda: woken.append(owner))

    assert take("a", 2) == []
    assert take("b", 1) == [KEY] and take("c", 1) == [KEY]
    books.release("a")
    assert woken == ["b", "c"]
    assert take("c", 1) == [KEY]  # "b" is first in line: "c" waits although a GPU is free
    assert take("b", 1) == [] and take("c", 1) == []
    books.release("b")
    books.release("c")

    limits[KEY] = 1  # lowered below what "d" needs
    assert take("d", 2) == [KEY] and take("e", 1) == [KEY]
    limits[KEY] = 2
    woken.clear()
    books.changed()
    assert woken == ["d", "e"]
    assert take("e", 1) == [KEY] and take("d", 2) == [] and take("e", 1) == [KEY]
    assert books.rows(set()) == [{"key": KEY, "limit": 2, "in_use": 2, "peak": 2, "waiting": ["e"]}]
