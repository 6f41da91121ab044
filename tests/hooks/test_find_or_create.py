"""find_or_create against the emulator: whose job a task adopts, and concurrent tries converging.

* A job carrying the run's labels but another spec fingerprint (another deployment, a copy, a
  re-created DAG run with another spec) is never adopted, nor cancelled.
* A job of another retry budget (a try before the task was cleared) is never adopted: a clear runs
  the task again; its unfinished job is cancelled, or left alone with ``cancel_earlier=False``.
* 50 concurrent callers with the same run labels end with exactly one live job, and every caller
  returns that job, whether they look up first or not (``first_try``).
* A first try (``first_try``) skips the look-up before its Create: what that look-up would have found,
  the List after it still handles. A caller whose trigger converges (``converge_in_wait``) makes no
  List after its Create.

The other counts of calls a first try and a retry make: ``test_find_or_create_calls.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from airflow_vertex_dist.hooks.find_or_create import LIVE_STATES
from airflow_vertex_dist.hooks.labels import spec_fingerprint
from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
from vertex_emulator import testing
from vertex_emulator.app import Emulator

from .adoption_support import FAST_RETRY, SLEEP, adoption_labels, calls_since, cancel_live_jobs


def test_a_job_with_another_spec_fingerprint_is_not_adopted(
    em: Emulator, transport: str, capfd: pytest.CaptureFixture[str], queued: Callable[[], None]
) -> None:
    labels = adoption_labels(f"foreign-{transport}")
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
        cancel_live_jobs(hook, labels)


def test_a_planted_job_with_copied_labels_and_fingerprint_is_not_adopted(
    em: Emulator, grpc_conn: str, capfd: pytest.CaptureFixture[str], queued: Callable[[], None]
) -> None:
    """Every label of a task's job is computable offline, the fingerprint included: someone who may
    create jobs in the project plants one that runs other code under this task's labels. The retry
    must not adopt it (nor keep it when converging): it is compared by its spec, not its labels."""
    labels = adoption_labels("planted")
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
        cancel_live_jobs(hook, labels)


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
    labels = adoption_labels("unfingerprinted")
    queued()
    with VertexJobsHook(retry_policy=FAST_RETRY) as hook:
        body = testing.container_job("same", SLEEP)
        bare = hook.create_custom_job({**body, "labels": labels})
        job, created = hook.find_or_create("customJobs", body, labels=labels)
        assert created and job["name"] != bare["name"]
        cancel_live_jobs(hook, labels)


def test_a_job_of_an_earlier_retry_budget_is_not_adopted(
    em: Emulator, grpc_conn: str, queued: Callable[[], None]
) -> None:
    """A cleared task runs again: the job of a try before the clear (another budget) is cancelled when
    unfinished, never re-attached to, even when it succeeded."""
    labels = adoption_labels("budget")
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
        cancel_live_jobs(hook, labels)


@pytest.mark.parametrize("first_tries", ["none", "half", "all"])
def test_fifty_concurrent_callers_converge_on_one_live_job(
    em: Emulator, grpc_conn: str, queued: Callable[[], None], first_tries: str
) -> None:
    """Two copies of one task instance (a zombie and its retry) may call find_or_create at once: List
    then Create has no request id, and before convergence 50 callers made 12 live jobs. A first try
    (``first_try``: no look-up before its Create) converges all the same: with half the callers first
    tries (the zombie is try 1), and with all of them (no caller looks up first)."""
    labels = adoption_labels(f"concurrent-{first_tries}")
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
        assert calls_since(em, before) == {"CreateCustomJob": 1, "ListCustomJobs": 1, "CancelCustomJob": 2}
        live = [j["name"] for j in hook.find_jobs("customJobs", labels) if j["state"] in LIVE_STATES]
        assert sorted(live) == sorted([same["name"], foreign["name"]])
        assert hook.get_job(earlier["name"])["state"] in ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED")
        out, err = capfd.readouterr()
        assert f"Not adopting {foreign['name']} (QUEUED)" in out + err
        assert (
            f"Cancelling {earlier['name']} (QUEUED): made by a try before the task was cleared" in out + err
        )
        cancel_live_jobs(hook, labels)


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
        assert created and calls_since(em, before) == {"CreateCustomJob": 1}
        # a cleared task (budget m2): its look-up comes first and cancels the earlier budget's job
        before = em.call_counts()
        second, created = hook.find_or_create(
            "customJobs", body, labels=labels, retry_budget="m2", converge_in_wait=True
        )
        assert created and second["name"] != first["name"]
        assert calls_since(em, before) == {"ListCustomJobs": 1, "CreateCustomJob": 1, "CancelCustomJob": 1}
        cancel_live_jobs(hook, labels)
