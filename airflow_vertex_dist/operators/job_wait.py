"""The wait of a task without a capacity ladder on its one job (the module doc of
``airflow_vertex_dist.operators.job`` tells the whole try): ``JobWait``, an object the operator owns
(``VertexJobOperator.job_wait``, made on first use), with ``WaitHost`` what it needs of the operator
(``airflow_vertex_dist.operators.wait_host``).

After find-or-create, the try:

- returns at once (``wait_for_completion=False``), defers to ``VertexJobTrigger``
  (``deferrable=True``; ``complete`` resumes it, and a ``reattach`` event hands the task an older job of
  the same spec: ``reattach`` cancels the task's own and defers on that one) or polls with backoff,
  logging state changes, replicas up and trials done;
- ends on every terminal state explicitly: SUCCEEDED succeeds; FAILED, CANCELLED, EXPIRED and PAUSED
  past its grace fail the task with the job's message; PARTIALLY_SUCCEEDED follows
  ``partial_success``. A job PAUSED past its grace is cancelled first (``cancel_on_kill``): it is
  billed for nothing, and once CANCELLED a retry creates a new job instead of re-attaching to it.

A killed task (``on_kill``) and an ``execution_timeout`` cancel the job (``cancel_on_kill``). While
deferred, the trigger does it: its ``on_kill`` (Airflow >= 3.3) when the task is killed (and the
listener, should the task be marked before the triggerer ran its trigger), and its
deadline (the ``execution_timeout``) just before Airflow's own deferral timeout; if Airflow's timeout
still ends the deferral first, the resumed task cancels the job before failing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow_vertex_dist._compat import AirflowException, AirflowTaskTimeout
from airflow_vertex_dist.jobs.dicts import job_state, short_state
from airflow_vertex_dist.jobs.kinds import ever_ran

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_vertex_dist.jobs.types import Job
    from airflow_vertex_dist.operators.attach import JobAttacher
    from airflow_vertex_dist.operators.job_logs import JobLogs
    from airflow_vertex_dist.operators.wait_host import WaitHost
    from airflow_vertex_dist.triggers.jobs import VertexJobTrigger

__all__ = ["JobWait", "job_verdict"]


def job_verdict(
    job: Mapping[str, Any],
    *,
    partial_success: str = "fail",
    paused_for_s: float | None = None,
    paused_grace_s: float = 0.0,
) -> tuple[bool, str] | None:
    """``(succeeded, message)`` once the job ended for the task, ``None`` while it should wait.

    The same rules and messages as the trigger's
    (``job_event``), so a deferred and a
    non-deferred wait end a task alike.
    """
    from airflow_vertex_dist.jobs.states import job_event  # the wait rules: not at parse time

    event = job_event(
        job, partial_success=partial_success, paused_for_s=paused_for_s, paused_grace=paused_grace_s
    )
    if event is None:
        return None
    return event["status"] == "success", str(event["message"])


class JobWait:
    """Waits on the try's job for its host (see the module doc); adopts and cancels jobs through
    ``attacher`` and streams replica logs through ``logs``, the operator's own parts."""

    def __init__(self, host: WaitHost, attacher: JobAttacher, logs: JobLogs) -> None:
        self.host = host
        self.attacher = attacher
        self.logs = logs

    def run(self, context: Context, job: Job) -> Any:
        """From the try's job (found or created) to the try's outcome: its outputs, a deferral or a
        failure."""
        host = self.host
        if host.wait_for_completion and host.cancel_on_kill:
            self.attacher.check_still_running(context, job)
        if not host.wait_for_completion:
            host.log.info(
                "wait_for_completion=False: not waiting for %s (%s)", job["name"], short_state(job_state(job))
            )
            host.keep_final_job(job)
            return host.job_outputs(job)
        if host.deferrable:
            verdict = job_verdict(job, partial_success=host.partial_success)
            if verdict is not None:  # already ended (a re-attached job): nothing to wait for
                return self.finish(job, verdict)
            self.defer(context, job)
        return self.finish(*self.poll(job))

    def make_trigger(
        self, job_name: str, job: Mapping[str, Any] | None = None, converge: dict[str, str] | None = None
    ) -> VertexJobTrigger:
        """The trigger a deferred wait hands to the triggerer (JSON kwargs only); ``converge``: the task's
        labels, when the trigger converges concurrent tries' jobs (``converge_in_wait``)."""
        host = self.host
        timeout = host.execution_timeout
        # Imported here: a DAG file that only builds the task never pays for the trigger machinery.
        from airflow_vertex_dist.logs.masking import secret_spans
        from airflow_vertex_dist.triggers.jobs import VertexJobTrigger

        return VertexJobTrigger(
            job_name=job_name,
            conn_id=host.vertex_dist_conn_id,
            project_id=host.project_id,
            location=host.location,
            poll_interval=host.poll_interval,
            cancel_on_kill=host.cancel_on_kill,
            partial_success=host.partial_success,
            paused_grace=host.paused_grace,
            timeout=timeout.total_seconds() if timeout is not None else None,
            impersonation_chain=host.hook.impersonation_chain_override,
            stream_logs=self.logs.selection(job),
            converge=converge,
            mask_spans=secret_spans(job) if job is not None else (),
        )

    def defer(self, context: Context, job: Mapping[str, Any]) -> None:
        host = self.host
        trigger = self.make_trigger(str(job["name"]), job, self.attacher.converge_labels(context))
        if trigger.stream_logs is not None:  # the cursor its stream reads at its first start
            from airflow_vertex_dist.logs.cursor import seed_cursor

            seed_cursor(context["ti"])
        host.log.info("Deferring: waiting for %s in the triggerer", job["name"])
        host.defer(
            trigger=trigger,
            method_name="execute_complete",
            timeout=host.execution_timeout,
        )

    def poll(self, job: Mapping[str, Any]) -> tuple[Mapping[str, Any], tuple[bool, str]]:
        """Poll until the job ends: start at 1 s and back off (x1.5) to ``poll_interval`` of the
        service's time (an emulator's scenario pace: ``service_clock``)."""
        from airflow_vertex_dist.jobs.progress import ProgressLog
        from airflow_vertex_dist.jobs.states import PausedClock, cancel_outcome

        host = self.host
        name = str(job["name"])
        streamer = self.logs.streamer(job)
        progress = ProgressLog()
        delay = min(1.0, host.hook.service_time().poll_s(host.poll_interval))
        paused = PausedClock()
        try:
            while True:
                news = progress.update(job)
                verdict = job_verdict(
                    job,
                    partial_success=host.partial_success,
                    paused_for_s=paused.paused_for(job),
                    paused_grace_s=host.paused_grace,
                )
                if streamer is not None and (verdict is None or ever_ran(job)):  # else no line to wait for
                    streamer.poll(force=verdict is not None)
                for line in news:  # after the lines drained: the job's end comes after its last lines
                    host.log.info("%s", line)
                if verdict is not None:
                    if not verdict[0] and job_state(job) == "JOB_STATE_PAUSED":  # past its grace
                        cancelled = self.attacher.cancel(name, reason="PAUSED past its grace")
                        outcome = cancel_outcome(host.cancel_on_kill, cancelled, left="PAUSED")
                        verdict = (False, verdict[1] + outcome)
                    return job, verdict
                time.sleep(delay)
                interval = host.hook.service_time().poll_s(host.poll_interval)
                delay = min(delay * 1.5, interval)
                previous = job_state(job)
                job = host.hook.get_job(name)
                if job_state(job) != previous:
                    delay = min(1.0, interval)
        except AirflowTaskTimeout:
            host.log.error("execution_timeout reached while waiting for %s", name)
            self.attacher.cancel(name, reason="execution_timeout")
            raise
        finally:
            if streamer is not None:
                streamer.hook.close()

    def finish(self, job: Mapping[str, Any], verdict: tuple[bool, str]) -> Any:
        """The outputs of a job that succeeded; a failed one's message (and its replica's last lines)."""
        host = self.host
        ok, message = verdict
        host.keep_final_job(job)
        if not ok:
            raise AirflowException(message + self.logs.failure_details(job))
        host.log.info("%s", message)
        return host.job_outputs(job)

    def complete(self, context: Context, event: dict[str, Any] | None = None) -> Any:
        """Resume after the trigger fired: success returns the outputs, an error raises its message."""
        from airflow_vertex_dist.jobs.events import read_event, superseded_job
        from airflow_vertex_dist.jobs.progress import ProgressLog

        host = self.host
        try:
            verdict, job = read_event(event)
        except ValueError as exc:
            raise AirflowException(str(exc)) from None
        if verdict.status == "reattach" and job is not None:
            assert isinstance(event, dict)  # read_event checked it
            return self.reattach(context, superseded_job(event), str(job["name"]), verdict.message)
        host.keep_final_job(job)
        if job is not None:
            self.attacher.job_name = str(job["name"])
        if not verdict.ok or job is None:
            details = self.logs.failure_details(job) if job is not None else ""
            raise AirflowException(
                (verdict.message or f"job {self.attacher.job_name} did not succeed: {event!r}") + details
            )
        for line in ProgressLog().update(job):  # the final state and, for a study, its trials
            host.log.info("%s", line)
        host.log.info("%s", verdict.message or f"job {job['name']} succeeded")
        return host.job_outputs(job)

    def reattach(self, context: Context, superseded: str, keep: str, message: str) -> Any:
        """The trigger found an older job of this task running the same spec (a ``reattach`` event):
        cancel the job it waited on, make the older one this try's, and wait on it."""
        host = self.host
        host.log.warning("%s", message)
        try:
            job, sent = host.hook.cancel_unless_ended(superseded)
            host.log.info(
                "%s %s (%s)",
                "Cancelled" if sent else "Not cancelling",
                superseded,
                short_state(job_state(job)),
            )
        except Exception as exc:  # the trigger of the kept job may be cancelling it too
            host.log.warning("Cancel of %s failed: %s", superseded, exc)
        job = host.hook.get_job(keep)
        host.log.info("Re-attaching to %s (%s)", keep, short_state(job_state(job)))
        self.attacher.adopt_job(context, job)
        if host.cancel_on_kill:
            self.attacher.check_still_running(context, job)
        verdict = job_verdict(job, partial_success=host.partial_success)
        if verdict is not None:  # it ended meanwhile: nothing to wait for
            return self.finish(job, verdict)
        self.defer(context, job)
