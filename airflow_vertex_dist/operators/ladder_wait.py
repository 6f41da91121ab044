"""A ladder's wait on the job of the rung it is on (the module doc of ``airflow_vertex_dist.operators.ladder``
tells the whole walk): whether the job ended for the rung (``rung_ended``: the wait's verdict, or a
capacity failure such as a stockout past the rung's ``pending_limit``), the wait in the worker
(``poll_rung``) or in the triggerer (``defer_rung``, the walk's state kept in XCom, ``pulled_state``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow_vertex_dist._compat import AirflowException
from airflow_vertex_dist.jobs.kinds import ever_ran
from airflow_vertex_dist.operators.job_wait import job_verdict
from airflow_vertex_dist.operators.ladder_parts import (
    LadderState,
    pending_limit_s,
    region_of,
    strategy_of,
)
from airflow_vertex_dist.operators.ladder_resume import end_job

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_vertex_dist.jobs.types import Job
    from airflow_vertex_dist.operators.job_logs import JobLogs
    from airflow_vertex_dist.operators.wait_host import WaitHost
    from airflow_vertex_dist.specs.capacity import RungPlan

__all__ = ["LADDER_XCOM_KEY", "defer_rung", "poll_rung", "pulled_state", "rung_ended"]

#: The XCom key of the walk's state while the task is deferred (``LadderState.to_json``): the rungs left
#: so far, a refused Create included, which no job records, and the rung waited on (``rung``: its number
#: and name, for the job view). XComs are kept across a deferral.
LADDER_XCOM_KEY = "vertex_ladder"


def rung_ended(
    host: WaitHost,
    job: Mapping[str, Any],
    plan: RungPlan,
    paused_for_s: float | None = None,
    now_ns: int | None = None,
) -> bool:
    """Whether ``job`` ended for the rung: the wait's verdict, or a failure the rung is left for (a job
    left QUEUED or PENDING past the rung's ``pending_limit`` at ``now_ns``, the service's time, read
    from the host's hook by default: a stockout)."""
    from airflow_vertex_dist.jobs.failures import classify_job

    verdict = job_verdict(
        job, partial_success=host.partial_success, paused_for_s=paused_for_s, paused_grace_s=host.paused_grace
    )
    if verdict is not None:
        return True
    if now_ns is None:  # the service's time: an emulator's scenario runs ahead of this host's clock
        now_ns = host.hook.service_time().now_ns()
    failure = classify_job(
        job, strategy=strategy_of(plan), pending_limit_s=pending_limit_s(plan), now_ns=now_ns
    )
    return failure is not None


def defer_rung(
    host: WaitHost,
    logs: JobLogs,
    context: Context,
    plan: RungPlan,
    job: Mapping[str, Any],
    state: LadderState,
) -> None:
    """Defer to ``VertexRungTrigger`` on the rung's job; the walk's state goes with the deferral's kwargs
    and into XCom (``LADDER_XCOM_KEY``), and ``execute_ladder_complete`` resumes it."""
    from airflow_vertex_dist.logs.masking import secret_spans
    from airflow_vertex_dist.triggers.rung import VertexRungTrigger

    # with the rung waited on, named: the job view labels it as it labels the rungs left
    walk = {**state.to_json(), "rung": {"number": plan.number, "name": plan.name}}
    context["ti"].xcom_push(key=LADDER_XCOM_KEY, value=walk)
    timeout = host.execution_timeout
    trigger = VertexRungTrigger(
        job_name=str(job["name"]),
        conn_id=host.vertex_dist_conn_id,
        project_id=host.project_id,
        location=region_of(plan, host.hook.location),
        poll_interval=host.poll_interval,
        cancel_on_kill=host.cancel_on_kill,
        partial_success=host.partial_success,
        paused_grace=host.paused_grace,
        timeout=timeout.total_seconds() if timeout is not None else None,
        impersonation_chain=host.hook.impersonation_chain_override,
        stream_logs=logs.selection(job),
        pending_limit=pending_limit_s(plan),
        strategy=strategy_of(plan),
        rung=plan.number,
        job_created=str(job["createTime"]) if job.get("createTime") else None,
        mask_spans=secret_spans(job),
    )
    host.log.info("Deferring: waiting for %s (rung %d) in the triggerer", job["name"], plan.number)
    host.defer(
        trigger=trigger,
        method_name="execute_ladder_complete",
        kwargs={"ladder": state.to_json(), "rung": plan.number},
        timeout=timeout,
    )


def poll_rung(host: WaitHost, logs: JobLogs, plan: RungPlan, job: Job) -> Job:
    """Poll until the job ended for the task, or waited past the rung's ``pending_limit``."""
    from airflow_vertex_dist._compat import AirflowTaskTimeout
    from airflow_vertex_dist.jobs.progress import ProgressLog
    from airflow_vertex_dist.jobs.states import PausedClock

    name = str(job["name"])
    streamer = logs.streamer(job)
    progress = ProgressLog()
    paused = PausedClock()
    pace = host.hook.service_time()  # an emulator's scenario pace: the waits pass at the service's
    delay = min(1.0, pace.poll_s(host.poll_interval))
    try:
        while True:
            news = progress.update(job)
            pace = host.hook.service_time()
            ended = rung_ended(host, job, plan, paused.paused_for(job), pace.now_ns())
            if streamer is not None and (not ended or ever_ran(job)):  # else no line to wait for
                streamer.poll(force=ended)
            for line in news:  # after the lines drained: the job's end comes after its last lines
                host.log.info("%s", line)
            if ended:
                return job
            time.sleep(delay)
            delay = min(delay * 1.5, pace.poll_s(host.poll_interval))
            job = host.hook.get_job(name)
    except AirflowTaskTimeout:
        host.log.error("execution_timeout reached while waiting for %s", name)
        try:
            end_job(host, name, reason="execution_timeout", wait_s=30.0)
        except AirflowException as exc:
            host.log.warning("%s", exc)
        raise
    finally:
        if streamer is not None:
            streamer.hook.close()


def pulled_state(context: Context) -> dict[str, Any] | None:
    """The walk's state as the task pushed it before deferring (``LADDER_XCOM_KEY``)."""
    ti = context["ti"]
    map_index = getattr(ti, "map_index", -1)
    kwargs: dict[str, Any] = {"key": LADDER_XCOM_KEY, "task_ids": ti.task_id}
    if isinstance(map_index, int) and map_index >= 0:
        kwargs["map_indexes"] = map_index
    value = ti.xcom_pull(**kwargs)
    return value if isinstance(value, dict) else None
