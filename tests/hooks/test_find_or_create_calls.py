"""find_or_create against the emulator: the JobService calls a try makes (``first_try``).

A first try makes one Create and one List, with no look-up before its Create; a retry looks up first and
re-attaches without a Create. A List that does not show the call's own job yet, and lost Create answers,
make no second job. (What a skipped look-up would have found, and converging in the wait:
``test_find_or_create.py``.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from airflow_vertex_dist.hooks.find_or_create import JobAlreadyExistsError
from airflow_vertex_dist.hooks.labels import spec_fingerprint
from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.core.faults import update_faults

from .adoption_support import FAST_RETRY, SLEEP, adoption_labels, calls_since, cancel_live_jobs


def test_a_first_try_creates_without_a_look_up_and_a_retry_reattaches_without_a_create(
    em: Emulator, grpc_conn: str, queued: Callable[[], None]
) -> None:
    """``first_try``: Create, then the one List that converges (no List before the Create). The retry of
    the same budget does not pass it: it looks up first and re-attaches with no Create (a retry that
    skipped its look-up would make a second job, billed until the List after it cancelled one)."""
    labels = adoption_labels("first-try")
    body = testing.container_job("first-try", SLEEP)
    queued()
    with VertexJobsHook(retry_policy=FAST_RETRY) as hook:
        before = em.call_counts()
        job, created = hook.find_or_create(
            "customJobs", body, labels=labels, retry_budget="m1", first_try=True
        )
        assert created
        assert calls_since(em, before) == {"CreateCustomJob": 1, "ListCustomJobs": 1}
        before = em.call_counts()
        again, created = hook.find_or_create("customJobs", body, labels=labels, retry_budget="m1")
        assert (again["name"], created) == (job["name"], False)
        assert calls_since(em, before) == {"ListCustomJobs": 1}
        # if_exists="fail" keeps its look-up even on a first try: it must refuse before creating
        before = em.call_counts()
        with pytest.raises(JobAlreadyExistsError):
            hook.find_or_create(
                "customJobs", body, labels=labels, retry_budget="m1", if_exists="fail", first_try=True
            )
        assert calls_since(em, before) == {"ListCustomJobs": 1}
        cancel_live_jobs(hook, labels)


class _LaggingList:
    """A JobsApi whose List does not show the job the call just created yet (a List lagging its
    Create), while another caller's older live job of the task is there, made after the call's own
    look-up (``looks_up``: that look-up, when the call makes one, finds nothing)."""

    def __init__(self, body: dict[str, Any], labels: dict[str, str], looks_up: bool) -> None:
        import logging

        self.log = logging.getLogger("lagging-list")
        self.other = {
            **body,
            "name": "projects/p/locations/l/customJobs/1",
            "state": "JOB_STATE_QUEUED",
            "createTime": "2026-12-01T00:00:00Z",
            "labels": {**labels, "airflow-spec": spec_fingerprint(body), "airflow-budget": "m0"},
        }
        self.empty_lists = 1 if looks_up else 0
        self.cancelled: list[str] = []

    def find_jobs(self, kind: str, labels: dict[str, str]) -> list[Any]:
        if self.empty_lists:
            self.empty_lists -= 1
            return []
        return [self.other]

    def create_job(self, kind: str, body: dict[str, Any]) -> Any:
        created = "2026-12-01T00:00:05Z"
        return {
            **body,
            "name": "projects/p/locations/l/customJobs/2",
            "state": "JOB_STATE_QUEUED",
            "createTime": created,
        }

    def cancel_job(self, name: str) -> None:
        self.cancelled.append(name)


@pytest.mark.parametrize("first_try", [False, True])
def test_the_own_job_counts_when_the_list_after_the_create_does_not_show_it_yet(first_try: bool) -> None:
    """The kept job is the oldest of the listed ones and the call's own: with an older live job listed
    and its own not yet, the call cancels its own and returns the older one."""
    from airflow_vertex_dist.hooks.find_or_create import find_or_create

    body = testing.container_job("lagging", SLEEP)
    labels = adoption_labels("lagging")
    hook = _LaggingList(body, labels, looks_up=not first_try)
    job, created = find_or_create(
        hook, "customJobs", body, labels=labels, retry_budget="m0", first_try=first_try
    )
    assert (job["name"], created) == (hook.other["name"], False)
    assert hook.cancelled == ["projects/p/locations/l/customJobs/2"]


def test_lost_create_answers_make_no_duplicate(
    em: Emulator, transport: str, queued: Callable[[], None]
) -> None:
    """The emulator's lost-answer fault: Create runs (the job exists), then the client gets UNAVAILABLE.
    The hook finds the job by its create token instead of sending Create again: one job per run."""
    queued()
    update_faults(
        em.config.faults,
        {"lost_answer_rate": {"CreateCustomJob": 0.5}, "error_codes": ["UNAVAILABLE"], "seed": 11},
    )
    runs = [adoption_labels(f"lost-{transport}-{i}") for i in range(8)]
    try:
        with VertexJobsHook(retry_policy=FAST_RETRY) as hook:
            for labels in runs:
                hook.find_or_create("customJobs", testing.container_job("lost", SLEEP), labels=labels)
            lost = em.service.injector.injected_counts().get("CreateCustomJob (answer lost)", 0)
            assert lost > 0  # the fault did hit
            update_faults(em.config.faults, {"lost_answer_rate": {}})
            per_run = [len(hook.find_jobs("customJobs", labels)) for labels in runs]
            assert per_run == [1] * len(runs), per_run
            for labels in runs:
                cancel_live_jobs(hook, labels)
    finally:
        update_faults(em.config.faults, {"lost_answer_rate": {}})
