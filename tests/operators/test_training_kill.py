"""VertexTrainingOperator's job ended with its task, for real (dag.test(), the emulator, real replica
processes): an ``execution_timeout`` in the worker or deferred, a kill while deferred (the trigger's
``on_kill``) or in the worker (``on_kill``), and Airflow's own deferral timeout each cancel the job and
leave no replica process behind."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import DAG, BaseOperator

from airflow_vertex_dist.operators.training import VertexTrainingOperator
from vertex_emulator.app import Emulator

from .harness import alive, dag_xcom, poll, run_dag, ti_state
from .test_training import START, jobs, pid_code, pids, spec

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]


def test_execution_timeout_cancels_the_job_and_leaves_no_replica(
    vertex_conn: Emulator, tmp_path: Path
) -> None:
    pid_dir = tmp_path / "pids"
    with DAG("train_timeout", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(
            task_id="train",
            spec=spec(pid_code(pid_dir), workers=1),
            deferrable=False,
            poll_interval=0.5,
            execution_timeout=timedelta(seconds=4),
        )
    dr = run_dag(dag)
    assert ti_state(dr, "train") == "failed"
    [job] = jobs(vertex_conn)
    assert job["state"] == "JOB_STATE_CANCELLED"
    assert len(pids(pid_dir)) == 2
    poll(lambda: not any(alive(pid) for pid in pids(pid_dir)), what="replica processes gone")


def test_deferred_execution_timeout_cancels_the_job_and_leaves_no_replica(
    vertex_conn: Emulator, tmp_path: Path
) -> None:
    pid_dir = tmp_path / "pids"
    with DAG("train_deferred_timeout", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(
            task_id="train",
            spec=spec(pid_code(pid_dir), workers=1),
            deferrable=True,
            poll_interval=0.3,
            execution_timeout=timedelta(seconds=5),
        )
    dr = run_dag(dag)
    assert ti_state(dr, "train") == "failed"
    [job] = jobs(vertex_conn)
    poll(lambda: vertex_conn.store.get(job["name"])["state"] == "JOB_STATE_CANCELLED", what="job cancelled")
    assert len(pids(pid_dir)) == 2
    poll(lambda: not any(alive(pid) for pid in pids(pid_dir)), what="replica processes gone")


async def test_killing_a_deferred_task_cancels_the_job_and_leaves_no_replica(
    vertex_conn: Emulator, tmp_path: Path
) -> None:
    """What the triggerer does when a user kills a deferred task (Airflow >= 3.3): it cancels the
    trigger's run and awaits its on_kill. The trigger is the operator's, after the same round trip
    through the Trigger row (classpath + encrypted kwargs) the triggerer reads it from."""
    import asyncio

    from airflow.models.trigger import Trigger
    from airflow.sdk.module_loading import import_string

    pid_dir = tmp_path / "pids"
    op = VertexTrainingOperator(task_id="train", spec=spec(pid_code(pid_dir), workers=2), poll_interval=0.2)
    job = await asyncio.to_thread(op.hook.create_custom_job, op.job_body())
    row = Trigger.from_object(op.make_trigger(job["name"]))
    trigger = import_string(row.classpath)(**row.kwargs)
    run = asyncio.create_task(anext(trigger.run()))
    await asyncio.to_thread(poll, lambda: len(pids(pid_dir)) == 3, what="3 replicas started")
    assert not run.done()
    run.cancel("user action")
    with pytest.raises(asyncio.CancelledError):
        await run
    await trigger.on_kill()
    state = vertex_conn.store.get(job["name"])["state"]
    assert state in ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED")
    await asyncio.to_thread(
        poll, lambda: vertex_conn.store.get(job["name"])["state"] == "JOB_STATE_CANCELLED", what="cancelled"
    )
    await asyncio.to_thread(poll, lambda: not any(alive(pid) for pid in pids(pid_dir)), what="replicas gone")


class _KillProbe(BaseOperator):
    """Inside a real task: a training operator of this task instance creates its job, then is ended
    the way ``how`` says -- ``on_kill`` (what the task runner calls when the task is killed while
    waiting on a worker) or a resume after Airflow's own deferral timeout (next_method ``__fail__``)."""

    def __init__(self, *, pid_dir: Path, how: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.pid_dir = pid_dir
        self.how = how

    def execute(self, context: Any) -> str:
        from airflow.sdk.bases.operator import TRIGGER_FAIL_REPR, TriggerFailureReason
        from airflow.sdk.exceptions import TaskDeferralTimeout

        op = VertexTrainingOperator(task_id=self.task_id, spec=spec(pid_code(self.pid_dir), workers=1))
        job = op.attach_or_create(context)
        poll(lambda: len(pids(self.pid_dir)) == 2, what="replicas started")
        if self.how == "on_kill":
            op.on_kill()
            return str(job["name"])
        try:
            op.resume_execution(TRIGGER_FAIL_REPR, {"error": TriggerFailureReason.TRIGGER_TIMEOUT}, context)
        except TaskDeferralTimeout:
            return str(job["name"])
        raise AssertionError("resume_execution did not raise TaskDeferralTimeout")


@pytest.mark.parametrize("how", ["on_kill", "deferral_timeout"])
def test_kill_and_airflow_deferral_timeout_cancel_the_job(
    vertex_conn: Emulator, tmp_path: Path, how: str
) -> None:
    pid_dir = tmp_path / "pids"
    with DAG(f"train_kill_{how}", schedule=None, start_date=START) as dag:
        _KillProbe(task_id="train", pid_dir=pid_dir, how=how)
    dr = run_dag(dag)
    assert ti_state(dr, "train") == "success"
    name = dag_xcom(dr, "train")
    assert vertex_conn.store.get(name)["state"] == "JOB_STATE_CANCELLED"
    poll(lambda: not any(alive(pid) for pid in pids(pid_dir)), what="replica processes gone")
