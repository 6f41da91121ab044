"""VertexJobsHook / VertexJobsAsyncHook against the emulator, through the stock aiplatform clients."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from google.api_core import exceptions

from airflow_vertex_dist.hooks.connection import RetryPolicy
from airflow_vertex_dist.hooks.find_or_create import JobAlreadyExistsError
from airflow_vertex_dist.hooks.labels import label_filter, run_labels
from airflow_vertex_dist.hooks.vertex_jobs import CREATE_TOKEN_LABEL, VertexJobsAsyncHook, VertexJobsHook
from airflow_vertex_dist.jobs.kinds import TERMINAL_STATES
from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.core.faults import update_faults
from vertex_emulator.jobservice.service import ApiError

FAST_RETRY = RetryPolicy(initial_s=0.01, maximum_s=0.05, deadline_s=20.0, rpc_timeout_s=10.0)
SLEEP = "import time; time.sleep(120)"


def _labels(test: str) -> dict[str, str]:
    return run_labels("hook_tests", test, "manual__2026-11-30T00:00:00+00:00", -1)


def test_custom_job_crud(em: Emulator, transport: str) -> None:
    with VertexJobsHook(retry_policy=FAST_RETRY) as hook:
        body = testing.container_job(f"crud-{transport}", "print('ok')", labels={"team": "ml"})
        job = hook.create_custom_job(body)
        name = job["name"]
        assert name.startswith("projects/test-project/locations/us-central1/customJobs/")
        assert job["state"] in ("JOB_STATE_QUEUED", "JOB_STATE_PENDING")
        assert job["labels"]["team"] == "ml"
        assert job["labels"][CREATE_TOKEN_LABEL].startswith("t")
        assert isinstance(job["jobSpec"]["workerPoolSpecs"][0]["replicaCount"], str)  # v1 JSON int64

        assert hook.get_job(name)["displayName"] == f"crud-{transport}"
        listed = hook.list_jobs("customJobs", filter=f'display_name="crud-{transport}"', page_size=1)
        assert [j["name"] for j in listed] == [name]
        masked = hook.list_jobs(
            "customJobs", filter=f'display_name="crud-{transport}"', read_mask=["displayName"]
        )
        assert "jobSpec" not in masked[0] and masked[0]["displayName"] == f"crud-{transport}"

        testing.wait_for_state(em, name, ["JOB_STATE_SUCCEEDED"], timeout=60)
        assert hook.get_job(name)["state"] == "JOB_STATE_SUCCEEDED"
        hook.delete_job(name)
        with pytest.raises(exceptions.NotFound, match="not"):
            hook.get_job(name)


def test_cancel_and_tuning_job(em: Emulator, transport: str) -> None:
    with VertexJobsHook(retry_policy=FAST_RETRY) as hook:
        job = hook.create_tuning_job(testing.tuning_job(f"tune-{transport}", SLEEP, max_trials=2))
        name = job["name"]
        assert "/hyperparameterTuningJobs/" in name
        assert hook.get_job(name)["studySpec"]["metrics"][0]["metricId"] == "score"
        assert hook.list_jobs("hyperparameterTuningJobs", filter=f'display_name="tune-{transport}"')
        hook.cancel_job(name)
        cancelled = testing.wait_for_state(em, name, ["JOB_STATE_CANCELLED"], timeout=60)
        assert cancelled["error"]["code"] == 1
        assert isinstance(hook.list_trials(name), list)
        with pytest.raises(ValueError, match="only they have trials"):
            hook.list_trials(name.replace("hyperparameterTuningJobs", "customJobs"))


def test_api_errors_keep_the_api_message(em: Emulator, grpc_conn: str) -> None:
    hook = VertexJobsHook(retry_policy=FAST_RETRY)
    bad = testing.container_job("bad")
    bad["jobSpec"]["workerPoolSpecs"][0]["replicaCount"] = "2"
    with pytest.raises(exceptions.InvalidArgument, match="replica"):
        hook.create_custom_job(bad)
    with pytest.raises(ValueError, match=r"body: not a valid v1 CustomJob"):
        hook.create_custom_job({"displayName": "x", "jobSpek": {}})
    with pytest.raises(ValueError, match=r"kind: must be one of customJobs, hyperparameterTuningJobs"):
        hook.list_jobs("trainingPipelines")
    with pytest.raises(ValueError, match=r"name: 'nope' is not a job name"):
        hook.get_job("nope")
    assert em.call_counts().get("CreateCustomJob", 0) >= 1


def test_find_or_create_reattach_fail_recreate(em: Emulator, transport: str) -> None:
    labels = _labels(f"reattach-{transport}")
    with VertexJobsHook(retry_policy=FAST_RETRY) as hook:
        body = testing.container_job("fc", SLEEP, labels={"team": "ml"})
        first, created = hook.find_or_create("customJobs", body, labels=labels)
        assert created
        assert first["labels"]["team"] == "ml" and first["labels"]["airflow-run"] == labels["airflow-run"]

        again, created_again = hook.find_or_create("customJobs", body, labels=labels)
        assert not created_again and again["name"] == first["name"]

        with pytest.raises(JobAlreadyExistsError, match="if_exists='fail'"):
            hook.find_or_create("customJobs", body, labels=labels, if_exists="fail")

        fresh, created_fresh = hook.find_or_create("customJobs", body, labels=labels, if_exists="recreate")
        assert created_fresh and fresh["name"] != first["name"]
        testing.wait_for_state(em, first["name"], ["JOB_STATE_CANCELLED"], timeout=60)

        # the cancelled job does not block; the live one is re-attached (newest first)
        assert hook.find_or_create("customJobs", body, labels=labels)[0]["name"] == fresh["name"]
        assert [j["name"] for j in hook.find_jobs("customJobs", labels)] == [fresh["name"], first["name"]]
        hook.cancel_job(fresh["name"])
        testing.wait_for_state(em, fresh["name"], ["JOB_STATE_CANCELLED"], timeout=60)

        # every job of this run ended badly: a retry creates a new one
        third, created_third = hook.find_or_create("customJobs", body, labels=labels)
        assert created_third and third["name"] not in (first["name"], fresh["name"])
        hook.cancel_job(third["name"])
        with pytest.raises(ValueError, match="if_exists: must be one of"):
            hook.find_or_create("customJobs", body, labels=labels, if_exists="ignore")  # type: ignore[arg-type]


def test_find_or_create_reattaches_to_succeeded(em: Emulator, grpc_conn: str) -> None:
    labels = _labels("succeeded")
    hook = VertexJobsHook(retry_policy=FAST_RETRY)
    job, _ = hook.find_or_create("hyperparameterTuningJobs", testing.tuning_job("t-ok"), labels=labels)
    testing.wait_for_state(em, job["name"], ["JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED"], timeout=60)
    em.store.update(job["name"], lambda j: j.update(state="JOB_STATE_SUCCEEDED"))
    again, created = hook.find_or_create(
        "hyperparameterTuningJobs", testing.tuning_job("t-ok"), labels=labels
    )
    assert (again["name"], created) == (job["name"], False)


def _lose_first_response(em: Emulator, monkeypatch: pytest.MonkeyPatch, method: str) -> list[str]:
    """Server-side fault: the first ``method`` call runs, then its response is replaced by UNAVAILABLE
    (what a client sees when a proxy drops the response of a request the backend did execute)."""
    original = em.service.call
    lost: list[str] = []

    def call(name: str, request: Any) -> Any:
        response = original(name, request)
        if name == method and not lost:
            lost.append(str(getattr(response, "name", "")))
            raise ApiError("UNAVAILABLE", "injected fault: the response was lost after the job was created")
        return response

    monkeypatch.setattr(em.service, "call", call)
    return lost


@pytest.mark.parametrize("method", ["CreateCustomJob", "CreateHyperparameterTuningJob"])
def test_lost_create_response_leaves_exactly_one_job(
    em: Emulator, transport: str, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    labels = _labels(f"lost-{method}-{transport}")
    lost = _lose_first_response(em, monkeypatch, method)
    kind = "customJobs" if method == "CreateCustomJob" else "hyperparameterTuningJobs"
    body = testing.container_job("lost", SLEEP) if kind == "customJobs" else testing.tuning_job("lost", SLEEP)
    with VertexJobsHook(retry_policy=FAST_RETRY) as hook:
        before = em.call_counts().get(method, 0)
        job, created = hook.find_or_create(kind, body, labels=labels)
        assert created and lost == [job["name"]]
        assert em.call_counts()[method] == before + 1  # found by its token: never re-sent
        assert [j["name"] for j in hook.list_jobs(kind, filter=label_filter(labels))] == [job["name"]]
        hook.cancel_job(job["name"])


def test_transient_errors_are_retried(em: Emulator, transport: str) -> None:
    update_faults(
        em.config.faults,
        {"error_rate": {"*": 0.4}, "error_codes": ["UNAVAILABLE", "RESOURCE_EXHAUSTED"], "seed": 7},
    )
    labels = _labels(f"flaky-{transport}")
    created_names = []
    with VertexJobsHook(retry_policy=FAST_RETRY) as hook:
        for i in range(6):
            job = hook.create_custom_job(testing.container_job(f"flaky-{i}", SLEEP, labels=labels))
            created_names.append(job["name"])
            assert hook.get_job(job["name"])["name"] == job["name"]
        listed = hook.list_jobs("customJobs", filter=label_filter(labels), page_size=2)
        assert sorted(j["name"] for j in listed) == sorted(created_names)  # no duplicate
        for name in created_names:
            hook.cancel_job(name)
    injected = em.service.injector.injected_counts()
    assert injected.get("CreateCustomJob") and injected.get("GetCustomJob")  # faults hit and were survived


def test_retry_deadline_then_raises(em: Emulator, grpc_conn: str) -> None:
    update_faults(em.config.faults, {"error_rate": {"GetCustomJob": 1.0}, "error_codes": ["UNAVAILABLE"]})
    hook = VertexJobsHook(retry_policy=RetryPolicy(initial_s=0.01, maximum_s=0.02, deadline_s=0.3))
    with pytest.raises(exceptions.RetryError, match="injected fault"):
        hook.get_job("projects/test-project/locations/us-central1/customJobs/1")
    update_faults(
        em.config.faults, {"error_rate": {"GetCustomJob": 1.0}, "error_codes": ["PERMISSION_DENIED"]}
    )
    before = em.call_counts().get("GetCustomJob", 0)
    with pytest.raises(exceptions.PermissionDenied, match="injected fault"):
        hook.get_job("projects/test-project/locations/us-central1/customJobs/1")
    assert em.call_counts()["GetCustomJob"] == before + 1  # not transient: no retry


async def test_async_hook(em: Emulator, transport: str) -> None:
    sync = VertexJobsHook(retry_policy=FAST_RETRY)
    job = await asyncio.to_thread(sync.create_custom_job, testing.container_job(f"async-{transport}", SLEEP))
    name = job["name"]
    update_faults(em.config.faults, {"error_rate": {"*": 0.3}, "error_codes": ["UNAVAILABLE"], "seed": 3})
    async with VertexJobsAsyncHook(retry_policy=FAST_RETRY) as hook:
        got = await hook.get_job(name)
        assert got["name"] == name
        client = hook._clients.get("us-central1")
        listed = await hook.list_jobs("customJobs", filter=f'display_name="async-{transport}"')
        assert [j["name"] for j in listed] == [name]
        assert hook._clients.get("us-central1") is client  # one client for the life of the loop
        assert (transport == "grpc") == (client is not None)
        missing = name.rsplit("/", 1)[0] + "/42"
        assert await hook.get_job_or_none(missing) is None
        await hook.cancel_job(name)
    assert hook._clients == {}
    update_faults(em.config.faults, {"error_rate": {}})
    await asyncio.to_thread(testing.wait_for_state, em, name, ["JOB_STATE_CANCELLED"], 60.0)
    sync.close()


async def test_async_hook_over_rest_reads_the_connection_once(
    em: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over REST the asyncio hook runs a sync hook in a thread; that hook is given the connection the
    asyncio hook read (constructor argument), so it never fetches it again."""
    extra = {"project": "test-project", "location": "us-central1", "transport": "rest"}
    extra["api_endpoint"] = em.rest_endpoint
    extra["emulator"] = True
    monkeypatch.setenv(
        "AIRFLOW_CONN_VERTEX_DIST_DEFAULT", json.dumps({"conn_type": "vertex_dist", "extra": extra})
    )
    async with VertexJobsAsyncHook(retry_policy=FAST_RETRY) as hook:
        listed = await hook.list_jobs("customJobs", page_size=1)
        missing = "projects/test-project/locations/us-central1/customJobs/424242"
        assert await hook.get_job_or_none(missing) is None
        assert isinstance(listed, list)
        assert hook._sync_hook().connection is await hook.aconnection()


def test_a_hook_given_a_connection_uses_it_as_it_is(em: Emulator, grpc_conn: str) -> None:
    conn = VertexJobsHook().connection
    hook = VertexJobsHook("no_such_connection", connection=conn, retry_policy=FAST_RETRY)
    assert hook.connection is conn
    assert isinstance(hook.list_jobs("customJobs", page_size=1), list)
    hook.close()


def test_async_hook_makes_one_client_per_event_loop(em: Emulator, grpc_conn: str) -> None:
    hook = VertexJobsAsyncHook(retry_policy=FAST_RETRY)
    clients: list[Any] = []

    async def two_calls() -> None:
        await hook.list_jobs("customJobs", page_size=1)
        clients.append(hook._clients["us-central1"])
        await hook.list_jobs("customJobs", page_size=1)
        assert hook._clients["us-central1"] is clients[-1]

    asyncio.run(two_calls())
    asyncio.run(two_calls())  # a new loop: the old loop's channel is not reused
    assert clients[0] is not clients[1]
    asyncio.run(hook.close())


def test_a_copied_create_token_is_replaced(em: Emulator, grpc_conn: str) -> None:
    with VertexJobsHook(retry_policy=FAST_RETRY) as hook:
        old = hook.create_custom_job(testing.container_job("token-a", SLEEP))
        copied = {**testing.container_job("token-b", SLEEP), "labels": dict(old["labels"])}
        lost = []
        original = em.service.call

        def call(name: str, request: Any) -> Any:
            response = original(name, request)
            if name == "CreateCustomJob" and not lost:
                lost.append(response.name)
                raise ApiError("UNAVAILABLE", "injected fault: response lost")
            return response

        em.service.call = call  # type: ignore[method-assign]
        try:
            new = hook.create_custom_job(copied)
        finally:
            del em.service.call
        assert new["name"] == lost[0] != old["name"]
        assert new["labels"][CREATE_TOKEN_LABEL] != old["labels"][CREATE_TOKEN_LABEL]
        hook.cancel_job(old["name"])
        hook.cancel_job(new["name"])


def test_wait_until_ended_returns_the_ended_job_or_the_last_seen_at_its_deadline(
    em: Emulator, grpc_conn: str
) -> None:
    with VertexJobsHook(retry_policy=FAST_RETRY) as hook:
        job = hook.create_custom_job(testing.container_job("wait-until-ended", SLEEP))
        started = time.monotonic()
        still = hook.wait_until_ended(job["name"], timeout_s=0.3, poll_s=0.05)
        assert time.monotonic() - started < 10
        assert still["state"] not in TERMINAL_STATES  # the deadline, not an end, stopped the wait
        hook.cancel_job(job["name"])
        ended = hook.wait_until_ended(job["name"], timeout_s=60, poll_s=0.05)
        assert ended["state"] == "JOB_STATE_CANCELLED"


def test_cancel_unless_ended(em: Emulator, transport: str) -> None:
    """Cancel is sent to a running job only: an ended job is read and left alone."""
    with VertexJobsHook(retry_policy=FAST_RETRY) as hook:
        running = hook.create_custom_job(testing.container_job(f"cue-run-{transport}", SLEEP))["name"]
        done = hook.create_custom_job(testing.container_job(f"cue-done-{transport}", "print('ok')"))["name"]
        testing.wait_for_state(em, done, ["JOB_STATE_SUCCEEDED"], timeout=60)

        cancels = em.call_counts().get("CancelCustomJob", 0)
        job, sent = hook.cancel_unless_ended(done)
        assert (job["state"], sent) == ("JOB_STATE_SUCCEEDED", False)
        assert em.call_counts().get("CancelCustomJob", 0) == cancels

        job, sent = hook.cancel_unless_ended(running)
        assert sent and job["state"] not in TERMINAL_STATES  # the job as read before the cancel
        assert em.call_counts()["CancelCustomJob"] == cancels + 1
        testing.wait_for_state(em, running, ["JOB_STATE_CANCELLED"], timeout=60)
        assert hook.cancel_unless_ended(running)[1] is False
        with pytest.raises(exceptions.NotFound):
            hook.cancel_unless_ended(running.rsplit("/", 1)[0] + "/42")


async def test_async_cancel_unless_ended(em: Emulator, transport: str) -> None:
    sync = VertexJobsHook(retry_policy=FAST_RETRY)
    name = (
        await asyncio.to_thread(sync.create_custom_job, testing.container_job(f"acue-{transport}", SLEEP))
    )["name"]
    async with VertexJobsAsyncHook(retry_policy=FAST_RETRY) as hook:
        job, sent = await hook.cancel_unless_ended(name)
        assert sent and job["state"] not in TERMINAL_STATES
        await asyncio.to_thread(testing.wait_for_state, em, name, ["JOB_STATE_CANCELLED"], 60.0)
        job, sent = await hook.cancel_unless_ended(name)
        assert (job["state"], sent) == ("JOB_STATE_CANCELLED", False)
        with pytest.raises(exceptions.NotFound):
            await hook.cancel_unless_ended(name.rsplit("/", 1)[0] + "/42")
    sync.close()
