"""What a user's hand on a task does to its job: marked failed/success, or cleared.

* Marked failed or successful (REST API / UI): Airflow fires the task-instance listeners with
  ``previous_state=None``; the provider's listener cancels the job the try owns (``cancel_on_kill``),
  even when the triggerer never got to run the task's trigger.
* A whole run marked failed/success by hand (before Airflow 3.3 only the run's listeners fire, with
  ``msg=""``) or timed out: the listener cancels the jobs its tasks own; a run its tasks ended by
  themselves (``msg="success"``) is left alone.
* Cleared: the task runs again. Airflow gives it a new retry budget (``max_tries``), and a job made in
  another budget is never re-attached to: the cleared task starts its own job, even when the earlier
  one succeeded, and cancels an earlier one left unfinished (unless ``cancel_on_kill=False``).
* A retry keeps the budget: it re-attaches (``test_worker_death``, ``test_training``), even when
  ``retries`` was lowered between the tries.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import DAG

from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
from airflow_vertex_dist.links import OWNER_XCOM_KEY, OwnedJob
from airflow_vertex_dist.listeners import CANCELLER, owned_job
from airflow_vertex_dist.operators.training import VertexTrainingOperator
from vertex_emulator.app import Emulator

from .harness import alive, dag_xcom, logged, poll, run_dag, ti_state
from .test_training import go, jobs, pid_code, pids, precreate, spec, unless

# a hand played on a loaded machine: the job may take minutes to start (hand_on_a_waiting_task)
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db"), pytest.mark.timeout(600)]

START = datetime(2024, 1, 1, tzinfo=timezone.utc)


def orm_ti(dag_id: str, task_id: str = "train") -> Any:
    """The task instance row, as the API server hands it to the listeners."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        ti = session.scalars(
            select(TaskInstance).where(TaskInstance.dag_id == dag_id, TaskInstance.task_id == task_id)
        ).one()
        session.expunge(ti)
    return ti


def orm_dag_run(dag_id: str) -> Any:
    """The run row, as the API server (or the scheduler) hands it to the listeners."""
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        dr = session.scalars(select(DagRun).where(DagRun.dag_id == dag_id)).one()
        session.expunge(dr)
    return dr


def fire(hook: str, ti: Any, previous_state: Any = None) -> None:
    """Fire a task-instance listener hook through Airflow's listener manager (plugins included)."""
    from airflow.listeners.listener import get_listener_manager

    kwargs: dict[str, Any] = {"previous_state": previous_state, "task_instance": ti}
    if hook == "on_task_instance_failed":
        kwargs["error"] = "TaskInstance's state was manually set to `failed`."
    getattr(get_listener_manager().hook, hook)(**kwargs)


def hand_on_a_waiting_task(
    vertex_conn: Emulator,
    tmp_path: Path,
    dag_id: str,
    act: Callable[[dict[str, Any]], None],
    impersonation_chain: list[str] | None = None,
) -> tuple[Any, dict[str, Any]]:
    """Run a DAG whose task waits on a two-replica job; once the job runs and the try has pushed its
    owner record, ``act(job)`` plays the user's hand (from another thread: ``dag.test()`` must run in
    the main one). Returns the run and the job, once the job is cancelled and its processes gone."""
    pid_dir = tmp_path / "pids"
    with DAG(dag_id, schedule=None, start_date=START) as dag:
        VertexTrainingOperator(
            task_id="train",
            impersonation_chain=impersonation_chain,
            spec=spec(pid_code(pid_dir), workers=1),
            deferrable=False,
            poll_interval=0.3,
            # if the user's hand below fails, the try ends (and the test fails) instead of waiting forever
            execution_timeout=timedelta(minutes=5),
        )
    seen: dict[str, Any] = {}

    def user() -> None:
        seen["job"] = poll(
            lambda: next((j for j in jobs(vertex_conn) if j["state"] == "JOB_STATE_RUNNING"), None),
            timeout=240,  # a loaded machine (the compat cells beside the stack suites) took 70 s to start it
            what="the task's job RUNNING",
        )
        poll(lambda: len(pids(pid_dir)) == 2, timeout=60, what="both replicas up")
        poll(lambda: owned_job(orm_ti(dag_id)), timeout=60, what="the try's owner record")
        act(seen["job"])

    hand = threading.Thread(target=user, daemon=True)
    hand.start()
    dr = run_dag(dag)
    hand.join(timeout=120)
    job = seen["job"]
    poll(lambda: vertex_conn.store.get(job["name"])["state"] == "JOB_STATE_CANCELLED", what="job cancelled")
    poll(lambda: not any(alive(pid) for pid in pids(pid_dir)), what="replica processes gone")
    assert CANCELLER.wait_idle(timeout=30)  # the listener's worker has logged what it did
    return dr, job


@pytest.mark.parametrize(
    ("hook", "chain"),
    [
        ("on_task_instance_failed", None),
        # a task with its own impersonation chain: the listener cancels with it (the emulator takes any
        # credentials; test_connections checks the credentials the listener's hook builds)
        ("on_task_instance_success", ["task-sa@test-project.iam.gserviceaccount.com"]),
    ],
)
def test_marking_a_waiting_task_by_hand_cancels_its_job(
    vertex_conn: Emulator,
    tmp_path: Path,
    hook: str,
    chain: list[str] | None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    dag_id = f"mark_{hook}"
    seen: list[Any] = []

    def mark(job: dict[str, Any]) -> None:
        ti = orm_ti(dag_id)
        seen.append(owned_job(ti))
        fire(hook, ti)  # as the API server applies it: the listeners fire with previous_state=None

    dr, job = hand_on_a_waiting_task(vertex_conn, tmp_path, dag_id, mark, impersonation_chain=chain)
    assert ti_state(dr, "train") == "failed"  # the waiting try saw its job cancelled
    assert f"cancelled job {job['name']} (was JOB_STATE_RUNNING)" in caplog.text
    assert seen == [OwnedJob(job["name"], "vertex_dist_default", tuple(chain or ()))]


@pytest.mark.parametrize(
    ("hook", "msg"),
    [
        ("on_dag_run_failed", ""),  # Airflow < 3.3 marking the run failed (and 3.1's dagrun_timeout)
        ("on_dag_run_success", "Dag Run's state was manually set to `success`."),  # Airflow 3.3
    ],
)
def test_marking_the_run_by_hand_cancels_its_tasks_jobs(
    vertex_conn: Emulator, tmp_path: Path, hook: str, msg: str, caplog: pytest.LogCaptureFixture
) -> None:
    from airflow.listeners.listener import get_listener_manager

    dag_id = f"mark_run_{hook}"
    states: list[str] = []

    def user(job: dict[str, Any]) -> None:
        manager = get_listener_manager().hook
        # The scheduler's own ends of a run whose tasks all ended leave a job alone (none would run).
        getattr(manager, hook)(dag_run=orm_dag_run(dag_id), msg="success")
        manager.on_dag_run_failed(dag_run=orm_dag_run(dag_id), msg="all_tasks_deadlocked")
        states.append(vertex_conn.store.get(job["name"])["state"])
        getattr(manager, hook)(dag_run=orm_dag_run(dag_id), msg=msg)

    dr, job = hand_on_a_waiting_task(vertex_conn, tmp_path, dag_id, user)
    assert states == ["JOB_STATE_RUNNING"]
    assert ti_state(dr, "train") == "failed"
    state = hook.rsplit("_", 1)[1]
    assert f"run {state} ({msg or 'set by hand'}): cancelled job {job['name']}" in caplog.text


def test_the_run_listeners_leave_the_callers_session_alone(vertex_conn: Emulator) -> None:
    """The scheduler fires the run listeners inside its own thread-scoped session; a listener that
    closed that session detached the scheduler's runs, and the scheduler crashed on its next look
    (DetachedInstanceError; found by the stack suite)."""
    from airflow.listeners.listener import get_listener_manager
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with DAG("run_listener_session", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(task_id="train", spec=spec("pass"), deferrable=False, poll_interval=0.3)
    run_dag(dag)
    assert owned_job(orm_ti("run_listener_session")) is not None  # the listener has a record to read
    with create_session() as session:
        dr = session.scalars(select(DagRun).where(DagRun.dag_id == "run_listener_session")).one()
        get_listener_manager().hook.on_dag_run_failed(dag_run=dr, msg="task_failure")
        session.expire(dr)  # the scheduler's next look reloads the run through its session
        assert dr.dag_id == "run_listener_session"


def test_listener_ignores_a_tasks_own_end_and_tasks_without_a_job(vertex_conn: Emulator) -> None:
    """previous_state=RUNNING is the task ending by itself: a retry must still find its job running.
    ``wait_for_completion=False`` hands the job over (no owner record): marking that task later cancels
    nothing."""
    with DAG("mark_ignored", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(
            task_id="train", spec=spec("import time; time.sleep(60)"), wait_for_completion=False
        )
    dr = run_dag(dag)
    assert ti_state(dr, "train") == "success"
    [job] = jobs(vertex_conn)
    assert dag_xcom(dr, "train", key=OWNER_XCOM_KEY) is None
    ti = orm_ti("mark_ignored")
    fire("on_task_instance_failed", ti, previous_state="running")
    fire("on_task_instance_failed", ti)
    fire("on_task_instance_success", ti)
    assert CANCELLER.wait_idle(timeout=30)
    assert vertex_conn.store.get(job["name"])["state"] in ("JOB_STATE_PENDING", "JOB_STATE_RUNNING")


def test_the_owner_record_names_the_job_and_the_connection(vertex_conn: Emulator) -> None:
    with DAG("owner_record", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(task_id="train", spec=spec("pass"), deferrable=False, poll_interval=0.3)
    dr = run_dag(dag)
    assert ti_state(dr, "train") == "success"
    [job] = jobs(vertex_conn)
    assert dag_xcom(dr, "train", key=OWNER_XCOM_KEY) == {
        "name": job["name"],
        "conn_id": "vertex_dist_default",
        "impersonation_chain": [],  # the task has none of its own: the connection's applies
    }


def test_a_cleared_task_cancels_the_job_an_earlier_try_left_running(
    vertex_conn: Emulator, tmp_path: Path, capfd: Any
) -> None:
    """A job of this task made in another retry budget -- by a try before the task was cleared, which
    gave it a new ``max_tries`` -- is still running: the try cancels it and starts its own."""
    when = datetime(2024, 7, 1, tzinfo=timezone.utc)
    flag = tmp_path / "go"
    earlier = precreate("cleared", when, unless(flag), budget="m5")
    go(flag)
    with DAG("cleared", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(task_id="train", spec=spec(unless(flag)), deferrable=False, poll_interval=0.3)
    dr = run_dag(dag, logical_date=when)
    assert ti_state(dr, "train") == "success"
    out = dag_xcom(dr, "train")
    assert out["name"] != earlier["name"] and out["state"] == "JOB_STATE_SUCCEEDED"
    poll(
        lambda: vertex_conn.store.get(earlier["name"])["state"] == "JOB_STATE_CANCELLED", what="old cancelled"
    )
    assert f"Cancelling {earlier['name']} (RUNNING): made by a try before the task was cleared" in logged(
        capfd
    )
    assert len(jobs(vertex_conn)) == 2


def test_a_cleared_task_runs_again_even_when_its_job_succeeded(vertex_conn: Emulator) -> None:
    """A clear means "run it again": the succeeded job of a try before the clear is not re-attached to."""
    when = datetime(2024, 7, 3, tzinfo=timezone.utc)
    earlier = precreate("cleared_done", when, "pass", budget="m5")
    poll(lambda: vertex_conn.store.get(earlier["name"])["state"] == "JOB_STATE_SUCCEEDED", what="done")
    with DAG("cleared_done", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(task_id="train", spec=spec("pass"), deferrable=False, poll_interval=0.3)
    dr = run_dag(dag, logical_date=when)
    assert ti_state(dr, "train") == "success"
    second = dag_xcom(dr, "train")
    assert second["name"] != earlier["name"] and second["state"] == "JOB_STATE_SUCCEEDED"
    assert len(jobs(vertex_conn)) == 2


def test_with_cancel_on_kill_false_a_cleared_task_leaves_the_earlier_job_alone(
    vertex_conn: Emulator, tmp_path: Path, capfd: Any
) -> None:
    """cancel_on_kill=False: the cleared task still runs again, but never cancels the earlier job."""
    when = datetime(2024, 7, 2, tzinfo=timezone.utc)
    flag = tmp_path / "go"
    earlier = precreate("cleared_keep", when, unless(flag), budget="m5")
    go(flag)
    with DAG("cleared_keep", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(
            task_id="train",
            spec=spec(unless(flag)),
            deferrable=False,
            poll_interval=0.3,
            cancel_on_kill=False,
        )
    dr = run_dag(dag, logical_date=when)
    assert ti_state(dr, "train") == "success"
    assert dag_xcom(dr, "train")["name"] != earlier["name"]
    assert vertex_conn.store.get(earlier["name"])["state"] == "JOB_STATE_RUNNING"
    assert f"Leaving {earlier['name']} (RUNNING), made by a try before the task was cleared" in logged(capfd)
    VertexJobsHook().cancel_job(earlier["name"])


def test_a_labelled_job_of_another_spec_is_not_adopted(
    vertex_conn: Emulator, tmp_path: Path, capfd: Any
) -> None:
    """Another deployment (or a deleted and re-created run) left a job with this run's labels, made
    from another spec: the task starts its own and leaves that one alone."""
    when = datetime(2024, 7, 4, tzinfo=timezone.utc)
    flag = tmp_path / "go"
    foreign = precreate("foreign", when, unless(flag))
    go(flag)
    with DAG("foreign", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(task_id="train", spec=spec("pass"), deferrable=False, poll_interval=0.3)
    dr = run_dag(dag, logical_date=when)
    assert ti_state(dr, "train") == "success"
    assert dag_xcom(dr, "train")["name"] != foreign["name"]
    assert vertex_conn.store.get(foreign["name"])["state"] == "JOB_STATE_RUNNING"
    assert f"Not adopting {foreign['name']} (RUNNING)" in logged(capfd)
    VertexJobsHook().cancel_job(foreign["name"])


class DiesAfterItsJobStarted(VertexTrainingOperator):
    """Try 1 creates its job and fails (the job runs on); before try 2 a deploy lowers ``retries`` to 0.
    With "fresh try" reckoned as ``try_number == max_tries - retries + 1``, try 2 looked like the first
    try after a clear: it cancelled the running job and started a second one. The job runs until a later
    try has attached to a job (``release`` is written then), so try 1's job still runs when try 2 decides
    what to do with it."""

    def __init__(self, *, release: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.release = release

    def execute(self, context: Any) -> Any:
        if context["ti"].try_number == 1:
            self.attach_or_create(context)
            raise RuntimeError("try 1 fails after its job started")
        self.retries = 0  # the DAG file as deployed between the tries
        return super().execute(context)

    def attach_or_create(self, context: Any) -> dict[str, Any]:
        job = super().attach_or_create(context)
        if context["ti"].try_number > 1:
            Path(self.release).write_text("")
        return job


def until(flag: Path) -> str:
    """Replica code that runs until ``flag`` exists (at most 60 s)."""
    return (
        f"import pathlib, time\nflag = pathlib.Path({str(flag)!r})\n"
        "for _ in range(600):\n    if flag.exists():\n        break\n    time.sleep(0.1)"
    )


def test_lowering_retries_between_tries_does_not_make_a_retry_look_fresh(
    vertex_conn: Emulator, tmp_path: Path, capfd: Any
) -> None:
    release = tmp_path / "release"
    with DAG("retries_lowered", schedule=None, start_date=START) as dag:
        DiesAfterItsJobStarted(
            task_id="train",
            spec=spec(until(release)),
            release=str(release),
            deferrable=False,
            poll_interval=0.3,
            retries=1,
            retry_delay=timedelta(0),
        )
    dr = run_dag(dag)
    [job] = jobs(vertex_conn)  # one job: try 2 re-attached to try 1's
    assert ti_state(dr, "train") == "success"
    assert dag_xcom(dr, "train")["name"] == job["name"]
    assert re.search(rf"Re-attaching to {job['name']} \((RUNNING|SUCCEEDED)\)", logged(capfd))


class MarkedWhileStarting(VertexTrainingOperator):
    """The user's mark lands after the try's job exists but before the try waits on it (the listener
    has no owner record to go by yet): the metadata DB row is set as the REST API sets it."""

    def attach_or_create(self, context: Any) -> dict[str, Any]:
        job = super().attach_or_create(context)
        from airflow.models.taskinstance import TaskInstance
        from airflow.utils.session import create_session
        from sqlalchemy import update

        ti = context["ti"]
        with create_session() as session:
            session.execute(
                update(TaskInstance)
                .where(TaskInstance.id == ti.id)
                .values(state="failed")
                .execution_options(synchronize_session=False)
            )
        return job


@pytest.mark.parametrize("deferrable", [False, True])
def test_a_task_marked_while_it_starts_its_job_cancels_it(
    vertex_conn: Emulator, tmp_path: Path, deferrable: bool, capfd: Any
) -> None:
    pid_dir = tmp_path / "pids"
    dag_id = f"marked_starting_{deferrable}"
    with DAG(dag_id, schedule=None, start_date=START) as dag:
        MarkedWhileStarting(
            task_id="train", spec=spec(pid_code(pid_dir)), deferrable=deferrable, poll_interval=0.3
        )
    dr = run_dag(dag)
    assert ti_state(dr, "train") == "failed"
    [job] = jobs(vertex_conn)
    poll(lambda: vertex_conn.store.get(job["name"])["state"] == "JOB_STATE_CANCELLED", what="job cancelled")
    poll(lambda: not any(alive(pid) for pid in pids(pid_dir)), what="replica processes gone")
    assert f"the task instance was set to failed while it started job {job['name']}" in logged(capfd)
