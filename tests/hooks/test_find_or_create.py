"""find_or_create against the emulator: whose job a task adopts, and concurrent tries converging.

* A job carrying the run's labels but another spec fingerprint (another deployment, a copy, a
  re-created DAG run with another spec) is never adopted, nor cancelled.
* A job of another retry budget (a try before the task was cleared) is never adopted: a clear runs
  the task again; its unfinished job is cancelled, or left alone with ``cancel_earlier=False``.
* 50 concurrent callers with the same run labels end with exactly one live job, and every caller
  returns that job, whether they look up first or not (``first_try``).
* A first try (``first_try``) makes one Create and one List: no look-up before its Create; what that
  look-up would have found, the List after it still handles. A retry looks up first and re-attaches
  without a Create. A caller whose trigger converges (``converge_in_wait``) makes no List after its
  Create: a first try makes one call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from airflow_vertex_dist.hooks.connection import RetryPolicy
from airflow_vertex_dist.hooks.find_or_create import LIVE_STATES, JobAlreadyExistsError
from airflow_vertex_dist.hooks.labels import run_labels, spec_fingerprint
from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.core.faults import update_faults

FAST_RETRY = RetryPolicy(initial_s=0.01, maximum_s=0.05, deadline_s=30.0, rpc_timeout_s=10.0)
SLEEP = "import time; time.sleep(120)"


def _labels(test: str) -> dict[str, str]:
    return run_labels("adopt_tests", test, "scheduled__2026-11-30T00:00:00+00:00", -1)


@pytest.fixture
def queued(em: Emulator) -> Iterator[Callable[[], None]]:
    """Call it to make new jobs stay QUEUED (live, no replica process started) until the test ends."""
    yield lambda: update_faults(em.config.faults, {"queued_s": 300.0})
    update_faults(em.config.faults, {"queued_s": 0.0})


def _cancel_all(hook: VertexJobsHook, labels: dict[str, str]) -> None:
    for job in hook.find_jobs("customJobs", labels):
        if job["state"] in LIVE_STATES:
            hook.cancel_job(job["name"])


def test_a_job_with_another_spec_fingerprint_is_not_adopted(
    em: Emulator, transport: str, capfd: pytest.CaptureFixture[str], queued: Callable[[], None]
) -> None:
    labels = _labels(f"foreign-{transport}")
    queued()
    with VertexJobsHook(retry_policy=FAST_RETRY) as hook:
        # Another deployment's job for the same dag/task/run ids, made from another spec.
        theirs, created = hook.find_or_create(
            "customJobs", testing.container_job("theirs", SLEEP), labels=labels
        )
        assert created and theirs["labels"]["airflow-spec"] == spec_fingerprint(
            testing.container_job("theirs", SLEEP)
        )

        ours_body = testing.container_job("ours", SLEEP)
        ours, created = hook.find_or_create("customJobs", ours_body, labels=labels)
        assert created and ours["name"] != theirs["name"]
        assert ours["labels"]["airflow-spec"] == spec_fingerprint(ours_body)
        out, err = capfd.readouterr()
        assert f"Not adopting {theirs['name']} (QUEUED)" in out + err
        assert hook.get_job(theirs["name"])["state"] == "JOB_STATE_QUEUED"  # not ours: never cancelled

        # The same spec again (a retry): adopts its own job, not the foreign one.
        again, created = hook.find_or_create("customJobs", ours_body, labels=labels)
        assert (again["name"], created) == (ours["name"], False)
        _cancel_all(hook, labels)


def test_a_planted_job_with_copied_labels_and_fingerprint_is_not_adopted(
    em: Emulator, grpc_conn: str, capfd: pytest.CaptureFixture[str], queued: Callable[[], None]
) -> None:
    """Every label of a task's job is computable offline, the fingerprint included: someone who may
    create jobs in the project plants one that runs other code under this task's labels. The retry
    must not adopt it (nor keep it when converging): it is compared by its spec, not its labels."""
    labels = _labels("planted")
    queued()
    ours_body = testing.container_job("ours", SLEEP)
    planted_body = testing.container_job("ours", "import os; os.system('echo pwned')")
    planted_labels = {
        **labels,
        "airflow-spec": spec_fingerprint(ours_body),
        "managed-by": "airflow-vertex-dist",
    }
    with VertexJobsHook(retry_policy=FAST_RETRY) as hook:
        planted = hook.create_job("customJobs", {**planted_body, "labels": planted_labels})
        ours, created = hook.find_or_create("customJobs", ours_body, labels=labels)
        assert created and ours["name"] != planted["name"]
        out, err = capfd.readouterr()
        assert f"Not adopting {planted['name']} (QUEUED)" in out + err
        assert "jobSpec.workerPoolSpecs[0].containerSpec.command" in out + err
        assert hook.get_job(planted["name"])["state"] == "JOB_STATE_QUEUED"  # not ours: not cancelled
        # a retry adopts the task's own job, which the service returns with its defaults filled in
        again, created = hook.find_or_create("customJobs", ours_body, labels=labels)
        assert (again["name"], created) == (ours["name"], False)
        _cancel_all(hook, labels)


def test_the_service_defaults_of_a_returned_job_do_not_make_it_foreign() -> None:
    """The boot disk the service fills in on every used pool, int64 counts as strings, output-only
    fields and the provider's labels are not differences; anything else is, wherever it is."""
    from airflow_vertex_dist.hooks.spec_match import spec_difference

    body = testing.container_job("ours", SLEEP, labels={"team": "ml"}, workers=2)
    returned = testing.container_job(
        "ours", SLEEP, labels={"team": "ml", "managed-by": "airflow-vertex-dist"}, workers=2
    )
    returned.update(
        name="projects/p/locations/l/customJobs/1",
        state="JOB_STATE_RUNNING",
        createTime="2026-12-01T00:00:00Z",
    )
    for pool in returned["jobSpec"]["workerPoolSpecs"]:
        pool["diskSpec"] = {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 100}
    assert spec_difference("customJobs", returned, body) is None
    returned["jobSpec"]["workerPoolSpecs"][1]["containerSpec"]["env"] = [
        {"name": "LD_PRELOAD", "value": "x.so"}
    ]
    assert spec_difference("customJobs", returned, body) == "jobSpec.workerPoolSpecs[1].containerSpec.env"
    del returned["jobSpec"]["workerPoolSpecs"][1]["containerSpec"]["env"]
    returned["jobSpec"]["workerPoolSpecs"][0]["diskSpec"]["bootDiskSizeGb"] = 2000
    assert (
        spec_difference("customJobs", returned, body) == "jobSpec.workerPoolSpecs[0].diskSpec.bootDiskSizeGb"
    )
    returned["jobSpec"]["workerPoolSpecs"][0]["diskSpec"]["bootDiskSizeGb"] = 100
    returned["labels"]["team"] = "other"
    assert spec_difference("customJobs", returned, body) == "labels.team"


def test_a_job_without_a_fingerprint_is_not_adopted(
    em: Emulator, grpc_conn: str, queued: Callable[[], None]
) -> None:
    """A job carrying only the four run labels (made by hand, or by a copy of the console's job)."""
    labels = _labels("unfingerprinted")
    queued()
    with VertexJobsHook(retry_policy=FAST_RETRY) as hook:
        body = testing.container_job("same", SLEEP)
        bare = hook.create_custom_job({**body, "labels": labels})
        job, created = hook.find_or_create("customJobs", body, labels=labels)
        assert created and job["name"] != bare["name"]
        _cancel_all(hook, labels)


def test_a_job_of_an_earlier_retry_budget_is_not_adopted(
    em: Emulator, grpc_conn: str, queued: Callable[[], None]
) -> None:
    """A cleared task runs again: the job of a try before the clear (another budget) is cancelled when
    unfinished, never re-attached to, even when it succeeded."""
    labels = _labels("budget")
    body = testing.container_job("budget", "pass")
    with VertexJobsHook(retry_policy=FAST_RETRY) as hook:
        done, _ = hook.find_or_create("customJobs", body, labels=labels, retry_budget="m0")
        testing.wait_for_state(em, done["name"], ["JOB_STATE_SUCCEEDED"], timeout=60)
        # A retry in the same budget re-attaches to the succeeded job.
        assert hook.find_or_create("customJobs", body, labels=labels, retry_budget="m0") == (
            hook.get_job(done["name"]),
            False,
        )
        queued()
        # After a clear (max_tries changed): a job of its own, although the earlier one succeeded.
        second, created = hook.find_or_create("customJobs", body, labels=labels, retry_budget="m1")
        assert created and second["name"] != done["name"] and second["labels"]["airflow-budget"] == "m1"
        # A second clear: the unfinished job of the budget before is cancelled...
        third, created = hook.find_or_create("customJobs", body, labels=labels, retry_budget="m2")
        assert created and third["name"] != second["name"]
        assert hook.get_job(second["name"])["state"] in ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED")
        # ... unless cancel_earlier=False (cancel_on_kill=False): left running.
        fourth, created = hook.find_or_create(
            "customJobs", body, labels=labels, retry_budget="m3", cancel_earlier=False
        )
        assert created and hook.get_job(third["name"])["state"] == "JOB_STATE_QUEUED"
        _cancel_all(hook, labels)


@pytest.mark.parametrize("first_tries", ["none", "half", "all"])
def test_fifty_concurrent_callers_converge_on_one_live_job(
    em: Emulator, grpc_conn: str, queued: Callable[[], None], first_tries: str
) -> None:
    """Two copies of one task instance (a zombie and its retry) may call find_or_create at once: List
    then Create has no request id, and before convergence 50 callers made 12 live jobs. A first try
    (``first_try``: no look-up before its Create) converges all the same: with half the callers first
    tries (the zombie is try 1), and with all of them (no caller looks up first)."""
    labels = _labels(f"concurrent-{first_tries}")
    body = testing.container_job("concurrent", SLEEP)
    queued()
    callers = 50
    barrier = threading.Barrier(callers)
    results: list[tuple[dict[str, Any], bool]] = []
    errors: list[BaseException] = []
    before = em.call_counts().get("CreateCustomJob", 0)

    def one(first_try: bool) -> None:
        try:
            with VertexJobsHook(retry_policy=FAST_RETRY) as hook:
                hook.get_conn()  # connect first, so the barrier lines up the calls themselves
                barrier.wait(timeout=60)
                results.append(hook.find_or_create("customJobs", body, labels=labels, first_try=first_try))
        except BaseException as exc:  # reported below
            errors.append(exc)

    def first(i: int) -> bool:  # whether caller i is a first try
        return first_tries == "all" or (first_tries == "half" and i % 2 == 0)

    threads = [threading.Thread(target=one, args=(first(i),)) for i in range(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors[:3]
    assert len(results) == callers

    with VertexJobsHook(retry_policy=FAST_RETRY) as hook:
        every = hook.find_jobs("customJobs", labels)
        live = [job["name"] for job in every if job["state"] in LIVE_STATES]
        returned = {job["name"] for job, _ in results}
        assert len(live) == 1, f"{len(live)} live jobs of {len(every)} created"
        assert returned == set(live)  # every caller reports the one kept job: none a cancelled one
        assert sum(created for _, created in results) == 1
        creates = em.call_counts()["CreateCustomJob"] - before
        print(f"\n{callers} concurrent callers ({first_tries} first tries): {creates} Creates, 1 live")
        _cancel_all(hook, labels)


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
    labels = _labels("first-try")
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
        _cancel_all(hook, labels)


def test_a_first_try_still_handles_what_its_skipped_look_up_would_have_found(
    em: Emulator, grpc_conn: str, queued: Callable[[], None], capfd: pytest.CaptureFixture[str]
) -> None:
    """Only a deleted DAG run re-created with the same run id has jobs before its first try. The List
    after the first try's Create sees them: the live job of this budget is kept (the new one is
    cancelled and the call re-attaches), an earlier budget's unfinished job is cancelled, another
    spec's job is logged and left alone."""
    labels = _labels("first-try-after-a-deleted-run")
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
        _cancel_all(hook, labels)


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
    labels = _labels("lagging")
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
    runs = [_labels(f"lost-{transport}-{i}") for i in range(8)]
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
                _cancel_all(hook, labels)
    finally:
        update_faults(em.config.faults, {"lost_answer_rate": {}})


def test_converging_in_the_wait_skips_the_list_after_the_create(
    em: Emulator, grpc_conn: str, queued: Callable[[], None]
) -> None:
    """``converge_in_wait``: the caller's trigger converges, so no List follows the Create. A first try
    makes one call, a Create; any other try keeps its look-up before the Create (List, Create)."""
    labels = _labels("converge-in-wait")
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
        _cancel_all(hook, labels)
