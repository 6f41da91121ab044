"""The stock sync JobServiceClient, over gRPC and over REST, against the emulator: every method of
both job kinds, filters, paging, read masks, and the service's error codes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import aiplatform_v1

from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.testing import PARENT, container_job, tuning_job, wait_for_state

SLEEP = "import time; time.sleep(60)"
RUNNING_OR_BEFORE = {"JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING"}


@pytest.fixture(params=["grpc", "rest"])
def client(request: pytest.FixtureRequest, emulator: Emulator) -> Iterator[Any]:
    made = testing.grpc_client(emulator) if request.param == "grpc" else testing.rest_client(emulator)
    yield made
    made.transport.close()


def _custom(body: dict[str, Any]) -> aiplatform_v1.CustomJob:
    return aiplatform_v1.CustomJob.from_json(__import__("json").dumps(body))


def _tuning(body: dict[str, Any]) -> aiplatform_v1.HyperparameterTuningJob:
    return aiplatform_v1.HyperparameterTuningJob.from_json(__import__("json").dumps(body))


def _is_failed_precondition(exc: gexc.GoogleAPICallError) -> bool:
    # gRPC carries the code itself; REST maps FAILED_PRECONDITION to HTTP 400 as the service does.
    return isinstance(exc, gexc.FailedPrecondition) or (isinstance(exc, gexc.BadRequest) and exc.code == 400)


def test_custom_job_lifecycle(client: Any) -> None:
    body = container_job("lifecycle", SLEEP, labels={"team": "ml", "managed-by": "airflow-vertex-dist"})
    created = client.create_custom_job(parent=PARENT, custom_job=_custom(body))
    assert created.name.startswith(f"{PARENT}/customJobs/")
    assert created.name.rsplit("/", 1)[1].isdigit()
    assert created.display_name == "lifecycle"
    assert created.state.name in RUNNING_OR_BEFORE
    assert dict(created.labels) == {"team": "ml", "managed-by": "airflow-vertex-dist"}
    assert created.create_time is not None and created.create_time.year >= 2024
    pool = created.job_spec.worker_pool_specs[0]
    assert pool.replica_count == 1
    assert list(pool.container_spec.command)[-1] == SLEEP

    got = client.get_custom_job(name=created.name)
    assert got.name == created.name and got.job_spec == created.job_spec

    listed = [job.name for job in client.list_custom_jobs(parent=PARENT)]
    assert listed == [created.name]

    with pytest.raises(gexc.GoogleAPICallError) as refused:
        client.delete_custom_job(name=created.name)
    assert _is_failed_precondition(refused.value)
    assert "only a finished job can be deleted" in str(refused.value)

    assert client.cancel_custom_job(name=created.name) is None
    cancelled = wait_for_state(client, created.name, {"JOB_STATE_CANCELLED"}, timeout=30)
    assert cancelled.error.code == 1
    assert cancelled.end_time is not None

    with pytest.raises(gexc.GoogleAPICallError) as again:
        client.cancel_custom_job(name=created.name)
    assert _is_failed_precondition(again.value)
    assert "JOB_STATE_CANCELLED" in str(again.value)

    operation = client.delete_custom_job(name=created.name)
    assert operation.done()
    operation.result(timeout=5)
    assert isinstance(operation.metadata, aiplatform_v1.DeleteOperationMetadata)
    with pytest.raises(gexc.NotFound, match="does not exist"):
        client.get_custom_job(name=created.name)
    assert list(client.list_custom_jobs(parent=PARENT)) == []


def test_create_answers_the_job_as_created_even_when_its_driver_moves_it_on_at_once(
    client: Any, emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The service answers a Create with the job it created (QUEUED). The emulator's driver starts
    before the answer is sent; a driver that moves the job to RUNNING at once (here, inside
    ``submit``) must not leak into the Create's answer, as it did when a fast replica start made
    ``make check`` see RUNNING there. A Get shows the new state."""

    def moved_on_at_once(name: str) -> None:  # a driver that has the job RUNNING before submit returns
        emulator.store.update(name, lambda job: job.update(state="JOB_STATE_RUNNING"))

    monkeypatch.setattr(emulator.runner, "submit", moved_on_at_once)
    job = client.create_custom_job(parent=PARENT, custom_job=_custom(container_job("as-created", SLEEP)))
    assert job.state == aiplatform_v1.JobState.JOB_STATE_QUEUED
    assert client.get_custom_job(name=job.name).state == aiplatform_v1.JobState.JOB_STATE_RUNNING
    client.cancel_custom_job(name=job.name)
    wait_for_state(emulator, job.name, ["JOB_STATE_CANCELLED"], timeout=60)


def test_tuning_job_lifecycle(client: Any) -> None:
    body = tuning_job("study", SLEEP, max_trials=3, parallel=1, labels={"team": "ml"})
    created = client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=_tuning(body))
    assert created.name.startswith(f"{PARENT}/hyperparameterTuningJobs/")
    assert created.max_trial_count == 3
    assert created.study_spec.metrics[0].metric_id == "score"
    assert created.state.name in RUNNING_OR_BEFORE

    got = client.get_hyperparameter_tuning_job(name=created.name)
    assert got.study_spec == created.study_spec
    assert [j.name for j in client.list_hyperparameter_tuning_jobs(parent=PARENT)] == [created.name]

    client.cancel_hyperparameter_tuning_job(name=created.name)
    cancelled = wait_for_state(client, created.name, {"JOB_STATE_CANCELLED"}, timeout=30)
    assert cancelled.error.code == 1
    client.delete_hyperparameter_tuning_job(name=created.name).result(timeout=5)
    with pytest.raises(gexc.NotFound):
        client.get_hyperparameter_tuning_job(name=created.name)


def test_list_filter_paging_and_read_mask(client: Any, emulator: Emulator) -> None:
    names = []
    for i in range(5):
        team = "ml" if i % 2 == 0 else "data"
        job = client.create_custom_job(
            parent=PARENT, custom_job=_custom(container_job(f"job_{i}", labels={"team": team}))
        )
        names.append(job.name)
    other = "projects/test-project/locations/europe-west4"
    client.create_custom_job(parent=other, custom_job=_custom(container_job("elsewhere")))

    # Newest first, five pages of one, then a short last page; tokens are opaque.
    pager = client.list_custom_jobs(request={"parent": PARENT, "page_size": 2})
    pages = [[job.name for job in page.custom_jobs] for page in pager.pages]
    assert pages == [names[4:2:-1], names[2:0:-1], names[0:1]]

    ml = client.list_custom_jobs(request={"parent": PARENT, "filter": "labels.team=ml"})
    assert [j.name for j in ml] == [names[4], names[2], names[0]]
    wild = client.list_custom_jobs(
        request={"parent": PARENT, "filter": 'display_name:"job_*" AND NOT labels.team=ml'}
    )
    assert [j.name for j in wild] == [names[3], names[1]]
    created_at = client.get_custom_job(name=names[2]).create_time.isoformat().replace("+00:00", "Z")
    later = client.list_custom_jobs(request={"parent": PARENT, "filter": f'create_time>"{created_at}"'})
    assert [j.name for j in later] == [names[4], names[3]]
    has = client.list_custom_jobs(
        request={"parent": PARENT, "filter": "labels.team:* AND state!=JOB_STATE_FAILED"}
    )
    assert len(list(has)) == 5

    masked = list(
        client.list_custom_jobs(
            request={"parent": PARENT, "read_mask": {"paths": ["display_name", "labels"]}}
        )
    )
    assert [j.display_name for j in masked] == ["job_4", "job_3", "job_2", "job_1", "job_0"]
    assert all(j.name == "" and not j.job_spec.worker_pool_specs and j.labels["team"] for j in masked)

    # Paging with a filter: the token only works with the same filter.
    first = client.list_custom_jobs(request={"parent": PARENT, "filter": "labels.team=ml", "page_size": 1})
    token = next(iter(first.pages)).next_page_token
    assert token
    with pytest.raises((gexc.InvalidArgument, gexc.BadRequest), match="different parent or filter"):
        client.list_custom_jobs(request={"parent": PARENT, "page_token": token, "page_size": 1})
    with pytest.raises((gexc.InvalidArgument, gexc.BadRequest), match="page_token"):
        client.list_custom_jobs(request={"parent": PARENT, "page_token": "garbage!"})


@pytest.mark.parametrize(
    ("filter_text", "message"),
    [
        ("state=RUNNING", "state must be a JOB_STATE_* name"),
        ("labels.team<x", "labels.KEY supports"),
        ("update_time>2021-01-01T00:00:00Z", "unsupported field"),
        ("(state=JOB_STATE_RUNNING", "expected ')'"),
    ],
)
def test_bad_filters_are_invalid_argument(client: Any, filter_text: str, message: str) -> None:
    with pytest.raises((gexc.InvalidArgument, gexc.BadRequest)) as info:
        list(client.list_custom_jobs(request={"parent": PARENT, "filter": filter_text}))
    assert message in str(info.value)


def test_missing_jobs_and_bad_names(client: Any) -> None:
    missing = f"{PARENT}/customJobs/1234567890123456789"
    for call in (client.get_custom_job, client.cancel_custom_job, client.delete_custom_job):
        with pytest.raises(gexc.NotFound, match="CustomJob .* does not exist"):
            call(name=missing)
    with pytest.raises(gexc.NotFound, match="HyperparameterTuningJob"):
        client.get_hyperparameter_tuning_job(name=f"{PARENT}/hyperparameterTuningJobs/42")
    with pytest.raises((gexc.InvalidArgument, gexc.BadRequest), match="not a CustomJob resource name"):
        client.get_custom_job(name=f"{PARENT}/customJobs/not-a-number")


def test_other_job_service_methods_are_unimplemented(client: Any) -> None:
    with pytest.raises(gexc.MethodNotImplemented, match="not implemented by the emulator"):
        list(client.list_batch_prediction_jobs(parent=PARENT))
    with pytest.raises(gexc.MethodNotImplemented):
        client.get_nas_job(name=f"{PARENT}/nasJobs/1")


def test_server_side_validation_rejects_what_the_service_would(client: Any) -> None:
    bad_primary = container_job("bad")
    bad_primary["jobSpec"]["workerPoolSpecs"][0]["replicaCount"] = "2"
    with pytest.raises((gexc.InvalidArgument, gexc.BadRequest)) as info:
        client.create_custom_job(parent=PARENT, custom_job=_custom(bad_primary))
    assert "job_spec.worker_pool_specs[0].replica_count" in str(info.value)

    no_pools = {"displayName": "empty", "jobSpec": {}}
    with pytest.raises((gexc.InvalidArgument, gexc.BadRequest)):
        client.create_custom_job(parent=PARENT, custom_job=_custom(no_pools))

    bad_study = tuning_job("bad-study", max_trials=2, parallel=3)
    with pytest.raises((gexc.InvalidArgument, gexc.BadRequest)) as study_info:
        client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=_tuning(bad_study))
    assert "parallel_trial_count" in str(study_info.value)
    assert list(client.list_custom_jobs(parent=PARENT)) == []
    assert list(client.list_hyperparameter_tuning_jobs(parent=PARENT)) == []


def test_output_only_fields_in_create_are_ignored(client: Any) -> None:
    body = container_job("sneaky")
    body.update(state="JOB_STATE_SUCCEEDED", name=f"{PARENT}/customJobs/1", error={"code": 3, "message": "x"})
    created = client.create_custom_job(parent=PARENT, custom_job=_custom(body))
    assert created.name != f"{PARENT}/customJobs/1"
    assert created.state.name in RUNNING_OR_BEFORE | {"JOB_STATE_SUCCEEDED"}
    assert created.error.code == 0


HYPERTUNE = (
    "import argparse, hypertune\n"
    "p = argparse.ArgumentParser(); p.add_argument('--x', type=int); a = p.parse_args()\n"
    "hypertune.HyperTune().report_hyperparameter_tuning_metric("
    "hyperparameter_metric_tag='score', metric_value=a.x * 10, global_step=1)\n"
)


def test_jobs_run_to_their_end_through_the_client(client: Any) -> None:
    ok = client.create_custom_job(parent=PARENT, custom_job=_custom(container_job("ok", "print('fine')")))
    bad = client.create_custom_job(
        parent=PARENT, custom_job=_custom(container_job("bad", "import sys; print('boom'); sys.exit(3)"))
    )
    study = client.create_hyperparameter_tuning_job(
        parent=PARENT,
        hyperparameter_tuning_job=_tuning(tuning_job("study", HYPERTUNE, max_trials=2, parallel=2)),
    )
    succeeded = wait_for_state(client, ok.name, {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED"}, timeout=60)
    assert succeeded.state.name == "JOB_STATE_SUCCEEDED", succeeded.error
    assert succeeded.error.code == 0 and succeeded.start_time and succeeded.end_time >= succeeded.start_time

    failed = wait_for_state(client, bad.name, {"JOB_STATE_FAILED", "JOB_STATE_SUCCEEDED"}, timeout=60)
    assert failed.state.name == "JOB_STATE_FAILED"
    assert failed.error.code != 0 and "workerpool0-0" in failed.error.message and "3" in failed.error.message
    assert "boom" in failed.error.message  # the replica's last log lines

    tuned = wait_for_state(client, study.name, {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED"}, timeout=90)
    assert tuned.state.name == "JOB_STATE_SUCCEEDED", tuned.error
    assert sorted(t.id for t in tuned.trials) == ["1", "2"]
    scores = {t.parameters[0].value: t.final_measurement.metrics[0].value for t in tuned.trials}
    assert scores == {1.0: 10.0, 2.0: 20.0}
    assert all(t.state.name == "SUCCEEDED" and t.custom_job for t in tuned.trials)
