"""Names Airflow users expect and logs that say what happened: ``wait_for_completion`` (``wait`` a
deprecated alias), templated connection ids on the sensors, pools in ``stream_logs``, a cancel the
user asked for logged as such, a sensor that found (not submitted) its job."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from airflow_vertex_dist.jobs.progress import ProgressLog
from airflow_vertex_dist.logs.worker_stream import check_stream_logs, selection_of
from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.sensors.jobs import VertexJobSensor, VertexReplicaSensor, VertexTrialSensor
from airflow_vertex_dist.specs import Container, DistributedTrainingJob, Machine, WorkerPool

from .harness import PY

JOB = "projects/p/locations/us-central1/customJobs/1"


def _spec(code: str = "pass") -> DistributedTrainingJob:
    pool = WorkerPool(
        machine=Machine(machine_type="n1-standard-4"),
        container=Container(image_uri="python:3.11", command=(PY, "-c", code)),
    )
    return DistributedTrainingJob(
        display_name="habits", primary=pool, workers=pool.model_copy(update={"replica_count": 3})
    )


def test_wait_for_completion_and_its_deprecated_alias() -> None:
    op = VertexTrainingOperator(task_id="a", spec=_spec(), wait_for_completion=False)
    assert op.wait_for_completion is False
    assert VertexTrainingOperator(task_id="b", spec=_spec()).wait_for_completion is True
    with pytest.warns(DeprecationWarning, match="wait_for_completion"):
        old = VertexTrainingOperator(task_id="c", spec=_spec(), wait=False)
    assert old.wait_for_completion is False


@pytest.mark.parametrize(
    ("cls", "extra"),
    [
        (VertexJobSensor, {}),
        (VertexReplicaSensor, {"replicas": ["workerpool0-0"]}),
        (
            VertexTrialSensor,
            {"job_name": "projects/p/locations/us-central1/hyperparameterTuningJobs/1", "min_succeeded": 1},
        ),
    ],
)
def test_sensors_template_their_connection_id(cls: Any, extra: dict[str, Any]) -> None:
    kwargs = {"job_name": JOB, **extra}
    sensor = cls(task_id="s", vertex_dist_conn_id="{{ var.value.conn }}", **kwargs)
    assert "vertex_dist_conn_id" in sensor.template_fields


def test_stream_logs_takes_pools_and_expands_them_against_the_job() -> None:
    value = check_stream_logs(["workerpool0-0", "workerpool1-*"])
    job = {"name": JOB, "jobSpec": _spec().to_api()["jobSpec"]}
    assert selection_of(value, job) == ["workerpool0-0", "workerpool1-0", "workerpool1-1", "workerpool1-2"]
    with pytest.raises(ValueError, match=r"stream_logs\[0\]: 'workerpool3-\*' matches no replica"):
        selection_of(check_stream_logs(["workerpool3-*"]), job)


def test_a_sensor_found_the_job_an_operator_submitted() -> None:
    job = {"name": JOB, "state": "JOB_STATE_SUCCEEDED"}
    assert ProgressLog("found").update(job) == [f"job {JOB}: found -> SUCCEEDED"]
    assert ProgressLog().update(job) == [f"job {JOB}: submitted -> SUCCEEDED"]
    from airflow_vertex_dist.triggers.sensors import VertexJobStateTrigger

    assert (
        VertexJobStateTrigger(job_name=JOB, conn_id="c", target_states=["JOB_STATE_SUCCEEDED"]).first_seen
        == "found"
    )


@pytest.mark.slow
@pytest.mark.usefixtures("airflow_db")
def test_cancelling_a_job_already_cancelled_is_no_error(vertex_conn: Any) -> None:
    """A user's mark had the listener cancel the job; the task's own on_kill then finds it cancelled:
    logged as the cancel asked for, no ERROR and no traceback."""
    from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook

    hook = VertexJobsHook()
    body = _spec("import time; time.sleep(60)").to_api(location=hook.location)
    job = hook.create_job("customJobs", body)
    name = str(job["name"])
    hook.cancel_job(name)
    hook.wait_until_ended(name, timeout_s=60)
    from google.api_core.exceptions import FailedPrecondition

    with pytest.raises(FailedPrecondition):  # what the task's own cancel meets (it logged a traceback)
        hook.cancel_job(name)
    op = VertexTrainingOperator(task_id="t", spec=_spec())
    op.attacher.job_name = name
    records: list[tuple[int, str, bool]] = []

    class Recorder:  # the operator's log (a structlog logger in a task): what it was asked to write
        def log(self, level: int, msg: str, *args: Any, exc_info: Any = None, **_: Any) -> None:
            records.append((level, msg % args if args else msg, bool(exc_info)))

        def info(self, msg: str, *args: Any, **kw: Any) -> None:
            self.log(logging.INFO, msg, *args, **kw)

        def warning(self, msg: str, *args: Any, **kw: Any) -> None:
            self.log(logging.WARNING, msg, *args, **kw)

        def error(self, msg: str, *args: Any, **kw: Any) -> None:
            self.log(logging.ERROR, msg, *args, **kw)

        def exception(self, msg: str, *args: Any, **kw: Any) -> None:
            self.log(logging.ERROR, msg, *args, exc_info=True, **kw)

    op._cached_logger = Recorder()
    op.on_kill()
    messages = [r[1] for r in records]
    assert not [r for r in records if r[0] >= logging.ERROR or r[2]], messages
    assert any("already CANCELLED (cancelled as asked)" in m for m in messages), messages
