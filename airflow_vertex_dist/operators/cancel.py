"""``VertexCancelJobOperator``: cancel a CustomJob or HyperparameterTuningJob by name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_vertex_dist._compat import AirflowException
from airflow_vertex_dist.jobs.dicts import job_state, parse_job_name
from airflow_vertex_dist.jobs.kinds import TERMINAL_STATES
from airflow_vertex_dist.jobs.outputs import job_output
from airflow_vertex_dist.links import LINK_XCOM_KEY, VertexJobLink
from airflow_vertex_dist.operators.base import VertexBaseOperator
from airflow_vertex_dist.operators.spec_field import has_jinja

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_vertex_dist.jobs.output_types import JobLink, JobOutput

__all__ = ["VertexCancelJobOperator"]


class VertexCancelJobOperator(VertexBaseOperator):
    """Cancel a job (best effort, as the API) and, by default, wait until it has ended.

    :param job_name: ``projects/<p>/locations/<l>/(customJobs|hyperparameterTuningJobs)/<id>``;
        templated, e.g. ``"{{ ti.xcom_pull('train')['name'] }}"``.
    :param wait_for_cancel: wait until the job reached a terminal state (CANCELLED, or whatever it
        ended as first).
    :param cancel_timeout: seconds to wait for that before failing.
    :param poll_interval: seconds between polls.

    The XCom return value is the job as JSON, as the training operator returns it. A job that has
    already ended is left alone.
    """

    template_fields: Sequence[str] = ("job_name", *VertexBaseOperator.template_fields)
    operator_extra_links = (VertexJobLink(),)
    ui_color = "#fce8e6"

    def __init__(
        self,
        *,
        job_name: str,
        wait_for_cancel: bool = True,
        cancel_timeout: float = 300.0,
        poll_interval: float = 2.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not job_name:
            raise ValueError("job_name: required")
        if not has_jinja(job_name):
            parse_job_name(job_name)
        if not cancel_timeout > 0:
            raise ValueError(f"cancel_timeout: must be a positive number of seconds (got {cancel_timeout!r})")
        if not poll_interval > 0:
            raise ValueError(f"poll_interval: must be a positive number of seconds (got {poll_interval!r})")
        self.job_name = job_name
        self.wait_for_cancel = wait_for_cancel
        self.cancel_timeout = float(cancel_timeout)
        self.poll_interval = float(poll_interval)

    def execute(self, context: Context) -> JobOutput:
        name = str(parse_job_name(str(self.job_name).strip()))
        console = self.hook.console_url(name)
        link: JobLink = {"name": name, "console_url": console}
        context["ti"].xcom_push(key=LINK_XCOM_KEY, value=link)
        job, sent = self.hook.cancel_unless_ended(name)
        if not sent:
            self.log.info("Job %s already ended %s: nothing to cancel", name, job_state(job))
            return job_output(job, console)
        self.log.info("Cancelled %s (was %s)", name, job_state(job))
        if not self.wait_for_cancel:
            return job_output(self.hook.get_job(name), console)
        job = self.hook.wait_until_ended(name, timeout_s=self.cancel_timeout, poll_s=self.poll_interval)
        state = job_state(job)
        if state not in TERMINAL_STATES:
            raise AirflowException(
                f"job {name} still {state} {self.cancel_timeout:g}s after the cancel request"
            )
        self.log.info("Job %s is %s", name, state)
        return job_output(job, console)
