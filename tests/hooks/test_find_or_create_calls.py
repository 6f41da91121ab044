"""find_or_create against the emulator: the JobService calls a try makes.

* A first try (``first_try``) makes one Create and one List: no look-up before its Create; what that
  look-up would have found, the List after it still handles. A retry looks up first and re-attaches
  without a Create. A caller whose trigger converges (``converge_in_wait``) makes no List after its
  Create: a first try makes one call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from airflow_vertex_dist.hooks.find_or_create import LIVE_STATES, JobAlreadyExistsError
from airflow_vertex_dist.hooks.labels import spec_fingerprint
from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.core.faults import update_faults

from .adoption_support import FAST_RETRY, SLEEP, adoption_labels, cancel_live_jobs


def _calls(em: Emulator, before: dict[str, int]) -> dict[str, int]:
    """The JobService calls since ``before`` (``em.call_counts()``), zeros left out."""
    now = em.call_counts()
    return {k: now[k] - before.get(k, 0) for k in now if now[k] != before.get(k, 0)}


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
        assert _calls(em, before) == {"CreateCustomJob": 1, "ListCustomJobs": 1}
        before = em.call_counts()
        again, created = hook.find_or_create("customJobs", body, labels=labels, retry_budget="m1")
        assert (again["name"], created) == (job["name"], False)
        assert _calls(em, before) == {"ListCustomJobs": 1}
        # if_exists="fail" keeps its look-up even on a first try: it must refuse before creating
        before = em.call_counts()
        with pytest.raises(JobAlreadyExistsError):
            hook.find_or_create(
                "customJobs", body, labels=labels, retry_budget="m1", if_exists="fail", first_try=True
            )
        assert _calls(em, before) == {"ListCustomJobs": 1}
        cancel_live_jobs(hook, labels)


def test_a_first_try_still_handles_what_its_skipped_look_up_would_have_found(
    em: Emulator, grpc_conn: str, queued: Callable[[], None], capfd: pytest.CaptureFixture[str]
) -> None:
    """Only a deleted DAG run re-created with the same run id has jobs before its first try. The List
    after the first try's Create sees them: the live job of this budget is kept (the new one is
    cancelled and the call re-attaches), an earlier budget's unfinished job is cancelled, another
    spec's job is logged and left alone."""
    labels = adoption_labels("first-try-after-a-deleted-run")
    body = testing.container_job("first-try", SLEEP)
    queued()
    with VertexJobsHook(retry_policy=FAST_RETRY) as hook:
        same, _ = hook.find_or_create("customJobs", body, labels=labels, retry_budget="m0")
        earlier, _ = hook.find_or_create(
            "customJobs", body, labels=labels, retry_budget="m3", cancel_earlier=False
        )
        foreign, _ = hook.find_or_create(
            "customJobs", testing.container_job("theirs", SLEEP), labels=labels, retry_budget="m0"
        )
        capfd.readouterr()
        before = em.call_counts()
        job, created = hook.find_or_create(
            "customJobs", body, labels=labels, retry_budget="m0", first_try=True
        )
        assert (job["name"], created) == (same["name"], False)
        assert _calls(em, before) == {"CreateCustomJob": 1, "ListCustomJobs": 1, "CancelCustomJob": 2}
        live = [j["name"] for j in hook.find_jobs("customJobs", labels) if j["state"] in LIVE_STATES]
        assert sorted(live) == sorted([same["name"], foreign["name"]])
        assert hook.get_job(earlier["name"])["state"] in ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED")
        out, err = capfd.readouterr()
        assert f"Not adopting {foreign['name']} (QUEUED)" in out + err
        assert (
            f"Cancelling {earlier['name']} (QUEUED): made by a try before the task was cleared" in out + err
        )
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


def test_converging_in_the_wait_skips_the_list_after_the_create(
    em: Emulator, grpc_conn: str, queued: Callable[[], None]
) -> None:
    """``converge_in_wait``: the caller's trigger converges, so no List follows the Create. A first try
    makes one call, a Create; any other try keeps its look-up before the Create (List, Create)."""
    labels = adoption_labels("converge-in-wait")
    body = testing.container_job("converge-in-wait", SLEEP)
    queued()
    with VertexJobsHook(retry_policy=FAST_RETRY) as hook:
        before = em.call_counts()
        first, created = hook.find_or_create(
            "customJobs", body, labels=labels, retry_budget="m1", first_try=True, converge_in_wait=True
        )
        assert created and _calls(em, before) == {"CreateCustomJob": 1}
        # a cleared task (budget m2): its look-up comes first and cancels the earlier budget's job
        before = em.call_counts()
        second, created = hook.find_or_create(
            "customJobs", body, labels=labels, retry_budget="m2", converge_in_wait=True
        )
        assert created and second["name"] != first["name"]
        assert _calls(em, before) == {"ListCustomJobs": 1, "CreateCustomJob": 1, "CancelCustomJob": 1}
        cancel_live_jobs(hook, labels)
